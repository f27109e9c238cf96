"""kill -9 of an ``mtr`` process must not orphan Prefect's temporary server (issue: integrity #13)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent("""
    import sys, time
    from flows.orphan_guard import install
    install()
    from prefect import flow
    from prefect.server.api.server import SubprocessASGIServer

    @flow
    def tiny():
        return 1

    tiny()
    [server] = [s for s in SubprocessASGIServer._instances.values() if s.server_process]
    print(server.server_process.pid, flush=True)
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_temporary_server_dies_with_its_killed_parent(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, text=True, cwd=os.getcwd())
    server_pid = None
    try:
        line = proc.stdout.readline()  # blocks until the flow ran (no wall-clock limit of ours)
        assert line.strip().isdigit(), f"child did not report a server pid: {line!r}"
        server_pid = int(line)
        assert _alive(server_pid)
        with open(f"/proc/{server_pid}/cmdline") as fh:
            assert "flows.server_child" in fh.read()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 90
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(server_pid), "the temporary Prefect server outlived its killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if server_pid and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
