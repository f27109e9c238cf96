"""kill -9 of ``mtr serve`` must not orphan the Prefect server and worker it started (issue:
honest outputs #6; the temporary server's guard: test_orphan_server.py). Each child runs under
``flows.guarded_child``, which ends its process group once ``mtr serve`` is gone."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _kill_everything(pids) -> None:
    for pid in pids:
        for kill in (lambda p: os.killpg(p, signal.SIGKILL), lambda p: os.kill(p, signal.SIGKILL)):
            try:
                kill(pid)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_serve_children_die_with_a_killed_serve(tmp_path):
    from flows.serve import free_port
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PYTHONUNBUFFERED="1", PREFECT_SERVER_ANALYTICS_ENABLED="false")
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve", "--port", str(free_port()),
                             "--home", str(tmp_path / "prefect-home")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, cwd=ROOT,
                            start_new_session=True)
    family: set[int] = set()
    try:
        lines = []
        for line in proc.stdout:          # blocks until the server, deployments and worker are up
            lines.append(line)
            if "Prefect UI:" in line or "error" in line.lower():
                break
        assert any("Prefect UI:" in line for line in lines), "".join(lines)
        family = _descendants(proc.pid)
        cmdlines = []
        for pid in family:
            try:
                cmdlines.append(open(f"/proc/{pid}/cmdline").read().replace("\0", " "))
            except FileNotFoundError:
                pass
        assert any("server start" in c for c in cmdlines) and any("worker start" in c for c in cmdlines), cmdlines
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 120
        while any(_alive(p) for p in family) and time.monotonic() < deadline:
            time.sleep(0.5)
        survivors = [c for p in sorted(family) if _alive(p)
                     for c in [open(f"/proc/{p}/cmdline").read().replace("\0", " ")]]
        assert not survivors, f"children of the killed `mtr serve` still run: {survivors}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_everything([proc.pid, *family, *_descendants(proc.pid)])
        proc.stdout.close()
