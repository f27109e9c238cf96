"""Step 8: where false-miss answers come from.

Every supporting passage (as named by the primary judge) of a false-miss context (rule:
unanswerable; judge: ``yes``) gets one class, the first that applies in this order:

1. ``hard_negative``: a benchmark hard negative of this question (see :mod:`.sources`);
2. ``near_duplicate``: a near-verbatim copy of one of the turn's qrels passages
   (:mod:`.near_duplicates`);
3. ``other_turn_qrels``: a qrels passage of another turn of the same conversation;
4. ``neighbouring_chunk``: a neighbour, on the same source page, of one of the turn's qrels
   passages (:class:`.sources.PageIndex`);
5. ``other``.

The same classes are counted over *all* passages of those contexts (the baseline): a class
that is common among supporting passages only because it is common among all retrieved
passages says where answers hide, not that such passages usually hold answers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from evaluation.abstention.near_duplicates import ShingleIndex
from evaluation.abstention.sources import PageIndex

CLASSES: tuple[str, ...] = ("hard_negative", "near_duplicate", "other_turn_qrels", "neighbouring_chunk", "other")


@dataclass(frozen=True)
class TurnFacts:
    """What the classification needs to know about one turn."""

    qrels: frozenset[str]
    hard_negatives: frozenset[str]
    other_turn_qrels: frozenset[str]


def classify(doc_id: str, facts: TurnFacts, shingle_index: ShingleIndex, pages: PageIndex,
             threshold: float, window: int = 1) -> str:
    """The provenance class of ``doc_id`` for one turn (see module docstring)."""
    if doc_id in facts.hard_negatives:
        return "hard_negative"
    if any(shingle_index.similarity(doc_id, q) >= threshold for q in facts.qrels if q != doc_id):
        return "near_duplicate"
    if doc_id in facts.other_turn_qrels:
        return "other_turn_qrels"
    if any(pages.neighbours(doc_id, q, window) for q in facts.qrels):
        return "neighbouring_chunk"
    return "other"


@dataclass(frozen=True, slots=True)
class PassageClass:
    retriever: str
    sample_id: str
    doc_id: str
    cls: str
    supporting: bool


def classify_contexts(items: Sequence[tuple[str, str, Sequence[str], Sequence[str]]],
                      facts: Mapping[str, TurnFacts], shingle_index: ShingleIndex, pages: PageIndex,
                      threshold: float, window: int = 1) -> list[PassageClass]:
    """Classify every passage of false-miss contexts.

    Args:
        items: ``(retriever, sample_id, doc_ids, supporting_doc_ids)`` per false-miss context.
        facts: :class:`TurnFacts` per sample id.

    Returns:
        One :class:`PassageClass` per passage (``supporting`` marks the judge's support).
    """
    out = []
    for retriever, sid, docs, support in items:
        f = facts[sid]
        sup = set(support)
        for d in docs:
            out.append(PassageClass(retriever, sid, d, classify(d, f, shingle_index, pages, threshold, window),
                                    d in sup))
    return out


def class_shares(rows: Sequence[PassageClass], supporting_only: bool) -> dict[str, dict[str, float]]:
    """``{retriever: {class: share, "n": count}}`` (retriever ``"all"`` pools every retriever)."""
    acc: dict[str, dict[str, int]] = {}
    for r in rows:
        if supporting_only and not r.supporting:
            continue
        for key in (r.retriever, "all"):
            acc.setdefault(key, {c: 0 for c in CLASSES})[r.cls] += 1
    out: dict[str, dict[str, float]] = {}
    for key, counts in acc.items():
        n = sum(counts.values())
        out[key] = {c: counts[c] / n for c in CLASSES} | {"n": float(n)}
    return out


__all__ = ["CLASSES", "PassageClass", "TurnFacts", "class_shares", "classify", "classify_contexts"]
