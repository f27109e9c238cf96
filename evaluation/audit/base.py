"""What every MTR-Eval judge shares: the judge spec, the two output models, their parsers and
the :class:`JudgeStep` base (an :class:`agents.LLMStep` with ``kind="judge"``: temperature 0,
at most 1024 completion tokens, one item per call).

Output format. The reference pre-filled the assistant turn with "Justification:" to force
rationale-then-score; chat APIs cannot pre-fill, so the judges ask for a JSON object whose
*first* field is the rationale (``{"rationale": ..., "rating": 1-5}`` or ``{"rationale": ...,
"choice": n}``); with ``structured_output: json_schema`` the server enforces that order.
The parsers also accept the reference's plain-text form ("... Rating: 4", "... [3]"), so
servers without structured outputs work; anything else is an ``OutputInvalid`` parse
failure, which the LLM layer retries once with the error shown to the model and then
records as an explicit ``invalid_output`` failure (counted per judge, never dropped).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.config import Sampling
from agents.parsing import OutputInvalid, parse_output
from agents.quoting import DATA_RULE, quote_block, quote_passage
from agents.steps import LLMStep
from evaluation.audit.text import clean_passage, render_history, truncate

JudgeKind = Literal["llm", "heuristic"]


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of the ensemble.

    Attributes:
        name: display name, unique in an audit (also the suffix of its config roles).
        kind: ``llm`` (an OpenAI-compatible endpoint) or ``heuristic`` (an offline stand-in).
        endpoint: config endpoint of an LLM judge.
        model: model id of an LLM judge (what self-preference exclusion compares).
        aliases: other model ids that count as this judge's own (e.g. a served name and the
            Hugging Face id), for self-preference exclusion.
        family: optional model family, informational (recorded in the manifest).
    """

    name: str
    kind: JudgeKind = "llm"
    endpoint: str | None = None
    model: str | None = None
    aliases: tuple[str, ...] = field(default=())
    family: str | None = None

    @property
    def heuristic(self) -> bool:
        return self.kind == "heuristic"

    def is_self(self, generator: str | None) -> bool:
        """True when ``generator`` (the model(s) that wrote an item, see :func:`generator_models`)
        names this judge's own model."""
        if not generator or self.kind != "llm":
            return False
        own = {normalize_model(m) for m in (self.model, *self.aliases) if m}
        return any(normalize_model(g) in own for g in generator_models(generator))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "endpoint": self.endpoint, "model": self.model,
                "aliases": list(self.aliases), "family": self.family}


def generator_models(generator: str | None) -> list[str]:
    """The model ids of a turn's ``generator``: a plain model id, or what our own synthesis
    stores (a JSON object ``{"questioner": model, "answerer": model, ...}``, one model per
    step; any of them counts: a judge does not rate a turn its own model wrote or accepted),
    or a JSON list."""
    if not generator:
        return []
    s = generator.strip()
    if s[:1] in "{[":
        try:
            parsed = json.loads(s)
        except ValueError:
            return [s]
        values = parsed.values() if isinstance(parsed, dict) else parsed if isinstance(parsed, list) else [parsed]
        return [str(v) for v in values if v]
    return [s]


def normalize_model(model_id: str) -> str:
    """Model ids compared for self-preference: lower-case, organisation prefix dropped
    (``Qwen/Qwen2.5-72B-Instruct`` == ``qwen2.5-72b-instruct``)."""
    return model_id.strip().lower().rsplit("/", 1)[-1]


def judge_role(metric: str, judge: str) -> str:
    """Config role of one judge for one metric (``audit_<metric>@<judge>``)."""
    return f"audit_{metric}@{judge}"


# --------------------------------------------------------------------------------------
# output models and parsers
# --------------------------------------------------------------------------------------
class Rating(BaseModel):
    """A 1-5 judgment, rationale first."""

    rationale: str = Field(description="Short justification, written before the rating.")
    rating: int = Field(ge=1, le=5, description="The rating on the 1-5 scale.")


class Choice(BaseModel):
    """A pick among numbered candidates, rationale first."""

    rationale: str = Field(description="Short justification, written before the choice.")
    choice: int = Field(ge=1, le=20, description="Number of the chosen passage.")


_RATING_RE = re.compile(r"(?:rating|score)\W{0,4}([1-5])(?![\d.])", re.I)
_BRACKET_END = re.compile(r"\[\s*(\d{1,2})\s*\]\W*$")
_CHOICE_RE = re.compile(r"(?:choice|chosen passage|answer|passage)\W{0,4}\[?\s*(\d{1,2})\s*\]?(?!\d)", re.I)
_JUST = re.compile(r"^\s*(?:justification|rationale)\s*:\s*", re.I)


def _rationale_before(text: str, end: int) -> str:
    return _JUST.sub("", text[:end]).strip().rstrip("*#-: \n") or text.strip()


def parse_rating(text: str | None) -> Rating:
    """A :class:`Rating` from JSON, or from "... Rating: d" text (the last such match), or from
    a reply that is just a digit 1-5. Raises ``OutputInvalid`` otherwise."""
    try:
        return parse_output(text, Rating)
    except OutputInvalid as exc:
        err = exc
    s = (text or "").strip()
    if re.fullmatch(r"[1-5]", s):
        return Rating(rationale="", rating=int(s))
    matches = list(_RATING_RE.finditer(s))
    if matches:
        m = matches[-1]
        return Rating(rationale=_rationale_before(s, m.start()), rating=int(m.group(1)))
    raise OutputInvalid(f"no rating 1-5 found ({err}); reply with a JSON object "
                        '{"rationale": "...", "rating": <1-5>}', "NoRating")


