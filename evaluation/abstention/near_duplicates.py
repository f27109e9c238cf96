"""Step 4: the near-duplicate floor, with no judge at all.

A retrieved passage that is nearly verbatim a qrels passage of the same turn (character
n-gram Jaccard >= ``threshold``, n-grams of the lower-cased, whitespace-collapsed text as in
:func:`corpus.dedup.shingles`; exact Jaccard, not a MinHash estimate) is relevant by the
labels' own standard, only under another id. The share of rule-unanswerable contexts that
hold such a copy is a floor on the rule's error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from corpus.dedup import shingles
from evaluation.abstention.contexts import Context


def jaccard(a: set, b: set) -> float:
    """Jaccard of two shingle sets (1.0 for two empty sets, as :func:`corpus.dedup.exact_jaccard`)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class ShingleIndex:
    """Shingle sets of corpus passages, computed once per doc id."""

    def __init__(self, texts: Mapping[str, str], n: int = 5) -> None:
        self.texts = texts
        self.n = n
        self._cache: dict[str, set[bytes]] = {}

    def get(self, doc_id: str) -> set[bytes]:
        s = self._cache.get(doc_id)
        if s is None:
            s = shingles(self.texts.get(doc_id, ""), self.n)
            self._cache[doc_id] = s
        return s

    def similarity(self, a: str, b: str) -> float:
        return jaccard(self.get(a), self.get(b))


@dataclass(frozen=True, slots=True)
class NearDup:
    doc_id: str       # the retrieved passage
    qrels_doc: str    # the qrels passage it copies
    jaccard: float


def near_duplicates(doc_ids: Sequence[str], qrels_docs: Sequence[str], index: ShingleIndex,
                    threshold: float) -> list[NearDup]:
    """Retrieved passages (not themselves qrels passages) that copy a qrels passage; the best
    match per retrieved passage."""
    out = []
    rel = set(qrels_docs)
    for d in doc_ids:
        if d in rel:
            continue
        best = max(((q, index.similarity(d, q)) for q in sorted(rel)), key=lambda x: x[1], default=None)
        if best is not None and best[1] >= threshold:
            out.append(NearDup(d, best[0], best[1]))
    return out


@dataclass(frozen=True)
class NearDupFloor:
    """The floor for one retriever: ``explained / rule_unanswerable`` contexts."""

    retriever: str
    rule_unanswerable: int
    explained: int
    floor: float
    pairs: tuple[tuple[str, NearDup], ...] = field(default=())   # (sample_id, near-dup)


def near_dup_floor(contexts: Sequence[Context], index: ShingleIndex, threshold: float) -> dict[str, NearDupFloor]:
    """Per retriever: rule-unanswerable contexts explained by a near-copy of a qrels passage."""
    acc: dict[str, list] = {}
    for c in contexts:
        a = acc.setdefault(c.retriever, [0, 0, []])
        if not c.rule_unanswerable:
            continue
        a[0] += 1
        dups = near_duplicates(c.doc_ids, sorted(c.gold), index, threshold)
        if dups:
            a[1] += 1
            a[2].extend((c.sample_id, d) for d in dups)
    return {r: NearDupFloor(r, n, e, e / n if n else math.nan, tuple(p)) for r, (n, e, p) in acc.items()}


__all__ = ["NearDup", "NearDupFloor", "ShingleIndex", "jaccard", "near_dup_floor", "near_duplicates"]
