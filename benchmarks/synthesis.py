"""Synthesis throughput: conversations per minute against a fake endpoint with fixed latency.

For each concurrency (conversations in flight), compares the measured wall time with the
ideal (every sequential LLM round costs exactly the latency, ``concurrency`` conversations
overlap: rounds x latency / min(concurrency, conversations)) and prints the ratio
(``eff``), the CPU seconds this process spent per accepted turn (``resource.getrusage``:
less sensitive to a loaded machine than wall time), LLM calls and tokens per accepted turn, and
the fake endpoint's own CPU seconds per accepted turn (``srv CPU s``: it shares the machine).
The load average is printed first: on a shared machine, read ``eff`` together with it.

The fake endpoint (:class:`agents.testing.fake_roles.RoleScriptedServer`) runs in its own
process, so its request handling does not compete with the synthesis for this process's
GIL (``--in-process-server`` puts it back in a thread of this process, as before).

The example corpus has 28 clusters; for more conversations the spine is tiled (copies of
every chunk, cluster and vector under new ids) until there is one cluster per conversation.

After the timed runs, at the highest concurrency: a ``warm rerun`` (checkpoints deleted, LLM
cache kept: every call a cache hit, so what is left is the graph, the checkpointer and the LLM
layer's hit path) and the ``bare client`` ceiling (the run's own requests sent again by the
bare ``openai`` client with the latency fully overlapped: the synthesis cannot be faster than
the client alone on this machine), and the same requests as ``raw HTTP`` posts without the
SDK. ``--flow`` also runs the synthesis through the Prefect flow; ``--dask-workers 2`` adds the flow on
the Dask runner, batches in parallel worker processes.

``--profile`` reruns the highest concurrency under ``cProfile`` and prints where the event
loop thread's CPU time goes (graph steps / LangGraph, the SQLite checkpointer, the uniqueness
search, the LLM layer, the HTTP client, asyncio, Prefect, the rest), the CPU per thread of
the process, and the wall time spent in the checkpointer, the search and the LLM layer.
Finally, the offline backend's conversations/min on the (untiled) example corpus. The replays
are ``benchmarks/synthesis_replay.py``, the profile ``benchmarks/synthesis_profile.py``.

    python benchmarks/synthesis.py --latency-ms 100 --conversations 128 --turns 4 --concurrency 8 64 --profile --flow
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.synthesis_profile import process_cpu, profile_run, timed  # noqa: E402
from benchmarks.synthesis_replay import RecordRequests, bare_replay, raw_replay  # noqa: E402


def build_spine(root: Path, embed_cache: str | None) -> tuple[Path, object]:
    from clustering import stages as cst
    from corpus import stages as st
    from embedding import stage as est
    from flows.config import load_config
    from storage.store import RunStore
    cfg = load_config(ROOT / "examples" / "demo.toml",
                      {"runs_root": str(root), "embed.cache_dir": embed_cache or str(root / "emb")})
    store = RunStore(str(root / "base")).ensure()
    st.curate(store, str(ROOT / "examples" / "wiki"), cfg)
    st.chunk(store, cfg)
    est.embed(store, cfg)
    cst.cluster(store, cfg)
    return Path(store.path), cfg


def tile_spine(base: Path, dest: Path, min_clusters: int) -> Path:
    """A copy of ``base`` whose chunks, clusters and embeddings are repeated under new ids
    (``<chunk_id>~<i>``, cluster ids shifted) until it has at least ``min_clusters`` clusters."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from storage.store import RunStore
    src = RunStore(str(base))
    clusters = src.read_table("clusters")
    n_cl = int(pc.max(clusters["cluster_id"]).as_py()) + 1
    n_top = int(pc.max(clusters["topic_id"]).as_py()) + 1
    copies = max(1, -(-min_clusters // len(set(clusters["cluster_id"].to_pylist()))))
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base, dest, ignore=shutil.ignore_patterns("cache"))
    if copies == 1:
        return dest
    store = RunStore(str(dest))

    def suffixed(col: pa.ChunkedArray, i: int) -> pa.Array:
        return pc.binary_join_element_wise(col, pa.scalar(f"~{i}"), "") if i else col

    for name in ("chunks", "embeddings"):
        t = src.read_table(name)
        parts = [t.set_column(t.schema.get_field_index("chunk_id"), "chunk_id", suffixed(t["chunk_id"], i))
                 for i in range(copies)]
        store.write_table(name, pa.concat_tables(parts))
    parts = []
    for i in range(copies):
        t = clusters.set_column(0, "cluster_id", pc.add(clusters["cluster_id"], i * n_cl))
        t = t.set_column(t.schema.get_field_index("chunk_id"), "chunk_id", suffixed(t["chunk_id"], i))
        topic = t["topic_id"]
        t = t.set_column(t.schema.get_field_index("topic_id"), "topic_id",
                         pc.if_else(pc.equal(topic, -1), topic, pc.add(topic, i * n_top)))
        parts.append(t)
    store.write_table("clusters", pa.concat_tables(parts))
    return dest


class Endpoint:
    """The role-scripted fake endpoint, in a child process (default) or a thread of this one."""

    def __init__(self, latency_s: float, in_process: bool) -> None:
        self.latency_s, self.in_process = latency_s, in_process
        self.proc: subprocess.Popen | None = None
        self.srv = None

    def __enter__(self) -> "Endpoint":
        from agents.testing.fake_roles import RoleScriptedServer
        if self.in_process:
            self.srv = RoleScriptedServer(latency=self.latency_s).start()
            self.base_url = self.srv.base_url
            return self
        code = ("import sys; from agents.testing.fake_server import serve; "
                "from agents.testing.fake_roles import RoleScriptedServer; "
                f"serve('127.0.0.1', 0, latency={self.latency_s!r}, server_class=RoleScriptedServer)")
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.base_url = line.split(" on ", 1)[1].split(" ", 1)[0]
        return self

    def __exit__(self, *exc) -> None:
        if self.srv is not None:
            self.srv.stop()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def cpu(self) -> float:
        """CPU seconds the endpoint process has used (0 for the in-process server)."""
        if self.proc is None:
            return 0.0
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def llm_config(self, concurrency: int):
        from agents.testing.fake_roles import fake_llm_config

        class _At:            # fake_llm_config only reads the base URL
            base_url = self.base_url
        return fake_llm_config(_At(), endpoint_concurrency=concurrency, max_concurrency=concurrency)


def prepare(run: Path, search_kind: str, emb: str | None, n_conv: int, turns: int, conc: int, llm_cfg):
    """(store, plans, corpus, search, key) of a synthesis of ``run`` (not timed)."""
    from agents.synth.config import SynthConfig
    from agents.synth.run import corpus_searcher, load_plan_inputs, plan_conversations
    from storage.store import RunStore
    store = RunStore(str(run))
    clusters, cvecs, corpus = load_plan_inputs(store)
    cfg = SynthConfig(conversations=n_conv, turns=turns, concurrency=conc, uniqueness_k=5,
                      uniqueness_retriever=search_kind)
    plans = plan_conversations(clusters, cvecs, cfg)
    search = corpus_searcher(store, corpus, search_kind, emb)
    return store, plans, corpus, search, cfg


def one_run(base: Path, work: Path, llm_cfg, n_conv: int, turns: int, conc: int, search_kind: str, emb: str | None,
            timers: dict | None = None, warm: bool = False):
    """One synthesis of ``n_conv`` conversations in a copy of ``base`` at ``work``. ``warm``:
    rerun in ``work`` itself with its LLM cache kept and its checkpoints deleted, so every
    call is a cache hit: what is left is the graph, the checkpointer and the layer's hit path."""
    from agents.accounting import read_calls
    from agents.synth.run import assemble, synthesize_batch
    if warm:
        for f in (work / "cache").glob("synth_checkpoints.sqlite*"):
            f.unlink()
    else:
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(base, work, ignore=shutil.ignore_patterns("cache"))
    store, plans, corpus, search, cfg = prepare(work, search_kind, emb, n_conv, turns, conc, llm_cfg)
    if timers is not None:
        search = timed(search, timers, "uniqueness search")
    cpu0, t0 = process_cpu(), time.perf_counter()
    out = synthesize_batch(store, plans, corpus, llm_cfg, cfg, search)
    dt, cpu = time.perf_counter() - t0, process_cpu() - cpu0
    s = assemble(store, plans, out["states"], cfg)
    calls = read_calls(store).to_pylist()
    toks = sum((c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0) for c in calls)
    # latency rounds: sequential calls, with one turn's uniqueness judgements (run in parallel) as one round
    uniq_batches = {c["item_id"].rsplit(":", 1)[0] for c in calls if c["step"] == "uniqueness"}
    rounds = sum(c["step"] != "uniqueness" for c in calls) + len(uniq_batches)
    return {"dt": dt, "cpu": cpu, "calls": len(calls), "toks": toks, "ok": s["turns_ok"], "n": len(plans),
            "rounds": rounds}


def flow_run(tiled: Path, work: Path, spine_cfg, llm_cfg, n_conv: int, turns: int, conc: int,
             batch_sizes: list[int], latency_s: float, dask_workers: list[int] = ()) -> None:
    """The same synthesis through the Prefect flow (``flows.synthesis.run_synthesis``: plan and
    index task, one task per batch, assemble and exports) for each batch size; then, for each
    ``dask_workers`` count W, on the Dask runner: W batches of n/W conversations in parallel worker
    processes, each with ``conc / W`` in flight (the same ``conc`` in flight in all, so the same
    ideal). The Dask line's time includes the LocalCluster's start (workers import the stack)."""
    import json

    from prefect.testing.utilities import prefect_test_harness

    from agents.accounting import read_calls
    from flows.synthesis import run_synthesis
    from storage.store import RunStore
    cfg_file = work.parent / "fake-llm.json"
    cfg_file.write_text(json.dumps(llm_cfg.model_dump(mode="json")))
    runs = [(bs, conc, 0) for bs in batch_sizes] + [(-(-n_conv // w), max(1, conc // w), w) for w in dask_workers]
    with prefect_test_harness(server_startup_timeout=120):
        for bs, per_batch, workers in runs:
            run = work.with_name(f"{work.name}-b{bs}-w{workers}")
            if run.exists():
                shutil.rmtree(run)
            shutil.copytree(tiled, run, ignore=shutil.ignore_patterns("cache"))
            scale = {"runner": "dask", "dask_workers": workers, "dask_threads_per_worker": 1} if workers else {}
            cfg = spine_cfg.model_copy(update={
                "llm_config": str(cfg_file),
                "scale": spine_cfg.scale.model_copy(update=scale),
                "synth": spine_cfg.synth.model_copy(update={"conversations": n_conv, "turns": turns,
                                                            "concurrency": per_batch, "batch_size": bs,
                                                            "uniqueness_k": 5, "uniqueness_retriever": "bm25"})})
            c0, t0 = process_cpu(), time.perf_counter()
            res = run_synthesis(str(run), cfg)
            dt, cpu = time.perf_counter() - t0, process_cpu() - c0
            calls = read_calls(RunStore(str(run))).to_pylist()
            uniq = {c["item_id"].rsplit(":", 1)[0] for c in calls if c["step"] == "uniqueness"}
            rounds = sum(c["step"] != "uniqueness" for c in calls) + len(uniq)
            ideal_s = rounds * latency_s / min(conc, n_conv)
            ok = res["summary"]["turns_ok"]
            if workers:
                print(f"{'dask w=' + str(workers):>11}{dt:>9.1f}{n_conv / dt * 60:>10.1f}{n_conv / ideal_s * 60:>9.1f}"
                      f"{ideal_s / dt:>6.0%}{'':>11}   (Prefect flow on the Dask runner: {workers} worker processes, "
                      f"{-(-n_conv // bs)} batches of {bs} at once, {per_batch} in flight each; CPU is in the workers; "
                      f"includes the cluster's start)", flush=True)
                continue
            print(f"{'flow b=' + str(bs):>11}{dt:>9.1f}{n_conv / dt * 60:>10.1f}{n_conv / ideal_s * 60:>9.1f}"
                  f"{ideal_s / dt:>6.0%}{cpu / max(ok, 1):>11.4f}   (Prefect flow, batch_size {bs}: plan + index task, "
                  f"{-(-n_conv // bs)} batch task(s), assemble + exports)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-ms", type=float, default=100)
    ap.add_argument("--conversations", type=int, default=128)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--embed-cache", default=None, help="embedding cache folder (default: a temporary one)")
    ap.add_argument("--profile", action="store_true", help="profile the highest concurrency (see module docstring)")
    ap.add_argument("--profile-warm", action="store_true", help="profile the warm rerun instead")
    ap.add_argument("--profile-out", default=None, help="also write the pstats file here")
    ap.add_argument("--in-process-server", action="store_true", help="fake endpoint in a thread of this process")
    ap.add_argument("--no-offline", action="store_true", help="skip the offline backend line")
    ap.add_argument("--flow", action="store_true", help="also through the Prefect flow (batch size 16 and = concurrency)")
    ap.add_argument("--flow-batch-sizes", type=int, nargs="*", default=None,
                    help="with --flow: the batch sizes of the default-runner flow runs (default: 16 and the concurrency)")
    ap.add_argument("--dask-workers", type=int, nargs="*", default=[],
                    help="with --flow: also on the Dask runner with these worker counts (parallel batches)")
    args = ap.parse_args()
    from agents.config import LLMConfig
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        base, cfg = build_spine(root, args.embed_cache)
        emb = cfg.embed.cache_dir
        tiled = tile_spine(base, root / "tiled", args.conversations)
        print(f"fake endpoint latency {args.latency_ms:.0f} ms ({'thread' if args.in_process_server else 'process'});"
              f" {args.conversations} conversations x {args.turns} turns; uniqueness top-5 (BM25)")
        print(f"{'concurrency':>11}{'seconds':>9}{'conv/min':>10}{'ideal':>9}{'eff':>6}{'CPU s/turn':>11}"
              f"{'calls/turn':>11}{'tokens/turn':>12}{'load':>6}{'srv CPU s':>11}")
        with Endpoint(args.latency_ms / 1000, args.in_process_server) as ep:
            for conc in args.concurrency:
                llm = ep.llm_config(max(conc * 8, 16))
                s0 = ep.cpu()
                with RecordRequests() as sent:
                    r = one_run(tiled, root / f"c{conc}", llm, args.conversations, args.turns, conc, "bm25", emb)
                srv = ep.cpu() - s0
                n, dt = r["n"], r["dt"]
                # ideal: each latency round costs exactly the latency; `conc` conversations overlap
                ideal_s = r["rounds"] * (args.latency_ms / 1000) / min(conc, n)
                print(f"{conc:>11}{dt:>9.1f}{n / dt * 60:>10.1f}{n / ideal_s * 60:>9.1f}{ideal_s / dt:>6.0%}"
                      f"{r['cpu'] / max(r['ok'], 1):>11.4f}{r['calls'] / max(r['ok'], 1):>11.1f}"
                      f"{r['toks'] / max(r['ok'], 1):>12.0f}{os.getloadavg()[0]:>6.1f}{srv / max(r['ok'], 1):>11.4f}",
                      flush=True)
            conc = max(args.concurrency)
            # the ceiling: the bare openai client alone sending the same requests, latency fully
            # overlapped (as many in flight as the run could have); the synthesis cannot beat it
            for stack, what in (("sdk", "the SDK's defaults: httpx2, asyncio"),
                                ("same", "the layer's transport and loop: the client-side ceiling")):
                s0 = ep.cpu()
                bdt, bcpu = bare_replay(ep.base_url, sent, conc * 5, stack)
                bsrv = ep.cpu() - s0
                print(f"{'bare ' + stack:>11}{bdt:>9.1f}{'':>10}{'':>9}{ideal_s / bdt:>6.0%}"
                      f"{bcpu / max(r['ok'], 1):>11.4f}   (the same {len(sent)} requests, bare openai client on {what}, "
                      f"{conc * 5} in flight, {len(sent) / bdt:.0f} calls/s; CPU s per accepted turn of the run; "
                      f"endpoint {bsrv / max(r['ok'], 1):.4f})", flush=True)
            s0 = ep.cpu()
            hdt, hcpu = raw_replay(ep.base_url, sent, conc * 5)
            hsrv = ep.cpu() - s0
            print(f"{'raw HTTP':>11}{hdt:>9.1f}{'':>10}{'':>9}{ideal_s / hdt:>6.0%}{hcpu / max(r['ok'], 1):>11.4f}"
                  f"   (the same requests as plain JSON POSTs through httpx2, no SDK: {len(sent) / hdt:.0f} calls/s; "
                  f"endpoint {hsrv / max(r['ok'], 1):.4f})", flush=True)
            w = one_run(tiled, root / f"c{conc}", ep.llm_config(max(conc * 8, 16)), args.conversations, args.turns,
                        conc, "bm25", emb, warm=True)
            print(f"{'warm rerun':>11}{w['dt']:>9.1f}{w['n'] / w['dt'] * 60:>10.1f}{'':>9}{'':>6}"
                  f"{w['cpu'] / max(w['ok'], 1):>11.4f}   (concurrency {conc}, every LLM call a cache hit: graph + "
                  "checkpointer + the layer's hit path)", flush=True)
            if args.flow:
                flow_run(tiled, root / "flow", cfg, ep.llm_config(max(conc * 8, 16)), args.conversations, args.turns,
                         conc, args.flow_batch_sizes or sorted({16, conc}), args.latency_ms / 1000, args.dask_workers)
            if args.profile:
                conc = max(args.concurrency)
                work, llm = root / (f"c{conc}" if args.profile_warm else "profile"), ep.llm_config(max(conc * 8, 16))
                profile_run(lambda timers: one_run(tiled, work, llm, args.conversations, args.turns, conc, "bm25", emb,
                                                   timers=timers, warm=args.profile_warm),
                            args.turns, conc, args.profile_out, args.profile_warm)
        if not args.no_offline:
            n_off = min(args.conversations, 16)
            r = one_run(base, root / "offline", LLMConfig(backend="offline"), n_off, args.turns, 8, "hybrid", emb)
            print(f"offline backend (hybrid uniqueness): {r['n']} conversations in {r['dt']:.1f} s = "
                  f"{r['n'] / r['dt'] * 60:.1f} conv/min, {r['calls'] / max(r['ok'], 1):.1f} offline calls and "
                  f"{r['cpu'] / max(r['ok'], 1):.3f} CPU s per accepted turn")


if __name__ == "__main__":
    main()
