"""Candidate lists of the distinguishability test: gold passage + hard negatives, shuffled
with a recorded seed.

Two sources (``AuditConfig.candidates``):

* ``retrieved`` (default): hard negatives **retrieved** from the benchmark's own corpus with
  :class:`NegativeMiner` (BM25 + dense hybrid by default). Every gold passage of the turn is
  excluded, and so is any passage whose text equals a gold passage's text (a duplicate is a
  missing positive no judge could tell apart). The first ``n_negatives`` remaining hits are
  kept, in rank order. In an audit run the miner's BM25 and dense indexes are persisted under
  ``<run>/cache/index`` (:mod:`retrieval.corpus_index`, keyed by :func:`corpus_docs_key` and
  the retriever settings): built once per run and corpus, reopened memory-mapped by a rerun or
  another process; without a run directory they are built in memory. Both give the same
  negatives.
* ``benchmark``: the benchmark's own list (:attr:`storage.benchmark.BenchTurn.candidates`,
  e.g. ChatRAG ``ctxs``, CORAL neighbours): the gold passage plus the first ``n_negatives``
  non-gold entries in the benchmark's order. A turn whose gold passage is not in its list is
  skipped and counted (the reference scored it 0 without showing it).

In both, exactly one gold passage is shown (the highest graded, then the first listed). Where
it goes (``AuditConfig.positions``):

* ``counterbalanced`` (default): the gold slots of a benchmark's lists are assigned by
  :func:`counterbalanced_slots` so that every slot holds the gold equally often (+-1) within
  the benchmark (per list length). Per-item shuffling is unbiased only in expectation: on one
  MTRAG domain it put the gold first in 41 of 180 lists and sixth in 16 (22.5 expected each),
  so a judge's position bias moved that benchmark's score. The negatives are still shuffled
  with ``random.Random(item_seed)``.
* ``shuffled``: the whole list is shuffled with ``random.Random(item_seed)`` (the earlier
  design; reproducible and independent of which other items are audited).

``item_seed`` is derived from the global seed, the sample id and the source (:func:`item_seed`).
The gold position (1-based), the design and its seed are stored; the optional second pass
shows the same list reversed (slot ``s`` becomes ``k + 1 - s``, so it is counterbalanced too).
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

from retrieval.base import corpus_fingerprint
from retrieval.bm25 import BM25Retriever
from retrieval.corpus_index import persisted_retriever
from retrieval.queries import QueryBuilder
from retrieval.registry import indexed_retriever
from storage.benchmark import BenchTurn
from storage.records import Document


@dataclass(frozen=True)
class CandidateSet:
    """One candidate list as shown to the judges.

    Attributes:
        sample_id: the turn.
        source: ``retrieved`` or ``benchmark``.
        gold_doc: the gold passage shown.
        order: doc ids in the order shown (position ``i`` is ``order[i-1]``).
        gold_position: 1-based position of ``gold_doc`` in ``order``.
        seed: the audit's global seed.
        item_seed: the seed of this list's shuffle (see :func:`item_seed`).
        query: the retrieval query (empty for the benchmark source).
        reversed: True for the reversed-order second pass.
        design: ``counterbalanced`` or ``shuffled`` (how the gold position was chosen).
        design_seed: seed of the counterbalanced slot assignment (None for ``shuffled``).
    """

    sample_id: str
    source: str
    gold_doc: str
    order: tuple[str, ...]
    gold_position: int
    seed: int
    item_seed: int
    query: str = ""
    reversed: bool = False
    design: str = "shuffled"
    design_seed: int | None = None

    @property
    def n_negatives(self) -> int:
        return len(self.order) - 1

    @property
    def variant(self) -> str:
        return f"{self.source}-reversed" if self.reversed else self.source

    def reverse(self) -> "CandidateSet":
        """The same list in reversed order (the position-bias pass)."""
        return replace(self, order=self.order[::-1], gold_position=len(self.order) + 1 - self.gold_position,
                       reversed=not self.reversed)


def item_seed(seed: int, sample_id: str, source: str) -> int:
    """``int(sha256("<seed>:<sample_id>:<source>")[:12], 16)``: the per-item shuffle seed."""
    return int(hashlib.sha256(f"{seed}:{sample_id}:{source}".encode("utf-8")).hexdigest()[:12], 16)


def shuffle_candidates(sample_id: str, gold: str, negatives: Sequence[str], seed: int, source: str,
                       query: str = "") -> CandidateSet:
    """Shuffle ``[gold, *negatives]`` with the item's derived seed and record where gold went."""
    if gold in negatives:
        raise ValueError(f"{sample_id}: the gold passage {gold!r} is among its negatives")
    s = item_seed(seed, sample_id, source)
    order = [gold, *negatives]
    random.Random(s).shuffle(order)
    return CandidateSet(sample_id=sample_id, source=source, gold_doc=gold, order=tuple(order),
                        gold_position=order.index(gold) + 1, seed=seed, item_seed=s, query=query)


