"""Step 2 (first half): the top-k context of every (turn, retriever) and its rule label.

The **rule label** is the common shortcut: a context is *unanswerable* when none of the
turn's qrels passages (grade >= 1) is among its top ``k`` passages (trec_eval order: score
descending, ties by doc id descending).

The inputs of every LLM-backed step (judges, answer model) are built here too, so every
prompt sees the same conversation, question and passages.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from agents.quoting import quote_passages, quote_turns
from common.types import Run
from retrieval.base import trec_ranking
from storage.benchmark import Benchmark, BenchTurn

RELEVANT = 1  # qrels grade from which a passage counts as relevant


def relevant_docs(gold: Mapping[str, int]) -> frozenset[str]:
    return frozenset(d for d, g in gold.items() if g >= RELEVANT)


def rule_unanswerable(doc_ids: Sequence[str], gold: Mapping[str, int] | frozenset[str]) -> bool:
    """The rule label: True when no relevant qrels passage is among ``doc_ids``."""
    rel = gold if isinstance(gold, frozenset) else relevant_docs(gold)
    return not any(d in rel for d in doc_ids)


@dataclass(frozen=True, slots=True)
class Context:
    """The top-k passages one retriever returned for one turn.

    Attributes:
        retriever: ladder rung.
        sample_id / conv_id / turn: the turn.
        doc_ids: top-k passage ids, best first.
        scores: their retrieval scores.
        gold: the turn's relevant qrels passages.
        answerability: the benchmark's label of the turn.
    """

    retriever: str
    sample_id: str
    conv_id: str
    turn: int
    doc_ids: tuple[str, ...]
    scores: tuple[float, ...]
    gold: frozenset[str]
    answerability: str = "ANSWERABLE"

    @property
    def rule_unanswerable(self) -> bool:
        return rule_unanswerable(self.doc_ids, self.gold)

    @property
    def top1(self) -> float | None:
        return self.scores[0] if self.scores else None

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """Identity of the judged input: the same passages for the same turn are judged once."""
        return (self.sample_id, self.doc_ids)

    @property
    def benchmark_unanswerable(self) -> bool:
        """A turn without any qrels passage (the benchmark's own "unanswerable")."""
        return not self.gold


def build_contexts(runs: Mapping[str, Run], turns: Sequence[BenchTurn], k: int) -> list[Context]:
    """One :class:`Context` per (retriever, turn), retrievers in ``runs`` order."""
    out: list[Context] = []
    for name, run in runs.items():
        for t in turns:
            ranked = trec_ranking(run.get(t.sample_id, {}))[:k]
            out.append(Context(retriever=name, sample_id=t.sample_id, conv_id=t.conv_id, turn=t.turn,
                               doc_ids=tuple(d for d, _ in ranked), scores=tuple(float(s) for _, s in ranked),
                               gold=relevant_docs(t.gold), answerability=t.answerability))
    return out


def passages(benchmark: Benchmark, doc_ids: Sequence[str], max_chars: int) -> list[dict]:
    out = []
    for d in doc_ids:
        doc = benchmark.corpus.get(d)
        text = doc.text if doc is not None else ""
        title = doc.title if doc is not None else ""
        if title and text.startswith(title):
            title = ""   # the text already begins with it (MTRAG ClapNQ)
        out.append({"doc_id": d, "title": title, "text": text[:max_chars]})
    return out


def step_input(benchmark: Benchmark, turn: BenchTurn, doc_ids: Sequence[str], max_chars: int) -> dict:
    """The input of the judge / answer-model steps for one turn and one list of passages."""
    return {"sample_id": turn.sample_id, "question": turn.question,
            "history": [list(m) for m in turn.history], "reference_answer": turn.reference_answer,
            "passages": passages(benchmark, doc_ids, max_chars)}


def format_conversation(x: Mapping) -> str:
    """The earlier turns as ``<turn role=..>`` blocks, text escaped (agents.quoting)."""
    return quote_turns(x.get("history", [])) or "(no earlier turns)"


def format_passages(x: Mapping) -> str:
    ps = x.get("passages", [])
    if not ps:
        return "(no passages)"
    return quote_passages(ps)     # <passage id="1" title=..> blocks, text escaped (agents.quoting)


__all__ = ["Context", "RELEVANT", "build_contexts", "format_conversation", "format_passages", "passages",
           "relevant_docs", "rule_unanswerable", "step_input"]
