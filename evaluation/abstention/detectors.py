"""Step 6 (scores): unanswerability detectors, one score per context (higher = more likely
unanswerable).

* ``top1``: the retriever's own top-1 score, negated (a low best score suggests nothing
  relevant was found). It never reads the passages. An empty context scores lowest.
* ``answer:<model>``: the answering model's probability of "ANSWERABLE" at its first
  generated token. The model is asked to start its reply with ``ANSWERABLE`` or
  ``UNANSWERABLE``; the endpoint's first-token ``top_logprobs`` give
  ``P(answerable) = A / (A + U)``, where ``A`` (``U``) is the probability mass of the
  alternatives that are a prefix of ``ANSWERABLE`` (``UNANSWERABLE``), compared upper-case
  after stripping white space and Markdown/quote characters (leading tokens with nothing
  left after stripping are skipped). The detector score is ``1 - P(answerable)``; the model
  abstains when ``P(answerable) < abstain_threshold``. When the endpoint returns no logprobs
  the detector is skipped with a message (``LogprobsUnsupported``), never approximated.
* Offline, ``heuristic-answerer`` stands in for the answer model: ``P(answerable)`` is the
  best passage's share of the question's content tokens (the previous user turn is added
  when the question has fewer than two). It never sees the reference answer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from agents.config import Sampling
from agents.parsing import TextOutput
from agents.results import StepResult, TokenLogprob
from agents.quoting import DATA_RULE, quote_block
from agents.steps import LLMStep
from evaluation.abstention.contexts import Context, format_conversation, format_passages
from evaluation.abstention.text import content_tokens, coverage

ANSWERABLE, UNANSWERABLE = "ANSWERABLE", "UNANSWERABLE"
PROBE_PROMPT_VERSION = "abstention-probe-v3"
TOP1 = "top1"
_STRIP = " \t\n\r*#_`'\"“”‘’>:-.()[]"

_SYSTEM = ("You answer the user's last question using only the retrieved passages. Start your reply with "
           "exactly one word on the first line: ANSWERABLE if the passages contain the answer, or UNANSWERABLE "
           "if they do not. Then answer the question (or say that you cannot). " + DATA_RULE)


def probe_messages(x: Mapping[str, Any]) -> list[dict[str, str]]:
    user = (f"Conversation so far:\n{format_conversation(x)}\n\nRetrieved passages:\n{format_passages(x)}\n\n"
            f"Last question: {quote_block('question', x['question'], inline=True)}\n\n"
            "First line: ANSWERABLE or UNANSWERABLE.")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def question_tokens(x: Mapping[str, Any]) -> set[str]:
    q = set(content_tokens(x.get("question", "")))
    if len(q) < 2:
        prev = [t for r, t in x.get("history", []) if r == "user"]
        if prev:
            q |= set(content_tokens(prev[-1]))
    return q


def heuristic_p_answerable(x: Mapping[str, Any]) -> float:
    """Offline stand-in: the best passage's share of the question's content tokens."""
    q = question_tokens(x)
    ps = x.get("passages", [])
    if not q or not ps:
        return 0.0
    return max(coverage(q, set(content_tokens(p["text"]))) for p in ps)


def heuristic_probe(x: Mapping[str, Any]) -> TextOutput:
    p = heuristic_p_answerable(x)
    return TextOutput(text=f"{ANSWERABLE if p >= 0.5 else UNANSWERABLE}\n(offline heuristic, p={p:.4f})")


class AnswerabilityProbe(LLMStep):
    """The answer model's first line (ANSWERABLE / UNANSWERABLE) with first-token logprobs."""

    name = "abstention_answerer"
    kind = "judge"
    prompt_version = PROBE_PROMPT_VERSION
    output_model = TextOutput
    logprobs = True
    top_logprobs = 10
    sampling = Sampling(max_tokens=8)
    expected_output_tokens = 4

    def __init__(self, answerer: str, role: str, offline: bool) -> None:
        self.answerer = answerer
        super().__init__(role=role, offline=heuristic_probe if offline else None)

    def build_messages(self, x):
        return probe_messages(x)


def _norm(token: str) -> str:
    return token.strip(_STRIP).upper()


def _label_of(token: str) -> str | None:
    t = _norm(token)
    if not t:
        return None
    if ANSWERABLE.startswith(t):
        return "A"
    if UNANSWERABLE.startswith(t):
        return "U"
    return None


def p_answerable_from_logprobs(logprobs: Sequence[TokenLogprob] | None) -> float | None:
    """``P(answerable)`` at the first label-bearing token (see module docstring); None when
    that token's alternatives name neither label."""
    if not logprobs:
        return None
    for tok in logprobs[:4]:
        if not _norm(tok.token):
            continue
        alts = dict(tok.top) if tok.top else {}
        alts.setdefault(tok.token, tok.logprob)
        a = u = 0.0
        for t, lp in alts.items():
            lab = _label_of(t)
            if lab == "A":
                a += math.exp(lp)
            elif lab == "U":
                u += math.exp(lp)
        return a / (a + u) if a + u > 0 else None
    return None


def p_answerable(result: StepResult, inputs: Mapping[str, Any]) -> float | None:
    """``P(answerable)`` of one probe result: logprobs (LLM) or the offline heuristic."""
    if result.backend == "offline":
        return heuristic_p_answerable(inputs) if result.ok else None
    return p_answerable_from_logprobs(result.logprobs)


def top1_scores(contexts: Sequence[Context]) -> list[float]:
    """``-top1`` per context; empty contexts get the highest score (lowest top-1 minus 1)."""
    tops = [c.top1 for c in contexts]
    finite = [t for t in tops if t is not None and math.isfinite(t)]
    floor = (min(finite) - 1.0) if finite else 0.0
    return [-(t if t is not None and math.isfinite(t) else floor) for t in tops]


@dataclass(frozen=True, slots=True)
class DetectorStatus:
    """Whether a detector produced scores, and why not."""

    name: str
    available: bool
    message: str = ""
    n_missing: int = 0


__all__ = ["ANSWERABLE", "AnswerabilityProbe", "DetectorStatus", "PROBE_PROMPT_VERSION", "TOP1", "UNANSWERABLE",
           "heuristic_p_answerable", "heuristic_probe", "p_answerable", "p_answerable_from_logprobs",
           "probe_messages", "question_tokens", "top1_scores"]
