"""The in-memory shape every benchmark loader produces: a corpus plus one :class:`BenchTurn`
per user turn."""
from __future__ import annotations

from dataclasses import dataclass, field

from common.types import Qrels
from storage.records import Document, hash_doc_id


@dataclass(frozen=True, slots=True)
class BenchTurn:
    """One user turn to retrieve for / judge.

    Attributes:
        sample_id: stable id of the turn.
        conv_id: conversation id.
        turn: 1-based turn number.
        question: the current user message.
        history: earlier messages, oldest first, as (role, text) with role user|assistant;
            the current question is *not* included.
        reference_answer: the benchmark's answer for this turn ("" when none).
        gold: {doc_id: grade} (empty for unanswerable turns).
        answerability: ANSWERABLE | PARTIAL | UNANSWERABLE | CONVERSATIONAL.
        rewrite: a standalone rewrite of the question, when the benchmark has one.
        turns_since_switch: 0 at a hard topic switch, k turns after it, None if no switch yet.
        generator: model id that wrote this turn, when known (for self-preference exclusion).
        candidates: the benchmark's own candidate passage list for this turn, in the
            benchmark's order, when it ships one (ChatRAG ``ctxs``, CORAL neighbours); else ().
    """

    sample_id: str
    conv_id: str
    turn: int
    question: str
    history: tuple[tuple[str, str], ...] = ()
    reference_answer: str = ""
    gold: dict[str, int] = field(default_factory=dict)
    answerability: str = "ANSWERABLE"
    rewrite: str | None = None
    turns_since_switch: int | None = None
    generator: str | None = None
    candidates: tuple[str, ...] = ()

    def messages(self) -> list[dict[str, str]]:
        """History plus the current question as role/text dicts (for query builders)."""
        return [{"role": r, "text": t} for r, t in self.history] + [{"role": "user", "text": self.question}]


@dataclass
class Benchmark:
    """A loaded benchmark: ``corpus`` keyed by doc id and ``turns`` in the source's order."""

    name: str
    format: str
    corpus: dict[str, Document]
    turns: list[BenchTurn]

    @property
    def qrels(self) -> Qrels:
        return {t.sample_id: dict(t.gold) for t in self.turns if t.gold}

    def conversations(self) -> dict[str, list[BenchTurn]]:
        out: dict[str, list[BenchTurn]] = {}
        for t in self.turns:
            out.setdefault(t.conv_id, []).append(t)
        for v in out.values():
            v.sort(key=lambda t: t.turn)
        return out

    def by_id(self) -> dict[str, BenchTurn]:
        return {t.sample_id: t for t in self.turns}


def speaker_role(role: str) -> str:
    """A source's speaker name as ``user`` or ``assistant``."""
    return "assistant" if role in ("agent", "assistant", "system_response") else "user"


def norm_text(text: str) -> str:
    """Whitespace-normalised text (runs of whitespace become one space)."""
    return " ".join(str(text).split())


def text_doc_id(text: str) -> str:
    """Doc id of a passage that has none: the content hash of its whitespace-normalised text."""
    return hash_doc_id(norm_text(text))