def design_seed(seed: int, benchmark: str, source: str) -> int:
    """``int(sha256("<seed>:<benchmark>:<source>:positions")[:12], 16)``: the seed of a
    benchmark's counterbalanced slot assignment."""
    return int(hashlib.sha256(f"{seed}:{benchmark}:{source}:positions".encode("utf-8")).hexdigest()[:12], 16)


def counterbalanced_slots(items: Mapping[str, int], seed: int) -> dict[str, int]:
    """Gold slots (1-based) for lists of given lengths, every slot used equally often (+-1).

    Items are grouped by list length ``k``; within a group they are ordered by
    ``(item_seed(seed, id, "slots"), id)`` (so the assignment does not depend on the
    benchmark's order) and dealt slots in blocks of ``k``: each block is a permutation of
    ``1..k`` drawn from ``random.Random(seed)`` (permuted-block randomisation). With ``n``
    items of length ``k`` every slot gets ``n // k`` or ``n // k + 1`` of them.

    Args:
        items: ``{item id: list length}`` (lengths >= 1).
        seed: the design seed (:func:`design_seed`).

    Returns:
        ``{item id: slot}``.

    Examples:
        >>> from collections import Counter
        >>> slots = counterbalanced_slots({f"t{i}": 4 for i in range(10)}, seed=1)
        >>> sorted(Counter(slots.values()).values())
        [2, 2, 3, 3]
    """
    rng = random.Random(seed)
    out: dict[str, int] = {}
    by_len: dict[int, list[str]] = {}
    for sid, k in items.items():
        if k < 1:
            raise ValueError(f"{sid}: a candidate list needs at least one passage")
        by_len.setdefault(k, []).append(sid)
    for k in sorted(by_len):
        ids = sorted(by_len[k], key=lambda s: (item_seed(seed, s, "slots"), s))
        for start in range(0, len(ids), k):
            block = list(range(1, k + 1))
            rng.shuffle(block)
            for sid, slot in zip(ids[start:start + k], block):
                out[sid] = slot
    return out


def place_candidates(sample_id: str, gold: str, negatives: Sequence[str], seed: int, source: str, slot: int,
                     design_seed: int, query: str = "") -> CandidateSet:
    """Shuffle ``negatives`` with the item's derived seed and put ``gold`` at ``slot`` (1-based)."""
    if gold in negatives:
        raise ValueError(f"{sample_id}: the gold passage {gold!r} is among its negatives")
    if not 1 <= slot <= len(negatives) + 1:
        raise ValueError(f"{sample_id}: gold slot {slot} outside 1..{len(negatives) + 1}")
    s = item_seed(seed, sample_id, source)
    order = list(negatives)
    random.Random(s).shuffle(order)
    order.insert(slot - 1, gold)
    return CandidateSet(sample_id=sample_id, source=source, gold_doc=gold, order=tuple(order), gold_position=slot,
                        seed=seed, item_seed=s, query=query, design="counterbalanced", design_seed=design_seed)


def primary_gold(gold: Mapping[str, int]) -> str:
    """The gold passage shown in the test: highest grade, then the benchmark's order."""
    return max(enumerate(gold.items()), key=lambda x: (x[1][1], -x[0]))[1][0]


def ordered_gold(gold: Mapping[str, int]) -> list[str]:
    """Gold doc ids, highest grade first, then the benchmark's order."""
    return [d for _, (d, _) in sorted(enumerate(gold.items()), key=lambda x: (-x[1][1], x[0]))]


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def benchmark_negatives(turn: BenchTurn, n: int) -> list[str] | None:
    """The first ``n`` non-gold passages of the benchmark's own list; None when the turn has
    no list or its gold passage is not in it."""
    if not turn.candidates or primary_gold(turn.gold) not in turn.candidates:
        return None
    return [d for d in turn.candidates if d not in turn.gold][:n]


# --------------------------------------------------------------------------------------
# queries
# --------------------------------------------------------------------------------------
def build_query(turn: BenchTurn, mode: str = "auto", max_chars: int = 1500) -> tuple[str, str]:
    """``(query, how)`` for retrieving hard negatives of ``turn``.

    ``auto``: the benchmark's standalone rewrite when it has one, else all user turns
    (oldest first, left-truncated to ``max_chars`` so the current question survives).
    ``rewrite`` falls back to all user turns when a turn has no rewrite (``how`` says so).
    """
    if mode in ("auto", "rewrite"):
        if turn.rewrite:
            return turn.rewrite.strip(), "rewrite"
        mode = "all_user_turns"
    qb = QueryBuilder(mode=mode, max_chars=max_chars)
    return qb.build(turn.messages()), mode


