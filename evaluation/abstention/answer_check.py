"""Step 7 (optional): do false-miss contexts really hold the answer? The answer model answers
the question from three kinds of input, and a judge marks each answer correct or not
against the reference answer:

* ``false_miss``: rule-unanswerable contexts the primary judge labels ``yes``;
* ``unanswerable``: contexts the primary judge labels ``no``;
* ``no_context``: the false-miss questions with no passages at all.

High accuracy on ``false_miss`` next to low accuracy on ``unanswerable`` and ``no_context``
shows that the answers came from the retrieved text, not from the model's memory. At most
``answer_check_n`` inputs per group are drawn (seeded). Offline stand-ins: the answer is the
passage sentence that shares most content tokens with the question (none when it shares
less than half: "I cannot answer"), and an answer is correct when it holds at least half of
the reference answer's content tokens.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from pydantic import BaseModel

from agents.config import Sampling
from agents.parsing import TextOutput
from agents.quoting import DATA_RULE, quote_block
from agents.steps import LLMStep
from common.text import sentences
from evaluation.abstention.contexts import format_conversation, format_passages
from evaluation.abstention.detectors import question_tokens
from evaluation.abstention.text import content_tokens, coverage

GROUPS = ("false_miss", "unanswerable", "no_context")
CANNOT = "I cannot answer this from the given information."
CORRECT_RECALL = 0.5


def answer_messages(x: Mapping[str, Any]) -> list[dict[str, str]]:
    question = quote_block("question", x["question"], inline=True)
    if x.get("passages"):
        user = (f"Conversation so far:\n{format_conversation(x)}\n\nRetrieved passages:\n{format_passages(x)}\n\n"
                f"Answer the last question using only the passages; if they do not contain the answer, say so.\n"
                f"Last question: {question}")
    else:
        user = (f"Conversation so far:\n{format_conversation(x)}\n\nAnswer the last question; if you do not know, "
                f"say so.\nLast question: {question}")
    return [{"role": "system", "content": "You are a concise, accurate assistant. " + DATA_RULE},
            {"role": "user", "content": user}]


def heuristic_answer(x: Mapping[str, Any]) -> TextOutput:
    q = question_tokens(x)
    best, best_cov = None, 0.0
    for p in x.get("passages", []):
        for s in sentences(p["text"]):
            c = coverage(q, set(content_tokens(s)))
            if c > best_cov:
                best, best_cov = s, c
    return TextOutput(text=best if best is not None and best_cov >= 0.5 else CANNOT)


class Correctness(BaseModel):
    correct: bool
    reason: str = ""


def correctness_messages(x: Mapping[str, Any]) -> list[dict[str, str]]:
    user = (f"Question: {quote_block('question', x['question'], inline=True)}\n\n"
            f"Reference answer: {quote_block('answer', x['reference_answer'], inline=True)}\n\n"
            f"Candidate answer: {quote_block('answer', x['answer'], inline=True)}\n\n"
            "Does the candidate answer give the core of the reference "
            "answer (a refusal is not correct)? Reply with only a JSON object: "
            "{\"correct\": true | false, \"reason\": \"one sentence\"}.")
    return [{"role": "system", "content": "You grade answers against a reference answer. " + DATA_RULE},
            {"role": "user", "content": user}]


def heuristic_correct(x: Mapping[str, Any]) -> Correctness:
    ref = set(content_tokens(x.get("reference_answer", "")))
    r = coverage(ref, set(content_tokens(x.get("answer", ""))))
    return Correctness(correct=r >= CORRECT_RECALL, reason=f"offline heuristic: reference token recall {r:.2f}")


class AnswerQuestion(LLMStep):
    name = "abstention_answer"
    kind = "judge"
    prompt_version = "abstention-answer-v3"
    output_model = TextOutput
    sampling = Sampling(max_tokens=300)
    expected_output_tokens = 120

    def __init__(self, role: str, offline: bool) -> None:
        super().__init__(role=role, offline=heuristic_answer if offline else None)

    def build_messages(self, x):
        return answer_messages(x)


class JudgeAnswer(LLMStep):
    name = "abstention_answer_judge"
    kind = "judge"
    prompt_version = "abstention-correct-v3"
    output_model = Correctness
    expected_output_tokens = 40

    def __init__(self, role: str, offline: bool) -> None:
        super().__init__(role=role, offline=heuristic_correct if offline else None)

    def build_messages(self, x):
        return correctness_messages(x)


@dataclass(frozen=True, slots=True)
class GroupAccuracy:
    group: str
    n: int
    n_correct: int
    n_failed: int
    accuracy: float

    def to_dict(self) -> dict:
        return asdict(self)


def group_accuracy(group: str, verdicts: list[bool | None]) -> GroupAccuracy:
    ok = [v for v in verdicts if v is not None]
    return GroupAccuracy(group, len(ok), sum(ok), len(verdicts) - len(ok),
                         sum(ok) / len(ok) if ok else float("nan"))


__all__ = ["AnswerQuestion", "CANNOT", "Correctness", "GROUPS", "GroupAccuracy", "JudgeAnswer", "answer_messages",
           "correctness_messages", "group_accuracy", "heuristic_answer", "heuristic_correct"]
