"""Pytest plugin: a test session may not leave child processes behind.

At session start the descendants of the pytest process are recorded; at session end every
descendant still alive that was not there at the start is listed, killed, and the session
fails (exit status 1) with one line per process (pid and command line). Before the check,
helpers that by design live until interpreter exit are ended the way their owners end them:
Prefect's temporary API servers (``SubprocessASGIServer.stop()``, normally an ``atexit``
hook) and loky's reusable worker pool. The resource trackers of multiprocessing and of loky
(one per interpreter, each ends when the interpreter does) are not counted.

Uses psutil when installed, else ``/proc`` (Linux). ``tests/conftest.py`` imports the hooks;
``python -m pytest -p tests.process_guard`` loads it on its own.
"""
from __future__ import annotations

import os
import signal
import sys
import time

_EXEMPT = ("multiprocessing.resource_tracker", "loky.backend.resource_tracker")
_START_KEY = "_mtr_children_at_start"


def _proc_children(pid: int) -> set[int]:
    """Descendants of ``pid`` read from /proc (fallback without psutil)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def descendants(pid: int | None = None) -> set[int]:
    """Live (not zombie) descendants of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    try:
        import psutil
    except ImportError:
        return _proc_children(pid)
    out = set()
    try:
        for child in psutil.Process(pid).children(recursive=True):
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    out.add(child.pid)
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _stop_lifetime_helpers() -> None:
    """End the helpers that normally live until interpreter exit, as their owners would."""
    if "prefect.server.api.server" in sys.modules:
        srv = sys.modules["prefect.server.api.server"]
        for server in list(getattr(srv.SubprocessASGIServer, "_instances", {}).values()):
            try:
                server.stop()
            except Exception:  # noqa: BLE001 - best effort; what survives is reported below
                pass
    if "joblib.externals.loky" in sys.modules:
        try:
            from joblib.externals.loky import get_reusable_executor
            get_reusable_executor().shutdown(wait=True, kill_workers=True)
        except Exception:  # noqa: BLE001
            pass


def _reap(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


def leftovers(start: set[int]) -> dict[int, str]:
    """Descendants alive now that were not at ``start`` (exempt helpers excluded): pid -> command."""
    now = descendants() - start
    _reap(now)
    out = {}
    for pid in sorted(now):
        cmd = cmdline(pid)
        if cmd != "?" and not any(e in cmd for e in _EXEMPT):
            out[pid] = cmd
    return out


def kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 60
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    break
            except ChildProcessError:   # not our direct child: wait until /proc says it is gone
                if not os.path.exists(f"/proc/{pid}") or _is_zombie(pid):
                    break
            time.sleep(0.05)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def pytest_sessionstart(session) -> None:
    setattr(session.config, _START_KEY, descendants())


def pytest_sessionfinish(session, exitstatus) -> None:
    start = getattr(session.config, _START_KEY, None)
    if start is None:
        return
    _stop_lifetime_helpers()
    left = leftovers(start)
    if not left:
        return
    kill_all(left)
    lines = [f"process guard: {len(left)} child process(es) outlived the test session "
             "(every test that starts a process must end it); killed:"]
    lines += [f"  pid {pid}: {cmd}" for pid, cmd in left.items()]
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line("")
        for line in lines:
            tr.write_line(line, red=True)
    else:
        print("\n".join(lines), file=sys.stderr)
    session.exitstatus = 1
