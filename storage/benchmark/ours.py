"""``ours``: a synthesis run directory (tables ``chunks``, ``turns``, ``qrels``, ``conversations``;
see ``storage/schemas.py``). The corpus is the ``chunks`` table."""
from __future__ import annotations

from pathlib import Path

from common.types import Qrels
from storage.benchmark.model import Benchmark, BenchTurn
from storage.records import Document
from storage.store import RunStore, StoreError


def _candidates(pool: tuple[str, ...], gold: list[str] | None) -> tuple[str, ...]:
    """The passages a turn was written from: its cluster, plus its gold passages from outside it (a
    follow-up may draw on another passage of the previous gold's page, ``synth.focus_page``)."""
    if not pool:
        return ()
    members = set(pool)
    return pool + tuple(g for g in gold or () if g not in members)


def load_ours(run_dir: str | Path, with_corpus: bool = True) -> Benchmark:
    """A synthesized benchmark; turns with status ``ok`` only, each turn's candidate list is
    its cluster (the passage pool it was written from) plus its gold passages from outside the cluster. ``with_corpus=False`` leaves the
    corpus empty (for callers that stream the ``chunks`` table themselves, e.g. exports)."""
    store = RunStore(str(run_dir))
    for name in ("chunks", "turns", "qrels"):
        if not store.has_table(name):
            raise StoreError(f"{run_dir} is not a synthesized benchmark: no {name!r} table "
                             "(run `mtr synthesize` first)")
    corpus = {r["chunk_id"]: Document(r["chunk_id"], r["title"] or "", r["text"], r["doc_id"])
              for r in store.read_table("chunks", columns=["chunk_id", "doc_id", "title", "text"]).to_pylist()
              } if with_corpus else {}
    qrels: Qrels = {}
    for r in store.read_table("qrels").to_pylist():
        qrels.setdefault(r["sample_id"], {})[r["doc_id"]] = int(r["grade"])
    pools: dict[int, tuple[str, ...]] = {}
    if store.has_table("clusters"):   # the benchmark's own candidate list: the turn's cluster (its passage pool)
        members: dict[int, list[tuple[int, str]]] = {}
        for r in store.read_table("clusters", columns=["cluster_id", "position", "chunk_id"]).to_pylist():
            members.setdefault(int(r["cluster_id"]), []).append((int(r["position"]), r["chunk_id"]))
        pools = {c: tuple(cid for _, cid in sorted(m)) for c, m in members.items()}
    # a duplicate turn (an earlier item asked again) is history for the turns after it, not an item
    rows = [r for r in store.read_table("turns").to_pylist() if r["status"] in ("ok", "duplicate")]
    rows.sort(key=lambda r: (r["conv_id"], r["turn"]))
    turns: list[BenchTurn] = []
    hist: dict[str, list[tuple[str, str]]] = {}
    for r in rows:
        h = hist.setdefault(r["conv_id"], [])
        if r["status"] == "duplicate":
            h.extend([("user", r["question"]), ("assistant", r["answer"] or "")])
            continue
        turns.append(BenchTurn(sample_id=r["sample_id"], conv_id=r["conv_id"], turn=int(r["turn"]),
                               question=r["question"], history=tuple(h), reference_answer=r["answer"] or "",
                               gold=qrels.get(r["sample_id"], {}), answerability=r["answerability"],
                               rewrite=r["standalone_question"], turns_since_switch=r["turns_since_switch"],
                               generator=r["model"],
                               candidates=_candidates(pools.get(r["cluster_id"], ()) if r["cluster_id"] is not None
                                                      else (), r.get("gold_doc_ids"))))
        h.extend([("user", r["question"]), ("assistant", r["answer"] or "")])
    return Benchmark(name=store.run_id, format="ours", corpus=corpus, turns=turns)
