"""Concurrency of runs and shared caches (issue: integrity #6).

* two ``mtr build`` on one run id: the second exits 2 with one line naming the first's pid,
  and the run keeps the first's corpus (two real processes, the first holding the real lock
  through the real CLI path);
* two processes writing the same hashes to the shared embedding cache at once leave exactly
  one row per (model, hash) on disk.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
WIKI = ROOT / "examples" / "wiki"

# The first `mtr build`: the real CLI entry point; only the spine flow itself is replaced by a
# wait (until the test creates the go-file), so it holds the run lock as long as the test needs.
HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import flows.pipeline as pipeline

    go = Path(sys.argv[1])

    def waiting_spine(cfg, task_runner=None):
        def run(**kwargs):
            print("spine running", flush=True)
            deadline = time.monotonic() + 600
            while not go.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            return {}
        return run

    pipeline._spine = waiting_spine
    sys.argv = ["mtr", *sys.argv[2:]]
    from flows.cli import main
    main()
""")


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(tmp_path / "prefect-home"))
    return env


def test_second_build_on_a_locked_run_exits_2_naming_the_holder_pid(tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "x1", "text": "a different corpus entirely, one document long."}\n')
    go = tmp_path / "go"
    env = _env(tmp_path)
    first = subprocess.Popen([sys.executable, "-c", HOLDER, str(go), "build", str(WIKI), "--run", "shared"],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = first.stdout.readline()      # blocks until the first holds the lock and runs its spine
        assert line.strip() == "spine running", first.stderr.read()
        second = subprocess.run([sys.executable, "-m", "flows.cli", "build", str(other), "--run", "shared"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        run_dir = (tmp_path / "mtr-runs" / "shared").resolve()
        assert second.returncode == 2, second.stderr
        assert second.stderr.strip() == (
            f"error: run directory {run_dir} is in use by another mtr process (pid {first.pid}); "
            "wait for it to finish or use another run id")
        go.touch()
        out, err = first.communicate(timeout=600)
    finally:
        go.touch()
        if first.poll() is None:
            first.kill()
        first.communicate()
    assert first.returncode == 0, err[-2000:]
    import json
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["input"] == str(WIKI)                     # the first's corpus, untouched by the second


def test_a_lock_held_in_this_process_is_reentrant_and_released(tmp_path):
    from storage.locks import run_lock
    run = tmp_path / "r"
    with run_lock(run) as created:
        assert created
        with run_lock(run) as again:                          # nested (mtr synthesize: spine inside)
            assert again is False
    # released: another process can take it now
    code = "import sys; from storage.locks import run_lock\nwith run_lock(sys.argv[1]): print('ok')"
    res = subprocess.run([sys.executable, "-c", code, str(run)], env=_env(tmp_path), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


CACHE_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from embedding.store import EmbeddingCache

    cache_dir, start, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    hashes = [f"h{i:04d}" for i in range(300)]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(hashes))
    cache = EmbeddingCache(cache_dir)
    while not start.exists():
        time.sleep(0.01)
    parts = []
    for lo in range(0, len(order), 25):           # 12 commits each, overlapping the other writer's
        idx = order[lo:lo + 25]
        hs = [hashes[i] for i in idx]
        vecs = np.stack([np.full(8, int(h[1:]), dtype=np.float32) for h in hs])
        parts.append(cache.add("model/x", hs, vecs))
    cache.compact("model/x", parts)
    print("done", flush=True)
""")


def test_two_concurrent_cache_writers_leave_one_row_per_hash(tmp_path):
    cache_dir = tmp_path / "cache"
    start = tmp_path / "start"
    env = _env(tmp_path)
    writers = [subprocess.Popen([sys.executable, "-c", CACHE_WRITER, str(cache_dir), str(start), str(seed)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for seed in (1, 2)]
    try:
        start.touch()
        results = [w.communicate(timeout=600) for w in writers]
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
            w.communicate()
    for w, (out, err) in zip(writers, results):
        assert w.returncode == 0 and out.strip() == "done", err[-2000:]
    folder = cache_dir / "model__x"
    rows = [h for p in sorted(folder.glob("part-*.parquet"))
            for h in pq.read_table(p, columns=["content_hash"]).column("content_hash").to_pylist()]
    assert len(rows) == 300 and len(set(rows)) == 300          # exactly one row per (model, hash)
    from embedding.store import EmbeddingCache
    found = EmbeddingCache(cache_dir).lookup("model/x", [f"h{i:04d}" for i in range(300)])
    assert len(found) == 300
    assert all(np.all(v == int(h[1:])) for h, v in found.items())


def test_a_write_of_hashes_already_stored_adds_no_rows(tmp_path):
    from embedding.store import EmbeddingCache
    cache = EmbeddingCache(tmp_path)
    vecs = np.ones((3, 4), dtype=np.float32)
    assert cache.add("m", ["a", "b", "a"], vecs) is not None   # duplicate inside one write: kept once
    other = EmbeddingCache(tmp_path)                              # another writer (fresh state)
    assert other.add("m", ["a", "b"], vecs[:2]) is None
    p = other.add("m", ["b", "c"], vecs[:2])
    assert pq.read_table(p).column("content_hash").to_pylist() == ["c"]
    rows = [h for f in (tmp_path / "m").glob("part-*.parquet") for h in pq.read_table(f).column(0).to_pylist()]
    assert sorted(rows) == ["a", "b", "c"]
