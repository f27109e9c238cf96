"""Synthesis throughput: conversations per minute against a fake endpoint with fixed latency.

For concurrency 1, 8, 32, 64 (conversations in flight), compares measured conversations/min
with the ideal (every call costs exactly the latency: calls x latency / concurrency), and
reports LLM calls and tokens per accepted turn (the reference spent about 8K tokens per
turn). Also the offline backend's conversations/min on the example corpus.

    python benchmarks/synthesis.py --latency-ms 100 --conversations 16 --turns 4
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build_spine(root: Path) -> tuple[Path, object]:
    from clustering import stages as cst
    from corpus import stages as st
    from flows.config import load_config
    from storage.store import RunStore
    cfg = load_config(ROOT / "examples" / "demo.toml", {"runs_root": str(root), "embed.cache_dir": str(root / "emb")})
    store = RunStore(str(root / "base")).ensure()
    st.curate(store, str(ROOT / "examples" / "wiki"), cfg)
    st.chunk(store, cfg)
    cst.embed(store, cfg)
    cst.cluster(store, cfg)
    return Path(store.path), cfg


def one_run(base: Path, work: Path, llm_cfg, n_conv: int, turns: int, conc: int, search_kind: str, emb: str):
    from agents.accounting import read_calls
    from agents.synth.config import SynthConfig
    from agents.synth.run import assemble, corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
    from storage.store import RunStore
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work, ignore=shutil.ignore_patterns("cache"))
    store = RunStore(str(work))
    clusters, cvecs, corpus = load_plan_inputs(store)
    cfg = SynthConfig(conversations=n_conv, turns=turns, concurrency=conc, uniqueness_k=5)
    plans = plan_conversations(clusters, cvecs, cfg)
    search = corpus_searcher(store, corpus, search_kind, emb)
    t0 = time.perf_counter()
    out = synthesize_batch(store, plans, corpus, llm_cfg, cfg, search)
    dt = time.perf_counter() - t0
    s = assemble(store, plans, out["states"], cfg)
    calls = read_calls(store).to_pylist()
    toks = sum((c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0) for c in calls)
    # latency rounds: sequential calls, with one turn's uniqueness judgements (run in parallel) as one round
    uniq_batches = {c["item_id"].rsplit(":", 1)[0] for c in calls if c["step"] == "uniqueness"}
    rounds = sum(c["step"] != "uniqueness" for c in calls) + len(uniq_batches)
    return dt, len(calls), toks, s["turns_ok"], len(plans), rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--latency-ms", type=float, default=100)
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    args = ap.parse_args()
    from agents.testing.fake_roles import RoleScriptedServer, fake_llm_config
    from agents.config import LLMConfig
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        base, cfg = build_spine(root)
        emb = cfg.embed.cache_dir
        srv = RoleScriptedServer(latency=args.latency_ms / 1000)
        srv.start()
        print(f"fake endpoint latency {args.latency_ms:.0f} ms; {args.conversations} conversations x {args.turns} turns;"
              " uniqueness top-5 (BM25)")
        print(f"{'concurrency':>11}{'seconds':>9}{'conv/min':>10}{'ideal':>9}{'eff':>6}{'calls/turn':>11}{'tokens/turn':>12}")
        try:
            for conc in args.concurrency:
                llm = fake_llm_config(srv, endpoint_concurrency=max(conc * 4, 16), max_concurrency=max(conc * 4, 16))
                dt, calls, toks, ok, n, rounds = one_run(base, root / f"c{conc}", llm, args.conversations, args.turns,
                                                         conc, "bm25", emb)
                # ideal: each latency round costs exactly the latency; `conc` conversations overlap
                ideal_s = rounds * (args.latency_ms / 1000) / min(conc, n)
                print(f"{conc:>11}{dt:>9.1f}{n / dt * 60:>10.1f}{n / ideal_s * 60:>9.1f}{ideal_s / dt:>6.0%}"
                      f"{calls / max(ok, 1):>11.1f}{toks / max(ok, 1):>12.0f}")
        finally:
            srv.stop()
        dt, calls, toks, ok, n, _ = one_run(base, root / "offline", LLMConfig(backend="offline"), args.conversations,
                                         args.turns, 8, "hybrid", emb)
        print(f"offline backend (hybrid uniqueness): {n} conversations in {dt:.1f} s = {n / dt * 60:.1f} conv/min, "
              f"{calls / max(ok, 1):.1f} offline calls per accepted turn")


if __name__ == "__main__":
    main()
