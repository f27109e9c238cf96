"""The pipeline commands on a run given as ``s3://`` (issue #51, items 1-3), against a real S3 server on
localhost (moto's server mode): the run equals the same run on local disk; a worker killed mid-synthesis is
resumed by a new worker (another local cache) with no LLM call repeated; two writers get the lock error; the
store going down is one line and a rerun completes; Dask workers without a shared disk give the default
runner's tables."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from typer.testing import CliRunner

from storage.store import RunStore
from tests.moto_server import free_port, start_moto

ROOT = Path(__file__).resolve().parents[2]
WIKI = ROOT / "examples" / "wiki"
# Columns that legitimately differ between two runs of the same benchmark, whatever the disk they are on:
#   llm_calls: created_at (the wall clock of the call), latency_s (its measured duration), call_id (a random
#   id per call, so that rows of killed and resumed runs are never confused);
# every other column of every table must be equal row for row.
VOLATILE = {"llm_calls": {"created_at", "latency_s", "call_id"}}


def _env(tmp_path: Path, env: dict, cache: str) -> dict:
    out = {**os.environ, **env, "MTR_LOCAL_CACHE": str(tmp_path / cache), "PYTHONPATH": str(ROOT),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    out.pop("AWS_PROFILE", None)
    return out


def _config(tmp_path: Path, emb: Path, **synth) -> Path:
    p = tmp_path / f"mtr-{uuid.uuid4().hex[:6]}.toml"
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in synth.items())
    p.write_text(f'[embed]\ncache_dir = "{emb}"\n[synth]\nuniqueness_retriever = "bm25"\nuniqueness_k = 4\n{extra}')
    return p


def _comparable(store: RunStore, name: str) -> list[str]:
    t = store.read_table(name)
    t = t.drop_columns([c for c in VOLATILE.get(name, ()) if c in t.column_names])
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


FOLDERS = {"audit", "eval", "export"}   # folders of a run that hold Parquet files but are not tables of it


def _assert_same_tables(a: RunStore, b: RunStore, names=None) -> list[str]:
    names = names or sorted((set(a.tables()) & set(b.tables())) - FOLDERS)
    differ = {}
    for name in names:
        if _comparable(a, name) != _comparable(b, name):
            ta, tb = a.read_table(name), b.read_table(name)
            differ[name] = [c for c in ta.column_names if len(ta) != len(tb) or c not in tb.column_names
                            or sorted(map(str, ta.column(c).to_pylist())) != sorted(map(str, tb.column(c).to_pylist()))]
    assert not differ, f"tables differ (table: columns): {differ}"
    return names


def _store_files(store: RunStore, folder: str) -> dict[str, bytes]:
    base = store._p(folder)
    out = {}
    for i in store.fs.get_file_info(pafs.FileSelector(base, recursive=True)):
        if i.type == pafs.FileType.File:
            with store.fs.open_input_stream(i.path) as f:
                out[i.path[len(base) + 1:]] = f.read()
    return out


@pytest.fixture
def s3(s3_store, monkeypatch, tmp_path):
    url, env = s3_store
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("MTR_LOCAL_CACHE", str(tmp_path / "local-cache"))
    return f"{url}/p-{uuid.uuid4().hex[:8]}", env


@pytest.fixture
def procs():
    """Every process a test starts is ended, whatever the outcome."""
    started: list[subprocess.Popen] = []
    yield started
    for p in reversed(started):
        if p.poll() is None:
            p.kill()
        p.wait()


def test_pipeline_on_s3_equals_local(s3, tmp_path, shared_emb_cache, prefect_harness, monkeypatch):
    """spine + offline synthesis + exports + self-audit + ``mtr evaluate`` + ``mtr query`` + ``mtr runs show``."""
    from flows.cli import app
    root, _ = s3
    monkeypatch.chdir(tmp_path)                                # a stray local "s3:" folder would land here
    cfg = _config(tmp_path, shared_emb_cache)
    local, remote = tmp_path / "bench", f"{root}/bench"       # one run id: it names the benchmark in its tables
    for out in (str(local), remote):
        res = CliRunner().invoke(app, ["synthesize", "--corpus", str(WIKI), "--out", out, "-c", str(cfg),
                                       "--conversations", "2", "--turns", "3"])
        assert res.exit_code == 0, res.output
        synth_out = res.output
        res = CliRunner().invoke(app, ["evaluate", "--benchmark", out, "--retriever", "bm25"])
        assert res.exit_code == 0, synth_out + res.output
    assert "benchmark exports: s3://" not in res.output
    assert not (tmp_path / "s3:").exists() and not (ROOT / "s3:").exists()
    a, b = RunStore(str(local)), RunStore(remote)
    assert b.remote and a.tables() == b.tables()
    names = _assert_same_tables(a, b)
    assert {"documents", "chunks", "embeddings", "clusters", "conversations", "turns", "qrels", "llm_calls",
            "self_audit", "gate_rejections"} <= set(names)
    _assert_same_tables(RunStore(str(local / "audit")), RunStore(f"{remote}/audit"))
    man = b.read_manifest()
    assert {k: v["rows"] for k, v in man["tables"].items()} == {k: v["rows"] for k, v in a.read_manifest()["tables"].items()}
    assert man["stages"]["synthesize"]["summary"] == a.read_manifest()["stages"]["synthesize"]["summary"]
    assert "testing" not in json.dumps(man)                    # no credential in the manifest
    # the exports folder: the same files with the same bytes (the card names no path and no time)
    exp_local = {p.relative_to(local / "export").as_posix(): p.read_bytes()
                 for p in (local / "export").rglob("*") if p.is_file()}
    exp_remote = _store_files(b, "export")
    assert sorted(exp_remote) == sorted(exp_local) and "README.md" in exp_remote
    assert {k for k in exp_local if exp_local[k] != exp_remote[k]} <= {"README.md"}
    assert "## Self-audit (MTR-Eval)" in exp_remote["README.md"].decode()
    assert "report.html" in _store_files(b, "audit") and "report.html" in _store_files(b, "eval")
    assert not any(k.startswith("cache/") for k in _store_files(b, "eval"))   # indexes stay local
    from storage.duck import query
    for sql in ("SELECT conv_id, count(*) AS n FROM turns GROUP BY 1 ORDER BY 1",
                "SELECT sample_id, doc_id FROM qrels ORDER BY 1, 2"):
        assert query(b, sql).to_pylist() == query(a, sql).to_pylist()
    qr = CliRunner().invoke(app, ["query", remote, "SELECT count(*) AS n FROM turns"])
    assert qr.exit_code == 0 and str(a.num_rows("turns")) in qr.output, qr.output
    show = CliRunner().invoke(app, ["runs", "show", remote])
    assert show.exit_code == 0 and "turns" in show.output, show.output


class _HangAfter:
    """A role-scripted fake endpoint that stops answering (hangs) once ``hang_after`` requests were answered."""

    def __new__(cls):
        from agents.testing.fake_roles import RoleScriptedServer

        class Srv(RoleScriptedServer):
            hang_after = 10 ** 9

            def handle(self, body, headers):
                if len(self.requests) >= self.hang_after:
                    from agents.testing.fake_server import RecordedRequest
                    with self._lock:
                        self.requests.append(RecordedRequest(body, headers, time.time()))
                    self.wait(60)
                    return 503, {}, {"error": {"message": "gone"}}
                return super().handle(body, headers)
        return Srv()


def _agent_requests(srv, start: int = 0, stop: int | None = None) -> list[str]:
    """The synthesis agents' requests (capability probes left out: they are not cached calls)."""
    from agents.testing.fake_roles import role_of
    return [json.dumps(r.body["messages"], sort_keys=True) for r in list(srv.requests)[start:stop]
            if role_of(r.body, r.text) is not None]


