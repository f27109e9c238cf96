"""Step 2 (second half): content labels. A judge reads the conversation, the last question,
the reference answer and the context's passages and says whether the passages support the
core of the reference answer: ``yes``, ``partial`` or ``no``.

Judges are :class:`agents.LLMStep` s (``kind="judge"``, temperature 0) run through the LLM
layer, so every call is cached, counted and stored with its raw prompt and output. Two
offline heuristics stand in for judge LLMs when there is no endpoint; their labels are a
demonstration, not a finding, and every output says so:

* ``heuristic-support`` (answer-sentence support): the reference answer is split into
  sentences; a sentence is *supported* when one passage holds at least 60% of its content
  tokens. ``yes`` when the core (first) sentence and at least half of the sentences are
  supported; ``partial`` when any sentence is supported or the core sentence is at least
  half covered; ``no`` otherwise.
* ``heuristic-overlap`` (a different "family"): content-token bigram recall of the reference
  answer in the best single passage: ``yes`` at >= 0.3; ``partial`` at >= 0.1 or when
  that passage holds >= 60% of the answer's content tokens; ``no`` otherwise.

A reference answer without content tokens (e.g. a conversational reply) is judged ``no``.
The thresholds were set on MTRAG (ClapNQ, Cloud) so that contexts holding a qrels passage
are mostly ``yes`` / ``partial`` and other conversations' contexts almost never ``yes``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from pydantic import BaseModel, Field, field_validator

from agents.quoting import DATA_RULE, quote_block
from agents.steps import LLMStep
from common.text import sentences
from evaluation.abstention.contexts import format_conversation, format_passages
from evaluation.abstention.text import bigrams, content_tokens, coverage

Label = Literal["yes", "partial", "no"]
LABELS: tuple[str, ...] = ("yes", "partial", "no")

SENTENCE_SUPPORT = 0.6
CORE_PARTIAL = 0.5
BIGRAM_YES, BIGRAM_PARTIAL, UNIGRAM_PARTIAL = 0.3, 0.1, 0.6

JUDGE_PROMPT_VERSION = "abstention-judge-v3"

_SYSTEM = ("You are a careful judge for a retrieval-augmented assistant. You read a conversation, its last "
           "question, the reference answer and retrieved passages, and decide whether the passages support "
           "the core of the reference answer. Judge only what the passages say; topical similarity is not "
           "support. " + DATA_RULE)


class ContextJudgment(BaseModel):
    """The judge's verdict on one context.

    Attributes:
        label: ``yes`` (the passages support the core of the reference answer), ``partial``
            or ``no``.
        supporting_passages: 1-based numbers of the passages that support it.
        reason: one sentence.
    """

    label: Label
    supporting_passages: list[int] = Field(default_factory=list)
    reason: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _lower(cls, v):
        return v.strip().lower() if isinstance(v, str) else v


def judge_messages(x: Mapping[str, Any]) -> list[dict[str, str]]:
    user = (f"Conversation so far:\n{format_conversation(x)}\n\n"
            f"Last question: {quote_block('question', x['question'], inline=True)}\n\n"
            f"Reference answer: {quote_block('answer', x['reference_answer'], inline=True)}\n\n"
            f"Retrieved passages:\n{format_passages(x)}\n\n"
            "Do these passages support the core of the reference answer?\n"
            "- yes: they contain the information needed for the core of the answer;\n"
            "- partial: they support only part of it, or a weaker version of it;\n"
            "- no: they do not support it.\n"
            "Reply with only a JSON object: {\"label\": \"yes\" | \"partial\" | \"no\", "
            "\"supporting_passages\": [numbers of the supporting passages], \"reason\": \"one sentence\"}.")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------------------
# offline heuristics
# --------------------------------------------------------------------------------------
def _passage_sets(x: Mapping[str, Any]) -> list[list[str]]:
    return [content_tokens(p["text"]) for p in x.get("passages", [])]


def heuristic_support(x: Mapping[str, Any]) -> ContextJudgment:
    """Answer-sentence support (see module docstring)."""
    sents = [set(content_tokens(s)) for s in sentences(x.get("reference_answer", ""))]
    sents = [s for s in sents if len(s) >= 2] or [s for s in sents if s]
    if not sents:
        return ContextJudgment(label="no", reason="offline heuristic: the reference answer has no content words")
    psets = [set(p) for p in _passage_sets(x)]
    if not psets:
        return ContextJudgment(label="no", reason="offline heuristic: no passages")
    supported: list[bool] = []
    support_docs: set[int] = set()
    core_cov = 0.0
    for i, s in enumerate(sents):
        covs = [coverage(s, p) for p in psets]
        best = max(covs)
        if i == 0:
            core_cov = best
        ok = best >= SENTENCE_SUPPORT
        supported.append(ok)
        if ok:
            support_docs.update(j for j, c in enumerate(covs) if c >= SENTENCE_SUPPORT)
    n_ok = sum(supported)
    if supported[0] and n_ok * 2 >= len(sents):
        label: Label = "yes"
    elif n_ok or core_cov >= CORE_PARTIAL:
        label = "partial"
        if not support_docs:
            support_docs.add(max(range(len(psets)), key=lambda j: coverage(sents[0], psets[j])))
    else:
        label = "no"
        support_docs = set()
    return ContextJudgment(label=label, supporting_passages=sorted(j + 1 for j in support_docs),
                           reason=f"offline heuristic: {n_ok} of {len(sents)} answer sentences supported "
                                  f"(core coverage {core_cov:.2f})")


def heuristic_overlap(x: Mapping[str, Any]) -> ContextJudgment:
    """Content-token bigram recall of the answer in the best passage (see module docstring)."""
    ans = content_tokens(x.get("reference_answer", ""))
    if not ans:
        return ContextJudgment(label="no", reason="offline heuristic: the reference answer has no content words")
    plist = _passage_sets(x)
    if not plist:
        return ContextJudgment(label="no", reason="offline heuristic: no passages")
    a_bi, a_uni = bigrams(ans), set(ans)
    scores = [(coverage(a_bi, bigrams(p)) if a_bi else coverage(a_uni, set(p)), coverage(a_uni, set(p)))
              for p in plist]
    best = max(range(len(plist)), key=lambda j: scores[j])
    bi, uni = scores[best]
    if bi >= BIGRAM_YES:
        label: Label = "yes"
    elif bi >= BIGRAM_PARTIAL or uni >= UNIGRAM_PARTIAL:
        label = "partial"
    else:
        label = "no"
    support = [] if label == "no" else sorted(j + 1 for j, (b, u) in enumerate(scores)
                                              if b >= BIGRAM_PARTIAL or u >= UNIGRAM_PARTIAL or j == best)
    return ContextJudgment(label=label, supporting_passages=support,
                           reason=f"offline heuristic: best passage bigram recall {bi:.2f}, unigram recall {uni:.2f}")


HEURISTICS = {"heuristic-support": heuristic_support, "heuristic-overlap": heuristic_overlap}


# --------------------------------------------------------------------------------------
# the step
# --------------------------------------------------------------------------------------
class JudgeContext(LLMStep):
    """Content judge of one context (input: :func:`contexts.step_input`; output:
    :class:`ContextJudgment`). ``heuristic=`` attaches an offline implementation."""

    name = "abstention_judge"
    kind = "judge"
    prompt_version = JUDGE_PROMPT_VERSION
    output_model = ContextJudgment
    expected_output_tokens = 80

    def __init__(self, judge: str, role: str, heuristic=None) -> None:
        self.judge = judge
        super().__init__(role=role, offline=heuristic)

    def build_messages(self, x):
        return judge_messages(x)


def make_judge(judge: str, role: str) -> JudgeContext:
    """The step of judge ``judge`` running as config role ``role``."""
    return JudgeContext(judge, role, HEURISTICS.get(judge))


@dataclass(frozen=True, slots=True)
class Judgment:
    """One judge's label of one judged input (``label`` None when the call failed).

    Attributes:
        judge: judge name.
        label: ``yes`` / ``partial`` / ``no`` or None.
        supporting: doc ids of the passages the judge named as support.
        reason: the judge's sentence (or the failure message).
        backend: ``openai`` / ``offline`` / ``benchmark`` (label taken from the benchmark).
        model: model id.
        failure: failure kind when the call failed.
    """

    judge: str
    label: str | None
    supporting: tuple[str, ...] = ()
    reason: str = ""
    backend: str = "offline"
    model: str | None = None
    failure: str | None = None


def to_judgment(judge: str, result, doc_ids: Sequence[str]) -> Judgment:
    """A :class:`Judgment` from a :class:`agents.StepResult` (1-based passage numbers mapped
    to doc ids; numbers out of range are dropped)."""
    if not result.ok:
        f = result.failure
        return Judgment(judge, None, (), f.message if f else "no output", result.backend, result.model,
                        f.kind if f else "invalid_output")
    out: ContextJudgment = result.output
    sup = tuple(doc_ids[i - 1] for i in dict.fromkeys(out.supporting_passages) if 1 <= i <= len(doc_ids))
    return Judgment(judge, out.label, sup, out.reason, result.backend, result.model)


__all__ = ["ContextJudgment", "HEURISTICS", "JUDGE_PROMPT_VERSION", "JudgeContext", "Judgment", "LABELS",
           "heuristic_overlap", "heuristic_support", "judge_messages", "make_judge", "to_judgment"]
