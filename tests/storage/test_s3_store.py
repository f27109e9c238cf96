"""Runs on an object store (issue #51): RunStore, the run lease, the manifest's conditional
writes, the spine and ``mtr query`` on ``s3://`` against a real S3 server (moto's server mode on
localhost, the ``s3_store`` fixture), compared with the same on local disk."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from storage.store import RunStore, StoreError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def s3(s3_store, monkeypatch, tmp_path):
    """A fresh ``s3://bucket/<unique>`` runs root, with the AWS variables of the test server set
    (and the local directories of s3 runs under tmp_path)."""
    url, env = s3_store
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("MTR_LOCAL_CACHE", str(tmp_path / "local-cache"))
    return f"{url}/t-{uuid.uuid4().hex[:8]}"


def _rows(store: RunStore, name: str) -> list[dict]:
    return store.read_table(name).to_pylist()


def _fill(store: RunStore) -> None:
    t = pa.table({"id": list(range(100)), "text": [f"row {i}" for i in range(100)]})
    store.write_table("plain", t)
    store.write_table("plain", t.slice(0, 60))                  # replaced atomically
    store.append_part("calls", t.slice(0, 10))
    store.append_part("calls", t.slice(10, 15))
    store.append_part("calls", t.slice(25, 5))
    store.merge_parts("calls", store.table_files("calls")[:2])
    with store.table_writer("batched", row_group_rows=7) as w:
        for i in range(0, 100, 13):
            w.write(t.slice(i, 13))
    with pytest.raises(RuntimeError):
        with store.table_writer("aborted") as w:
            w.write(t)
            raise RuntimeError("boom")
    store.write_manifest(config={"a": 1})
    store.write_manifest(config={"b": 2}, status="done")


def test_tables_on_s3_equal_local(s3, tmp_path):
    local, remote = RunStore(str(tmp_path / "run")).ensure(), RunStore(f"{s3}/run").ensure()
    assert remote.remote and not local.remote and remote.run_id == "run" and remote.path == f"{s3}/run"
    _fill(local)
    _fill(remote)
    assert remote.tables() == local.tables() == ["batched", "calls", "plain"]
    assert not remote.has_table("aborted") and remote.has_table("calls") and remote.has_table("plain")
    for name in local.tables():
        assert sorted(_rows(remote, name), key=str) == sorted(_rows(local, name), key=str), name
        assert remote.num_rows(name) == local.num_rows(name)
        assert [b.num_rows for b in remote.iter_batches(name, batch_size=50)] == \
            [b.num_rows for b in local.iter_batches(name, batch_size=50)]
    assert len(remote.table_files("calls")) == 2
    man, lman = remote.read_manifest(), local.read_manifest()
    assert man["config"] == lman["config"] == {"a": 1, "b": 2} and man["status"] == "done"
    assert {k: v["rows"] for k, v in man["tables"].items()} == {k: v["rows"] for k, v in lman["tables"].items()}
    assert man["tables"]["plain"]["sha256"] == lman["tables"]["plain"]["sha256"]   # same bytes
    assert "testing" not in json.dumps(man)                   # no credential in the manifest
    # no temp object left behind; local_dir is on this machine's disk
    leftovers = [i.path for i in remote.fs.get_file_info(__import__("pyarrow.fs").fs.FileSelector(
        remote._root, recursive=True)) if "/." in i.path and not i.path.endswith("/.lock")]
    assert leftovers == []
    d = remote.local_dir("cache", "x")
    assert d.is_dir() and str(d).startswith(os.environ["MTR_LOCAL_CACHE"])
    assert remote.local_dir("cache", "x") == d and RunStore(f"{s3}/other").local_dir() != remote.local_dir()


def test_uri_with_credentials_refused(s3):
    with pytest.raises(StoreError, match="must not hold credentials"):
        RunStore("s3://AKIAX:secret@mtr-test/run")


def test_concurrent_manifest_updates_all_kept(s3):
    store = RunStore(f"{s3}/run").ensure()
    store.write_table("plain", pa.table({"id": [1]}))

    def bump(i: int) -> None:
        RunStore(f"{s3}/run").write_manifest(**{f"k{i}": i})
    threads = [threading.Thread(target=bump, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    man = store.read_manifest()
    assert all(man.get(f"k{i}") == i for i in range(6)), man


def test_two_writers_get_the_lock_error(s3):
    from storage.locks import RunLocked, claim_run, run_lock
    from storage.objectstore import LeaseHeld, acquire_lease
    url = f"{s3}/locked"
    with claim_run(url) as created:
        assert created
        with run_lock(url):                                   # re-entrant inside one process
            pass
        with pytest.raises(LeaseHeld, match="in use by another mtr process"):
            acquire_lease(RunStore(url))                      # a second writer
        code = ("import sys\nfrom storage.locks import run_lock, RunLocked\n"
                "try:\n    with run_lock(sys.argv[1]): print('GOT')\n"
                "except RunLocked as e: print('LOCKED', e)\n")
        out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, cwd=ROOT,
                             timeout=120)
        assert out.stdout.startswith("LOCKED") and f"pid {os.getpid()}" in out.stdout, out.stdout + out.stderr
    # released: the lease object is gone, the empty run was discarded, the next writer gets it
    assert not RunStore(url).exists()
    with run_lock(url):
        pass


def test_stale_lease_taken_over(s3, monkeypatch):
    from storage.objectstore import LEASE_NAME, LeaseHeld, acquire_lease, put_object
    store = RunStore(f"{s3}/stale")
    put_object(store, LEASE_NAME, json.dumps({"token": "dead", "pid": 1, "host": "gone",
                                              "expires_at": "2020-01-01T00:00:00+00:00"}).encode())
    lease = acquire_lease(store, ttl=3)                       # the dead holder's lease ran out
    try:
        with pytest.raises(LeaseHeld):
            acquire_lease(store, ttl=3)
        import time
        time.sleep(2.5)                                      # renewed (every ttl/3): still held
        with pytest.raises(LeaseHeld):
            acquire_lease(store, ttl=3)
        assert not lease.lost
    finally:
        lease.release()


def _spine(store: RunStore, cfg) -> None:
    from clustering import stages as cst
    from corpus import stages as st
    from embedding import stage as est
    st.curate(store, str(EXAMPLES / "wiki"), cfg)
    st.chunk(store, cfg)
    est.embed(store, cfg)
    cst.cluster(store, cfg)


def _comparable(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_spine_and_query_on_s3_equal_local(s3, tmp_path, shared_emb_cache):
    from flows.cli import app
    from flows.config import load_config
    from storage.duck import query
    cfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(tmp_path), "embed.cache_dir": str(shared_emb_cache)})
    local, remote = RunStore(str(tmp_path / "base")).ensure(), RunStore(f"{s3}/base").ensure()
    _spine(local, cfg)
    _spine(remote, cfg)
    assert remote.tables() == local.tables()
    assert {"documents", "chunks", "embeddings", "clusters"} <= set(remote.tables())
    for name in local.tables():
        assert _comparable(remote.read_table(name)) == _comparable(local.read_table(name)), name
    local.write_manifest(status="done")                       # the flows write it; the plain stages do not
    remote.write_manifest(status="done")
    sql = "SELECT cluster_id, count(*) AS n FROM clusters GROUP BY 1 ORDER BY 1"
    assert query(remote, sql).to_pylist() == query(local, sql).to_pylist()
    join = "SELECT c.chunk_id, d.doc_id FROM chunks c JOIN documents d USING (doc_id) ORDER BY 1"
    assert query(remote, join).to_pylist() == query(local, join).to_pylist()
    res = CliRunner().invoke(app, ["query", remote.path, "SELECT count(*) AS n FROM chunks"])
    assert res.exit_code == 0 and str(local.num_rows("chunks")) in res.output, res.output
    res = CliRunner().invoke(app, ["query", "base", "SELECT count(*) AS n FROM documents", "--root", s3])
    assert res.exit_code == 0 and str(local.num_rows("documents")) in res.output, res.output
    with pytest.raises(StoreError):                           # still the sandbox: no files, no writes
        query(remote, f"SELECT * FROM read_parquet('{tmp_path}/base/chunks.parquet')")
    with pytest.raises(StoreError):
        query(remote, "DROP VIEW chunks")


def test_store_down_is_one_line(s3, monkeypatch, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{dead}")
    store = RunStore(f"{s3}/run")
    with pytest.raises(StoreError) as err:
        store.read_table("chunks")
    assert "\n" not in str(err.value) and "object store error" in str(err.value)
    with pytest.raises(StoreError):
        store.write_table("x", pa.table({"a": [1]}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "flows.cli", "query", f"{s3}/run", "SELECT 1"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "object store" in lines[0], out.stderr
    assert "testing" not in out.stderr