# --------------------------------------------------------------------------------------
# hard negatives
# --------------------------------------------------------------------------------------
def corpus_docs(corpus: Mapping[str, Document]) -> list[tuple[str, str]]:
    """``(doc_id, "title\\ntext")`` of every non-empty passage (what retrievers index)."""
    out = []
    for d, doc in corpus.items():
        if doc.text and doc.text.strip():
            out.append((d, f"{doc.title}\n{doc.text}" if doc.title else doc.text))
    return out


def corpus_docs_key(docs: Sequence[tuple[str, str]]) -> str:
    """sha256 over the ids and texts of :func:`corpus_docs` (the corpus part of the persisted
    negatives index's key; :func:`retrieval.base.corpus_fingerprint`)."""
    return corpus_fingerprint([d for d, _ in docs], [t for _, t in docs])


class NegativeMiner:
    """Retrieve hard negatives from a benchmark's own corpus.

    Args:
        corpus: the benchmark corpus.
        method: ``hybrid`` (BM25 + dense, min-max fusion), ``rrf``, ``bm25`` or ``dense``.
        dense_model: encoder of the dense part (None = bundled MiniLM).
        cache_dir: embedding cache folder for the dense part.
        bm25: an already indexed ``BM25Retriever`` over :func:`corpus_docs` (reused; in-memory
            indexes only, i.e. without ``index_dir``).
        index_dir: folder of persisted indexes (e.g. ``<audit run>/cache/index``): the BM25 and
            dense components are built there once per corpus and settings and reopened
            memory-mapped (:func:`retrieval.corpus_index.persisted_retriever`). None = build
            them in memory (library use without a run directory).
        corpus_key: :func:`corpus_docs_key` of ``corpus`` when the caller has it (computed here
            otherwise); ``index_dir`` only.
    """

    def __init__(self, corpus: Mapping[str, Document], method: str = "hybrid", dense_model: str | None = None,
                 cache_dir: str | Path | None = None, bm25=None, index_dir: str | Path | None = None,
                 corpus_key: str | None = None) -> None:
        if method not in ("hybrid", "rrf", "bm25", "dense"):
            raise ValueError(f"unknown negatives retriever {method!r}")
        self.corpus = corpus
        self.method = method
        docs = corpus_docs(corpus)
        self._text = {d: _norm(corpus[d].text) for d, _ in docs}
        self.index_dir = Path(index_dir) if index_dir is not None else None
        self.corpus_key: str | None = None
        if self.index_dir is not None:
            self.corpus_key = corpus_key or corpus_docs_key(docs)
            self.retriever = persisted_retriever(method, self.index_dir, self.corpus_key, [d for d, _ in docs],
                                                 [t for _, t in docs], model=dense_model, cache_dir=cache_dir)
        else:
            self.retriever = indexed_retriever(method, docs, cache_dir=cache_dir, model=dense_model,
                                               bm25=bm25 if method != "dense" else None)

    @property
    def bm25(self):
        """The indexed BM25 component over :func:`corpus_docs` (None for ``dense``)."""
        parts = getattr(self.retriever, "retrievers", [self.retriever])
        return next((r for r in parts if isinstance(r, BM25Retriever)), None)

    def describe(self) -> dict:
        d = self.retriever.describe() if hasattr(self.retriever, "describe") else {"retriever": self.method}
        return {"method": self.method, "retriever": d}

    def mine(self, queries: Mapping[str, str], gold: Mapping[str, Sequence[str]], n: int) -> dict[str, list[str]]:
        """``{sample_id: negatives}`` (rank order, at most ``n``) for ``{sample_id: query}``;
        ``gold[sample_id]`` are excluded, with any passage whose text equals a gold text."""
        if not queries:
            return {}
        depth = n + max((len(g) for g in gold.values()), default=1) + 10
        run = self.retriever.search(dict(queries), depth)
        out: dict[str, list[str]] = {}
        for sid in queries:
            g = set(gold.get(sid, ()))
            gtexts = {self._text.get(d) or _norm(self.corpus[d].text) for d in g if d in self.corpus}
            hits = run.get(sid, {})          # already in trec_eval order (score desc, id desc)
            negs = [d for d in hits if d not in g and self._text.get(d) not in gtexts]
            out[sid] = negs[:n]
        return out
