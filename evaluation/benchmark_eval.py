"""Evaluate retrievers on a conversational benchmark (ours / MTRAG / BEIR) with explicit query modes.

Verb: :func:`evaluate_benchmark` indexes the benchmark's corpus once per retriever, builds one
query per turn with each requested query mode (``retrieval.queries``: never guessed from the
dataset name), searches, and scores with trec_eval semantics over the turns that have qrels
(unanswerable turns have none). Dense queries are left-truncated to the encoder's limit, so
the current question always survives.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from evaluation.metrics import EvalResult, evaluate
from retrieval import indexed_retriever
from retrieval.queries import QueryBuilder
from storage.benchmark import Benchmark, load_benchmark
from storage.filesystems import is_remote
from storage.formats import write_trec_run
from storage.run_files import push_dir
from storage.store import RunStore


@dataclass
class BenchmarkEval:
    results: dict[str, EvalResult]          # "retriever/query_mode" -> result
    runs: dict[str, dict]                   # same keys -> run
    n_queries: int
    switch_positions: dict[str, int | None]
    notes: dict[str, str]


def build_mode_queries(bench: Benchmark, mode: str, retriever: str, rewriter=None,
                       notes: dict | None = None) -> dict[str, str]:
    """One query per turn with qrels. ``rewriter`` (an LLM config, offline or not) fills the turns
    the benchmark gives no rewrite for in ``rewrite`` mode; which backend did so goes to ``notes``."""
    convs = {t.sample_id: t.messages() for t in bench.turns if t.gold}
    rewrites = {t.sample_id: t.rewrite for t in bench.turns if t.gold and t.rewrite}
    if mode == "rewrite":
        missing = [s for s in convs if s not in rewrites]
        if missing and rewriter is None:
            raise ValueError(f"query mode 'rewrite' needs a rewrite for every turn; {len(missing)} turns have none "
                             f"(e.g. {missing[0]}); pass --rewriter offline|llm or pick another mode")
        if missing:
            from agents.rewrite import rewrite_all   # costly: openai, aiohttp (LLM rewrites only)
            extra, backend = rewrite_all({s: convs[s] for s in missing}, rewriter)
            rewrites.update(extra)
            if notes is not None:
                notes["rewrite"] = (f"{len(missing)} of {len(convs)} rewrites written by the query rewriter "
                                    f"({backend} backend); {len(convs) - len(missing)} given by the benchmark")
        elif notes is not None:
            notes["rewrite"] = f"all {len(convs)} rewrites given by the benchmark"
    if retriever in ("dense", "hybrid", "rrf") and mode in ("full_history", "all_user_turns"):
        qb = QueryBuilder.for_encoder(mode)
    else:
        qb = QueryBuilder(mode=mode)
    return qb.build_all(convs, rewrites)


def evaluate_benchmark(bench: Benchmark, retrievers: Sequence[str], query_modes: Sequence[str], depth: int = 20,
                       index_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                       ks: Sequence[int] = (1, 3, 5, 10, 20),
                       progress: Callable[[str, int, int], None] | None = None, rewriter=None) -> BenchmarkEval:
    docs = [(d, doc.text) for d, doc in bench.corpus.items()]
    qrels = bench.qrels
    if not qrels:
        raise ValueError(f"benchmark {bench.name} has no qrels (no answerable turns) to evaluate against")
    results: dict[str, EvalResult] = {}
    runs: dict[str, dict] = {}
    notes: dict[str, str] = {}
    query_cache: dict[tuple, dict[str, str]] = {}
    total = len(retrievers) * len(query_modes)
    for name in retrievers:
        r = indexed_retriever(name, docs, index_dir=index_dir or None, cache_dir=cache_dir or None)
        for mode in query_modes:
            qkey = (mode, name in ("dense", "hybrid", "rrf"))
            if qkey not in query_cache:
                query_cache[qkey] = build_mode_queries(bench, mode, name, rewriter, notes)
            queries = query_cache[qkey]
            run = r.search(queries, k=depth)
            key = f"{name}/{mode}"
            runs[key] = run
            results[key] = evaluate(qrels, run, metrics=("recall", "ndcg_cut", "mrr", "P"), ks=ks, missing="zero")
            if progress:
                progress("retrieve", 1, total)
    return BenchmarkEval(results=results, runs=runs, n_queries=len(qrels),
                         switch_positions={t.sample_id: t.turns_since_switch for t in bench.turns if t.gold},
                         notes=notes)


def summary_rows(ev: BenchmarkEval, measures: Sequence[str] = ("ndcg_cut_5", "recall_5", "recall_20", "recip_rank_10")):
    rows = []
    for key, res in ev.results.items():
        retr, mode = key.split("/", 1)
        m = res.means()
        rows.append([retr, mode, res.n_queries] + [m.get(x, float("nan")) for x in measures])
    return rows


def evaluate_and_report(benchmark: str | Path, fmt: str, retrievers: Sequence[str], modes: Sequence[str],
                        depth: int = 20, out: str | Path | None = None, domain: str | None = None,
                        progress: Callable[[str, int, int], None] | None = None, rewriter=None):
    """Load a benchmark, run the retrievers, write TREC runs + the report folder.

    Returns ``(bench, BenchmarkEval, ReportFiles, out_dir)``. For ``ours`` the report goes to
    ``<benchmark>/eval`` and dense embeddings are shared with the spine's cache. A run on an object store
    (``s3://...``) is read from the store; its report is written in the run's local directory and then copied
    to ``<run>/eval`` on the store (:func:`storage.run_files.push_dir`).
    """
    from evaluation.report import write_report   # costly: scipy

    store = RunStore(str(benchmark)) if fmt == "ours" and is_remote(benchmark) else None
    if store is None:
        benchmark = Path(benchmark)
    bench = load_benchmark(benchmark, fmt, domain=domain)
    if store is not None:
        out_dir = Path(out) if out else store.local_dir("eval")
        cache_dir = store.shared_local_dir(".cache", "embeddings")
    else:
        out_dir = Path(out) if out else (benchmark / "eval" if fmt == "ours" else Path("mtr-eval") / bench.name)
        cache_dir = (benchmark.parent / ".cache" / "embeddings") if fmt == "ours" else out_dir / "cache" / "embeddings"
    ev = evaluate_benchmark(bench, retrievers, modes, depth=depth, index_dir=out_dir / "cache" / "bm25",
                            cache_dir=cache_dir, progress=progress, rewriter=rewriter)
    for key, run in ev.runs.items():
        write_trec_run(run, out_dir / "runs" / (key.replace("/", "__") + ".trec"), tag=key.replace("/", "__"))
    files = write_report(ev.results, out_dir, title=f"Retrieval evaluation: {bench.name}",
                         switch_positions=ev.switch_positions if fmt == "ours" else None)
    if ev.notes:
        (out_dir / "query_notes.json").write_text(json.dumps(ev.notes, indent=2))
    if store is not None and not out:
        push_dir(store, "eval")
    return bench, ev, files, out_dir
