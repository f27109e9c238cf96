"""Where a synthesis benchmark run's time goes (``benchmarks/synthesis.py --profile``): CPU
seconds of this process and of each of its threads, wall-time wrappers summed per label, and
a run under ``cProfile`` whose event loop thread CPU is broken down by package (graph steps /
LangGraph, the SQLite checkpointer, the uniqueness search, the LLM layer, the HTTP client,
asyncio, Prefect, the rest).
"""
from __future__ import annotations

import os
import resource
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable


def process_cpu() -> float:
    """CPU seconds (user + system) this process has used."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of each live thread of this process (``/proc/self/task``), by thread name."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = defaultdict(float)
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        name = names.get(int(tid), "other (native/ended)")
        if name.startswith("Thread-") or name.startswith("asyncio_"):
            name = "worker threads (aiosqlite, to_thread)"
        out[name] += (int(fields[11]) + int(fields[12])) / tick
    return dict(out)


def timed(fn, timers: dict, name: str):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            timers[name] = timers.get(name, 0.0) + time.perf_counter() - t
    return wrapper


def atimed(fn, timers: dict, name: str):
    async def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return await fn(*a, **k)
        finally:
            timers[name] = timers.get(name, 0.0) + time.perf_counter() - t
    return wrapper


# where the event loop thread's CPU goes: first matching fragment of the function's file path
CATEGORIES = [
    ("SQLite checkpointer (langgraph.checkpoint, aiosqlite, sqlite3)",
     ("langgraph/checkpoint", "aiosqlite", "sqlite3", "ormsgpack", "msgpack")),
    ("graph steps (LangGraph, langchain_core)", ("langgraph", "langchain_core", "langsmith")),
    ("uniqueness search (retrieval, bm25s, numpy)", ("/retrieval/", "bm25s", "numpy")),
    ("our agents (agents/synth)", ("/agents/synth/",)),
    ("our LLM layer (agents/session, client, cache, accounting, parsing)", ("/agents/",)),
    ("HTTP client (openai, httpx, aiohttp, ssl, json)", ("openai", "httpx", "httpcore", "h11", "anyio", "aiohttp",
                                                         "multidict", "yarl", "ssl", "json")),
    ("pydantic", ("pydantic",)),
    ("Parquet / Arrow writes", ("pyarrow", "/storage/")),
    ("Prefect", ("prefect",)),
    ("asyncio / uvloop event loop, selectors, sockets", ("asyncio", "uvloop", "selectors", "socket")),
]


def _category(filename: str) -> str | None:
    f = filename.replace("\\", "/")
    for name, frags in CATEGORIES:
        if any(fr in f for fr in frags):
            return name
    return None if f == "~" else "other"


def profile_breakdown(stats) -> list[tuple[str, float]]:
    """Own CPU time per category; a C builtin's time goes to the category of its main caller."""
    tot: dict[str, float] = defaultdict(float)
    for (filename, _line, _func), (_cc, _nc, tt, _ct, callers) in stats.stats.items():
        cat = _category(filename)
        if cat is None:
            main = max(callers.items(), key=lambda kv: kv[1][3], default=None)
            cat = (_category(main[0][0]) if main else None) or "other"
        tot[cat] += tt
    return sorted(tot.items(), key=lambda kv: -kv[1])


def profile_run(run_once: Callable[[dict], dict], turns: int, conc: int, out: str | None = None,
                warm: bool = False) -> None:
    """One run (``run_once(timers)``: the result of ``synthesis.one_run`` with those timers) under
    cProfile with wall-time timers on the checkpointer, the search and the LLM layer."""
    import cProfile
    import pstats

    from agents.session import LLMSession
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    timers: dict[str, float] = {}
    patched = []
    for cls, meths, label in ((AsyncSqliteSaver, ("aput", "aput_writes", "aget_tuple"), "checkpointer (wall, summed)"),
                              (LLMSession, ("map", "run"), "LLM layer incl. 100 ms latency (wall, summed)")):
        for m in meths:
            orig = getattr(cls, m)
            patched.append((cls, m, orig))
            setattr(cls, m, atimed(orig, timers, f"{label}: {m}"))
    th0 = _thread_cpu()
    prof = cProfile.Profile(time.thread_time)   # CPU of the event loop thread, not waits
    try:
        prof.enable()
        r = run_once(timers)
        prof.disable()
    finally:
        for cls, m, orig in patched:
            setattr(cls, m, orig)
    th1 = _thread_cpu()
    stats = pstats.Stats(prof)
    if out:
        stats.dump_stats(out)
    total = sum(tt for (_c, _n, tt, _ct, _cl) in stats.stats.values())
    print(f"\nprofile{' of the warm rerun' if warm else ''} at concurrency {conc} ({r['n']} conversations x {turns} turns, under cProfile: "
          f"{r['dt']:.1f} s wall, {r['cpu']:.1f} s CPU of this process, {r['ok']} accepted turns)")
    print(f"  event loop thread CPU by package (cProfile tottime, {total:.1f} s in all):")
    for name, tt in profile_breakdown(stats):
        print(f"    {tt:7.2f} s {tt / max(total, 1e-9):5.0%}  {name}")
    print("  CPU by thread (/proc, seconds during the run):")
    for name in sorted(th1, key=lambda n: -(th1[n] - th0.get(n, 0.0))):
        d = th1[name] - th0.get(name, 0.0)
        if d >= 0.05:
            print(f"    {d:7.2f} s  {name}")
    print("  wall time summed over concurrent calls:")
    for name, v in sorted(timers.items()):
        print(f"    {v:8.2f} s  {name}")
    print("  top functions by own time:")
    top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:12]
    for (filename, line, func), (_cc, nc, tt, ct, _cl) in top:
        short = "/".join(filename.replace("\\", "/").split("/")[-2:])
        print(f"    {tt:6.2f} s {nc:>8} calls  {short}:{line} {func}")
