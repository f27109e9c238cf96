"""A worker process killed midway, then rerun: no repeated requests, no torn cache entries,
no duplicated llm_calls rows."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.accounting import read_calls
from agents.cache import CallCache
from agents.testing.fake_server import Reply
from storage.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("_worker.py")


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _end_workers():
    """Every worker a test starts is ended, whatever the test's outcome."""
    yield
    while _STARTED:
        w = _STARTED.pop()
        if w.poll() is None:
            w.kill()
        w.wait()
        for pipe in (w.stdout, w.stderr):
            pipe.close()


def start_worker(base_url: str, run_dir: Path, n: int, conc: int) -> subprocess.Popen:
    w = subprocess.Popen([sys.executable, str(WORKER), base_url, str(run_dir), str(n), str(conc)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _STARTED.append(w)
    return w


def wait_until(cond, timeout=300.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError("condition not reached")


def items_of(server, start=0):
    texts = [r.text for r in server.requests[start:]]
    assert all("Question: " in t for t in texts), [t for t in texts if "Question: " not in t]
    return [t.split("Question: ")[1] for t in texts]


def check_cache(run_dir: Path) -> set[str]:
    cache = CallCache(run_dir / "cache" / "llm")
    keys = set()
    for entry in cache.entries():
        json.loads(entry.read_text())                    # parses: not torn
        assert cache.get(entry.stem) is not None         # verifies
        keys.add(entry.stem)
    return keys


def test_kill_during_calls_then_rerun(fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    n, answered = 12, 6
    fake_llm.script(*[Reply.auto()] * answered, *[Reply.hang(30)] * n)
    w = start_worker(fake_llm.base_url, run_dir, n, 3)
    store = RunStore(str(run_dir))
    wait_until(lambda: fake_llm.count >= answered + 3 and read_calls(store).num_rows >= answered)
    os.kill(w.pid, signal.SIGKILL)
    w.wait(60)
    first = items_of(fake_llm)
    done_first = first[:answered]
    assert len(check_cache(run_dir)) == answered
    rows1 = read_calls(store).num_rows
    assert rows1 == answered

    fake_llm.reset()
    w = start_worker(fake_llm.base_url, run_dir, n, 3)
    out, err = w.communicate(timeout=300)
    assert w.returncode == 0, err[-2000:]
    assert "done 12" in out
    second = items_of(fake_llm)
    assert not set(second) & set(done_first)             # zero repeated calls
    assert sorted(second + done_first) == [f"item-{i:03d}" for i in range(n)]
    assert len(check_cache(run_dir)) == n
    table = read_calls(store)
    ids = table.column("call_id").to_pylist()
    assert len(ids) == len(set(ids)) == answered + n      # 6 misses, then 6 hits + 6 misses
    assert sum(not h for h in table.column("cache_hit").to_pylist()) == n
    files = store.table_files("llm_calls")
    raw_rows = sum(len(__import__("pyarrow.parquet", fromlist=["x"]).read_table(f)) for f in files)
    assert raw_rows == len(ids)                           # no duplicated rows on disk either


def test_kill_at_a_random_moment_leaves_a_consistent_run(fake_llm, tmp_path):
    run_dir = tmp_path / "run"
    n = 60
    fake_llm.latency = 0.004
    w = start_worker(fake_llm.base_url, run_dir, n, 4)
    store = RunStore(str(run_dir))
    wait_until(lambda: fake_llm.count >= 5)
    time.sleep(random.uniform(0.0, 0.15))
    os.kill(w.pid, signal.SIGKILL)
    w.wait(60)
    cached = check_cache(run_dir)
    requested_first = items_of(fake_llm)
    rows = read_calls(store).to_pylist()
    assert len({r["call_id"] for r in rows}) == len(rows)
    assert {r["cache_key"] for r in rows} <= cached         # a row only after its cache entry
    fake_llm.reset()
    fake_llm.latency = 0.0
    w = start_worker(fake_llm.base_url, run_dir, n, 4)
    out, err = w.communicate(timeout=300)
    assert w.returncode == 0, err[-2000:]
    second = items_of(fake_llm)
    assert len(second) == n - len(cached)                 # exactly the unanswered ones
    assert len(set(second)) == len(second)
    assert set(second) | set(requested_first) == {f"item-{i:03d}" for i in range(n)}
    assert len(check_cache(run_dir)) == n
    rows = read_calls(store).to_pylist()
    assert len({r["call_id"] for r in rows}) == len(rows)