def _spine_on(url: str, emb: Path) -> None:
    from tests.spine import EXAMPLES
    from clustering import stages as cst
    from corpus import stages as st
    from embedding import stage as est
    from flows.config import load_config
    cfg = load_config(EXAMPLES / "demo.toml", {"embed.cache_dir": str(emb)})
    store = RunStore(url).ensure()
    st.curate(store, str(WIKI), cfg)
    st.chunk(store, cfg)
    est.embed(store, cfg)
    cst.cluster(store, cfg)


def test_killed_worker_resumed_by_another_worker_repeats_no_llm_call(s3, tmp_path, shared_emb_cache, procs):
    from agents.testing.fake_roles import fake_llm_config
    root, env = s3
    url = f"{root}/killed"
    _spine_on(url, shared_emb_cache)
    srv = _HangAfter().start()
    try:
        llm = tmp_path / "llm.json"
        llm.write_text(json.dumps(fake_llm_config(srv).model_dump(mode="json") | {
            "endpoints": {"fake": {"base_url": srv.base_url, "model": "fake-model", "timeout_s": 120}}}))
        cfg = _config(tmp_path, shared_emb_cache, batch_size=1, concurrency=1)
        cmd = [sys.executable, "-m", "flows.cli", "synthesize", "--out", url, "-c", str(cfg), "--llm-config", str(llm),
               "--conversations", "3", "--turns", "2", "--no-audit"]
        e1 = {**_env(tmp_path, env, "worker-1"), "MTR_S3_LEASE_TTL_S": "3"}
        w = subprocess.Popen(cmd, cwd=tmp_path, env=e1, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(w)
        store = RunStore(url)
        parts = store._p("cache", "synth_checkpoints")
        deadline = time.time() + 300
        while time.time() < deadline and w.poll() is None and store.fs.get_file_info(parts).type != \
                pafs.FileType.Directory:
            time.sleep(0.05)                                 # the first batch boundary: a checkpoint snapshot
        assert w.poll() is None, w.stdout.read()
        srv.hang_after = srv.count + 3                       # mid-way through the second batch
        while time.time() < deadline and srv.count <= srv.hang_after and w.poll() is None:
            time.sleep(0.05)
        time.sleep(0.6)                                      # answered calls reach the cache (group commit)
        os.kill(w.pid, signal.SIGKILL)
        w.wait(60)
        answered = _agent_requests(srv, 0, srv.hang_after)
        assert answered
        srv.hang_after = 10 ** 9
        before = srv.count
        time.sleep(3.5)                                      # the dead worker's lease runs out
        t0 = time.time()
        e2 = {**_env(tmp_path, env, "worker-2"), "MTR_S3_LEASE_TTL_S": "3"}
        out = subprocess.run(cmd, cwd=tmp_path, env=e2, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        new = _agent_requests(srv, before)
        assert new, "the rerun had work left to do"
        assert not set(new) & set(answered), "a call answered before the kill was repeated"
        turns = store.read_table("turns").to_pylist()
        assert len(turns) == 6 and all(t["status"] == "ok" for t in turns)
        calls = store.read_table("llm_calls").to_pylist()
        assert len({c["call_id"] for c in calls}) == len(calls)
        snapshots = [i for i in store.fs.get_file_info(pafs.FileSelector(parts)) if i.path.endswith(".sqlite")]
        assert len(snapshots) == 2                            # one per worker's local database
        print(f"resume after kill: {time.time() - t0:.1f} s")
    finally:
        srv.stop()


def test_two_writers_on_one_s3_run_get_the_lock_error(s3, tmp_path):
    from storage.locks import run_lock
    root, env = s3
    url = f"{root}/locked"
    with run_lock(url):
        out = subprocess.run([sys.executable, "-m", "flows.cli", "build", str(WIKI), "--run", url],
                             cwd=tmp_path, env=_env(tmp_path, env, "other"), capture_output=True, text=True,
                             timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "in use by another mtr process" in lines[0], out.stderr


def _moto(port: int, log: Path) -> subprocess.Popen:
    return start_moto(port, bucket="down-test", log=log)[0]


def test_store_down_mid_run_is_one_line_and_a_rerun_completes(s3, tmp_path, shared_emb_cache, procs, monkeypatch):
    _, env = s3
    port = free_port()
    procs.append(_moto(port, tmp_path / "moto.log"))
    env = {**env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    monkeypatch.setenv("AWS_ENDPOINT_URL", env["AWS_ENDPOINT_URL"])
    url = "s3://down-test/run"
    cmd = [sys.executable, "-m", "flows.cli", "synthesize", "--corpus", str(WIKI), "--out", url,
           "-c", str(_config(tmp_path, shared_emb_cache, batch_size=1)), "--conversations", "3", "--turns", "2",
           "--no-audit"]
    e = _env(tmp_path, env, "worker")
    w = subprocess.Popen(cmd, cwd=tmp_path, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(w)
    store = RunStore(url)
    deadline = time.time() + 300
    while time.time() < deadline and w.poll() is None and not store.has_table("clusters"):
        time.sleep(0.1)
    assert w.poll() is None, w.communicate()
    procs[0].terminate()                                     # the store goes down mid-run
    procs[0].wait(30)
    out, err = w.communicate(timeout=300)
    assert w.returncode == 2, out[-2000:] + err[-3000:]
    # stderr also holds the progress bars and Prefect's log lines of the stages that ran; the failure is one line
    errors = [ln for ln in err.splitlines() if "error" in ln.lower()]
    assert len(errors) == 1 and errors[0].startswith("error: ") and "object store" in errors[0], err[-3000:]
    assert "Traceback" not in out + err and "testing" not in err
    procs.append(_moto(port, tmp_path / "moto.log"))         # back (moto keeps no state: the run starts again)
    again = subprocess.run(cmd, cwd=tmp_path, env=e, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    assert len(store.read_table("turns")) == 6


def test_dask_workers_without_shared_disk_equal_default_runner(s3, tmp_path, shared_emb_cache, prefect_harness,
                                                               procs, monkeypatch):
    """Scheduler and two workers in fresh temp folders (their cwd and ``--local-directory``), each with its
    own MTR_LOCAL_CACHE: they get the run's s3:// URL and nothing on a shared disk."""
    pytest.importorskip("prefect_dask")
    from flows.cli import app
    root, env = s3
    monkeypatch.chdir(tmp_path)
    sched_file = tmp_path / "scheduler.json"
    procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                   "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                                  cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for _ in range(600):
        if sched_file.exists() and sched_file.stat().st_size:
            break
        time.sleep(0.1)
    address = json.loads(sched_file.read_text())["address"]
    for i in range(2):
        d = tmp_path / f"worker-{i}"
        d.mkdir()
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "1",
                                       "--nthreads", "1", "--no-dashboard", "--local-directory", str(d / "dask")],
                                      cwd=d, env=_env(d, env, "local-cache"),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    from distributed import Client
    with Client(address, timeout=60) as c:
        c.wait_for_workers(2, timeout=120)
        dirs = c.run(os.getcwd)
    assert len(set(dirs.values())) == 2 and str(tmp_path) not in dirs.values()
    cfg = _config(tmp_path, shared_emb_cache, batch_size=1)
    base, par = f"{root}/default/bench", f"{root}/dask/bench"   # one run id: llm_calls rows carry it
    for out, extra in ((base, []), (par, ["--dask-address", address])):
        res = CliRunner().invoke(app, ["synthesize", "--corpus", str(WIKI), "--out", out, "-c", str(cfg),
                                       "--conversations", "3", "--turns", "2", "--no-audit", *extra])
        assert res.exit_code == 0, res.output
    a, b = RunStore(base), RunStore(par)
    names = _assert_same_tables(a, b)
    assert {"conversations", "turns", "qrels"} <= set(names)
    parts = [i for i in b.fs.get_file_info(pafs.FileSelector(b._p("cache", "synth_checkpoints")))
             if i.path.endswith(".sqlite")]
    assert len(parts) >= 2                 # batches checkpointed on both workers, merged for the assembly
    assert _store_files(a, "export").keys() == _store_files(b, "export").keys()
