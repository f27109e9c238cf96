"""Processes started by tests or by ``mtr`` end (issue: integrity #14).

* the session guard (``tests/process_guard.py``, loaded by ``tests/conftest.py``) fails a pytest
  session that leaves a child process running, names it and kills it;
* ``mtr fake-llm`` stops on SIGTERM at once, as on Ctrl-C (exit 0, request count printed).

No test here depends on a short wall-clock limit: every wait is bounded at >= 60 s only so a
hang cannot block the suite forever, and every process started is ended in ``finally``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LEAKY = textwrap.dedent("""
    import subprocess, sys

    def test_starts_a_process_and_forgets_it(tmp_path_factory):
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open({pidfile!r}, "w") as fh:
            fh.write(str(p.pid))
""")

TIDY = textwrap.dedent("""
    import subprocess, sys

    def test_starts_a_process_and_ends_it():
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        p.kill()
        p.wait()
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _pytest(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_child.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.process_guard",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_child.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_a_session_that_leaves_a_child_running_fails_naming_it_and_the_child_is_killed(tmp_path):
    pidfile = tmp_path / "leaked.pid"
    res = _pytest(tmp_path, LEAKY.format(pidfile=str(pidfile)))
    leaked = int(pidfile.read_text())
    try:
        out = res.stdout + res.stderr
        assert res.returncode == 1, out          # the one test passed; the session still fails
        assert "1 passed" in out
        assert "process guard: 1 child process(es) outlived the test session" in out
        assert f"pid {leaked}: " in out and "time.sleep(600)" in out
        assert not _alive(leaked)                # killed, not just reported
    finally:
        if _alive(leaked):
            os.kill(leaked, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_a_session_that_ends_its_processes_passes(tmp_path):
    res = _pytest(tmp_path, TIDY)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "1 passed" in out and "process guard" not in out


def test_mtr_fake_llm_stops_on_sigterm_like_on_ctrl_c():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "flows.cli", "fake-llm", "--port", "0"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()   # blocks until it listens (or exits: then '' and the assert shows stderr)
        assert "listening on http://127.0.0.1:" in line, p.stderr.read()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # before the fix SIGTERM killed it by the default action: returncode -15, no final line
    assert p.returncode == 0, err[-2000:]
    assert out.strip().splitlines()[-1] == "served 0 chat completion request(s)"