def parse_choice(text: str | None, n_candidates: int) -> Choice:
    """A :class:`Choice` among ``1..n_candidates`` from JSON, or from text that ends with
    "[n]" (the reference's format) or says "Choice: n". Raises ``OutputInvalid`` otherwise,
    including for a number outside the candidate range."""
    choice: Choice | None = None
    try:
        choice = parse_output(text, Choice)
    except OutputInvalid as exc:
        err: Exception = exc
        s = (text or "").strip()
        m = _BRACKET_END.search(s)
        if m is None:
            ms = list(_CHOICE_RE.finditer(s))
            m = ms[-1] if ms else None
        if m is not None:
            choice = Choice.model_construct(rationale=_rationale_before(s, m.start()), choice=int(m.group(1)))
    if choice is None:
        raise OutputInvalid(f"no passage choice found ({err}); reply with a JSON object "
                            f'{{"rationale": "...", "choice": <1-{n_candidates}>}}', "NoChoice")
    if not 1 <= choice.choice <= n_candidates:
        raise OutputInvalid(f"choice {choice.choice} is not a candidate number (1-{n_candidates})",
                            "ChoiceOutOfRange")
    return Choice(rationale=choice.rationale, choice=choice.choice)


# --------------------------------------------------------------------------------------
# the step base
# --------------------------------------------------------------------------------------
SYSTEM = ("You are a meticulous annotator auditing a conversational retrieval benchmark. "
          "Judge only what you are asked, follow the scale exactly, and answer in the requested format. "
          + DATA_RULE)


class JudgeStep(LLMStep):
    """Base of the four metric judges (one instance per judge x metric x benchmark).

    Every judge sends one user message of the same build: its :meth:`instruction` (default:
    ``task``), its ``scale`` and worked ``example`` (each when set), a ``---`` rule, the
    :meth:`item` to judge and the :meth:`reply_format`. A judge module sets ``metric``,
    ``prompt_version``, the prompt texts in the order they are sent and what differs from the
    defaults; :class:`RatingJudge` is the base of the 1-5 rating judges.

    Args:
        judge: the :class:`JudgeSpec` it runs as (its role is ``audit_<metric>@<judge>``).
        offline: the heuristic implementation (heuristic judges only).
        max_passage_chars, max_history_turns, max_history_chars: prompt budgets.
    """

    metric: str = ""
    task: str = ""          # the instruction (a judge whose instruction varies overrides instruction())
    scale: str = ""         # the rating scale, when the judge rates
    example: str = ""       # one worked example with its expected reply
    kind = "judge"
    sampling = Sampling(max_tokens=1024)
    expected_output_tokens = 200

    def __init__(self, judge: JudgeSpec, *, offline: Any = None, max_passage_chars: int | None = 3000,
                 max_history_turns: int | None = 12, max_history_chars: int | None = 6000) -> None:
        self.judge = judge
        self.max_passage_chars = max_passage_chars
        self.max_history_turns = max_history_turns
        self.max_history_chars = max_history_chars
        super().__init__(name=f"audit_{self.metric}", role=judge_role(self.metric, judge.name), offline=offline)

    # -- shared prompt pieces -------------------------------------------------------------
    def conversation(self, x: dict[str, Any]) -> str:
        hist = render_history(x.get("history") or (), self.max_history_turns, self.max_history_chars)
        question = quote_block("question", " ".join(x["question"].split()), inline=True)
        return f"Conversation so far:\n{hist}\n\nCurrent user question: {question}"

    def passage(self, p: dict[str, Any], pid: int | None = None) -> str:
        """One passage as a quoted ``<passage>`` block (:func:`agents.quoting.quote_passage`)."""
        body = truncate(clean_passage(p["text"]), self.max_passage_chars)
        return quote_passage(body, pid, p.get("title") or None)

    def passages(self, ps: list[dict[str, Any]]) -> str:
        if len(ps) == 1:
            return self.passage(ps[0])
        return "\n\n".join(self.passage(p, i) for i, p in enumerate(ps, start=1))

    def answered_turn(self, x: dict[str, Any]) -> str:
        """The gold passage(s), the conversation and the benchmark's reference response."""
        return (f"{self.passages(x['passages'])}\n\n{self.conversation(x)}\n\n"
                f"Response: {quote_block('answer', ' '.join(x['answer'].split()), inline=True)}")

    # -- the prompt -----------------------------------------------------------------------
    def instruction(self, x: dict[str, Any]) -> str:
        """What the judge is asked (default: the class's ``task``)."""
        return self.task

    def item(self, x: dict[str, Any]) -> str:
        """The item to judge, shown below the ``---`` rule."""
        raise NotImplementedError

    def reply_format(self, x: dict[str, Any]) -> str:
        """The closing sentence that asks for the JSON reply."""
        raise NotImplementedError

    def build_messages(self, x: dict[str, Any]) -> list[dict[str, str]]:
        guide = "\n\n".join(t for t in (self.scale, self.example) if t)
        user = f"{self.instruction(x)}\n\n{guide}\n\n---\n{self.item(x)}\n\n{self.reply_format(x)}"
        return self._messages(user)

    def _messages(self, user: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


RATING_FORMAT = ('Reply with only a JSON object {"rationale": "<your reasoning, a few sentences>", '
                 '"rating": <integer 1-5>}. Write the rationale first, then the rating.')


class RatingJudge(JudgeStep):
    """A judge whose output is a 1-5 :class:`Rating` (alignment, faithfulness, quality); the
    item it rates is, unless it overrides :meth:`item`, the answered turn."""

    output_model = Rating

    def item(self, x: dict[str, Any]) -> str:
        return self.answered_turn(x)

    def reply_format(self, x: dict[str, Any]) -> str:
        return RATING_FORMAT

    def parse(self, text: str | None, inputs: Any) -> Rating:
        return parse_rating(text)
