"""Expected failures are one line and exit 2, leave nothing behind, and fail before work
starts (issue: integrity #12).

Tests run as root, where chmod cannot make a directory unwritable: an unwritable runs root is
simulated by a runs root that is a file, and by a ``PermissionError`` from ``mkdir``
(monkeypatched) - the two ways the operating system refuses to create a run directory.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIKI = ROOT / "examples" / "wiki"


def _config(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_runs_root_that_is_a_file_is_one_line(mtr, tmp_path):
    (tmp_path / "rootfile").write_text("not a directory")
    cfg = _config(tmp_path, f'runs_root = "{tmp_path / "rootfile"}"\n')
    res = mtr("build", WIKI, "--config", cfg, "--run", "r1")
    assert res.exit_code == 2
    assert res.err.strip() == (f"error: cannot create run directory {tmp_path / 'rootfile' / 'r1'}: "
                               f"{tmp_path / 'rootfile'} is not a directory")
    cfg = _config(tmp_path, f'runs_root = "{tmp_path / "rootfile" / "deeper"}"\n')
    res = mtr("build", WIKI, "--config", cfg, "--run", "r1")
    assert res.exit_code == 2
    assert res.err.strip() == (f"error: cannot create run directory {tmp_path / 'rootfile' / 'deeper' / 'r1'}: "
                               f"{tmp_path / 'rootfile'} is not a directory")


def test_permission_denied_on_the_runs_root_is_one_line(mtr, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    real_mkdir = Path.mkdir

    def refusing_mkdir(self, *args, **kwargs):   # what mkdir does in a directory the user may not write
        if str(self).startswith(str(root)):
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refusing_mkdir)
    cfg = _config(tmp_path, f'runs_root = "{root}"\n')
    res = mtr("curate", WIKI, "--config", cfg, "--run", "r1")
    assert res.exit_code == 2
    assert res.err.strip() == f"error: cannot create run directory {root / 'r1'}: Permission denied"
    assert not root.exists()


def test_min_size_above_max_size_is_a_config_error_before_any_run(mtr, tmp_path):
    cfg = _config(tmp_path, f'runs_root = "{tmp_path / "runs"}"\n[chunk]\nmin_size = 500\nmax_size = 100\n')
    res = mtr("build", WIKI, "--config", cfg, "--run", "r1")
    assert res.exit_code == 2
    assert res.err.strip() == ("error: invalid config at chunk: chunk.min_size (500) must not exceed "
                               "chunk.max_size (100): every chunk would be rejected as too short")
    assert not (tmp_path / "runs").exists()


def test_min_size_above_the_default_max_size_is_a_config_error(mtr, tmp_path):
    res = mtr("chunk", "some-run", "--min-size", "5000")
    assert res.exit_code == 2
    assert "chunk.min_size (5000) must not exceed chunk.max_size (2048)" in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_missing_llm_config_fails_before_the_spine(mtr, tmp_path):
    out = tmp_path / "bench"
    res = mtr("synthesize", "--corpus", WIKI, "--out", out, "--llm-config", tmp_path / "nope.yaml")
    assert res.exit_code == 2
    assert res.err.strip() == f"error: LLM config {tmp_path / 'nope.yaml'} does not exist"
    assert not out.exists()                       # nothing ran: no run directory, no spine
    res = mtr("synthesize", "--corpus", WIKI, "--out", out, "--llm-config", tmp_path / "nope.yaml", "--dry-run")
    assert res.exit_code == 2 and not out.exists()


def test_failed_run_prints_no_prefect_traceback_and_leaves_no_empty_run_dir(tmp_path):
    """A real ``mtr`` process: Prefect's console logging is silenced for the expected failure
    (the API still gets it), the error is one line, and the run directory it created is gone."""
    (tmp_path / "empty").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(tmp_path / "prefect-home"),
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="300")   # a loaded machine starts it slowly
    res = subprocess.run([sys.executable, "-m", "flows.cli", "curate", str(tmp_path / "empty"), "--run", "r1"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert "Traceback" not in out and "Finished in state Failed" not in out, out
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: corpus directory {tmp_path / 'empty'} contains no files"]
    assert not (tmp_path / "mtr-runs" / "r1").exists()   # created by this run, nothing written: removed


def test_a_failed_run_keeps_a_directory_it_did_not_create(mtr, tmp_path, prefect_harness):
    run = tmp_path / "runs" / "mine"
    run.mkdir(parents=True)
    (run / "notes.txt").write_text("the user's")
    (tmp_path / "empty").mkdir()
    res = mtr("curate", tmp_path / "empty", "--run", str(run))   # fails inside the flow, after the claim
    assert res.exit_code == 2
    assert res.err.strip().splitlines()[-1] == f"error: corpus directory {tmp_path / 'empty'} contains no files"
    assert (run / "notes.txt").read_text() == "the user's"


def test_console_filter_drops_only_expected_failures_and_never_the_api_handler():
    from prefect.logging.handlers import APILogHandler, PrefectConsoleHandler

    from corpus.load import CorpusError
    from flows.prefect_env import quiet_expected_failures

    def record(exc: BaseException | None, msg: str, run_id: str) -> logging.LogRecord:
        r = logging.LogRecord("prefect.task_runs", logging.ERROR, __file__, 1, msg, None,
                              (type(exc), exc, None) if exc else None)
        r.task_run_id = run_id
        return r

    with quiet_expected_failures(CorpusError):
        console = [h for h in logging.getLogger().handlers if isinstance(h, PrefectConsoleHandler)]
        assert console, "Prefect's console handler is on the root logger"
        h = console[0]
        assert not h.filter(record(CorpusError("no files"), "Task run failed", "t1"))
        assert not h.filter(record(None, "Finished in state Failed('...')", "t1"))
        assert h.filter(record(RuntimeError("a bug"), "Task run failed", "t2"))      # unexpected: shown
        assert h.filter(record(None, "Finished in state Failed('...')", "t2"))
        api = [h for lg in (logging.getLogger("prefect.task_runs"), logging.getLogger("prefect.flow_runs"))
               for h in lg.handlers if isinstance(h, APILogHandler)]
        assert api and all(not h.filters for h in api)   # the UI keeps every record
    assert all(not h.filters for h in console)           # removed on exit
