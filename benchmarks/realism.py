"""Realism report: a synthesized benchmark next to human conversations of the same domain.

Two steps (plain functions, no Prefect server needed):

    # 1. spine + offline synthesis on an MTRAG passage pool (one run dir per pool; reused)
    python benchmarks/realism.py synthesize tests/data/mtrag/corpus/cloud.jsonl.gz mtr-runs/realism-cloud \
        [--config benchmarks/realism_mtrag.toml] [--conversations 32 --turns 8] [--seed 1]
    # 2. the table: question statistics, history dependence and BM25/dense nDCG@5 by query mode
    python benchmarks/realism.py report --ours mtr-runs/realism-cloud \
        --human tests/data/mtrag --format mtrag --domain cloud [--no-retrieval] [--breakdown]

Statistics: :mod:`evaluation.realism`. The synthesized benchmark is searched over its own
corpus (for an MTRAG pool: the same passages as the human conversations of that domain).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def synthesize(corpus: str, out: str, config: str, overrides: dict) -> dict:
    """Spine (skipped when the run already has clusters) and offline synthesis of ``out``."""
    from agents.config import LLMConfig
    from agents.synth.replace import complete_conversations, replacement_cap
    from agents.synth.run import assemble, corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
    from clustering import stages as cst
    from embedding import stage as est
    from embedding.stage import default_cache_dir
    from corpus import stages as st
    from flows.config import load_config
    from storage.store import RunStore
    cfg = load_config(Path(config), {"runs_root": str(Path(out).parent), **overrides})
    store = RunStore(out).ensure()
    t0 = time.perf_counter()
    if not store.has_table("clusters"):
        st.curate(store, corpus, cfg)
        st.chunk(store, cfg)
        est.embed(store, cfg)
        cst.cluster(store, cfg)
        print(f"spine: {time.perf_counter() - t0:.0f} s", flush=True)
    clusters, cvecs, chunks = load_plan_inputs(store)
    plans = plan_conversations(clusters, cvecs, cfg.synth)
    cap = replacement_cap(len(plans), cfg.synth.max_replaced_share) if cfg.synth.min_turns_kept > 0 else 0
    spares = plan_conversations(clusters, cvecs, cfg.synth, spares=cap) if cap else []
    search = corpus_searcher(store, chunks, cfg.synth.uniqueness_retriever, str(default_cache_dir(store, cfg)))
    t1 = time.perf_counter()

    def run(ps):
        res = synthesize_batch(store, ps, chunks, LLMConfig(backend="offline"), cfg.synth, search)
        return res["states"], res["stopped"]

    done = complete_conversations(plans, spares, run, cfg.synth.min_turns_kept, cap)
    summary = assemble(store, done["plans"], done["states"], cfg.synth, completion=done)
    print(f"synthesis: {time.perf_counter() - t1:.0f} s", flush=True)
    return summary


def report(ours: list[str], human: list[str], fmt: str, domain: str | None, retrieval: bool,
           out_dir: str | None, retrievers: tuple[str, ...] = ("bm25", "dense"), cache_dir: str | None = None,
           breakdown: bool = False) -> str:
    from evaluation.realism import (evaluate_modes, format_breakdown, format_table, question_stats, ratio_breakdown,
                                    retrieval_means)
    from storage.benchmark import load_benchmark
    benches = [(load_benchmark(p, "ours"), f"offline {Path(p).name}") for p in ours]
    benches += [(load_benchmark(p, fmt, domain=domain), f"human {domain or Path(p).name}") for p in human]
    stats = [question_stats(b, name) for b, name in benches]
    tables = [] if retrieval else None
    breakdowns = []
    modes = ("last_turn", "rewrite", "full_history") if retrieval else ("last_turn", "rewrite")
    for b, name in benches if retrieval or breakdown else []:
        work = Path(out_dir or "mtr-eval/realism") / name.replace(" ", "_")
        # one search per benchmark, retriever and mode, read by the table and the breakdown
        ev = evaluate_modes(b, retrievers, modes, index_dir=work / "bm25", cache_dir=cache_dir or work / "emb")
        if retrieval:
            tables.append(retrieval_means(ev))
        if breakdown:
            # which turns make each rewrite / last-turn ratio, with a cluster-bootstrap interval over conversations
            breakdowns += [format_breakdown(name, ratio_breakdown(b, r, ev=ev)) for r in retrievers]
    from evaluation.realism import turn_health
    from storage.store import RunStore
    health = []
    for p in ours:
        h = turn_health(RunStore(p).read_table("turns", columns=["conv_id", "status"]).to_pylist())
        health.append(f"offline {Path(p).name}: {h['failed']} of {h['turns']} turns failed ({h['failed_share']:.1%}); "
                      f"least complete kept conversation {h['min_kept']:.0%} of its turns, {h['below_75']} below 75%")
    return "\n\n".join([format_table(stats, tables), "\n".join(health), *breakdowns])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("synthesize", help="spine + offline synthesis on a corpus")
    s.add_argument("corpus")
    s.add_argument("out")
    s.add_argument("--config", default=str(ROOT / "benchmarks" / "realism_mtrag.toml"))
    s.add_argument("--conversations", type=int)
    s.add_argument("--turns", type=int)
    s.add_argument("--seed", type=int, help="synth.seed: which clusters become conversations, switches and forms "
                                           "(another seed = another sample of the same method)")
    s.add_argument("--embed-cache-dir", help="shared embedding cache (default <out>/../.cache/embeddings)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override, e.g. synth.offline.salience_weight=3 (repeatable; the value is TOML)")
    r = sub.add_parser("report", help="the realism table")
    r.add_argument("--ours", action="append", default=[], help="a synthesis run directory (repeatable)")
    r.add_argument("--human", action="append", default=[], help="a human benchmark path (repeatable)")
    r.add_argument("--format", default="mtrag")
    r.add_argument("--domain")
    r.add_argument("--no-retrieval", action="store_true")
    r.add_argument("--work", help="where indexes and embeddings of the report go (default mtr-eval/realism)")
    r.add_argument("--retriever", action="append", help="bm25 | dense | hybrid (repeatable; default bm25 and dense)")
    r.add_argument("--embed-cache-dir", help="an embedding cache to reuse (e.g. the spine's)")
    r.add_argument("--breakdown", action="store_true", help="per benchmark and retriever: the rewrite / last-turn "
                   "ratio with a 95%% cluster-bootstrap interval over conversations, and nDCG@5 by kind of turn "
                   "(first, switch, asked in full, leaning; wh or yes/no)")
    a = ap.parse_args(argv)
    if a.cmd == "synthesize":
        over = {k: v for k, v in (("synth.conversations", a.conversations), ("synth.turns", a.turns),
                                  ("synth.seed", a.seed),
                                  ("embed.cache_dir", a.embed_cache_dir)) if v is not None}
        import tomllib
        for kv in a.set:
            key, _, value = kv.partition("=")
            over[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
        print(json.dumps(synthesize(a.corpus, a.out, a.config, over), indent=2))
    else:
        print(report(a.ours, a.human, a.format, a.domain, not a.no_retrieval, a.work,
                     tuple(a.retriever or ("bm25", "dense")), a.embed_cache_dir, a.breakdown))


if __name__ == "__main__":
    main()
