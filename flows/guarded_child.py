"""Run a command that must not outlive the ``mtr`` process that started it (``mtr serve``'s
Prefect server and worker; :mod:`flows.orphan_guard` does the same for Prefect's temporary
server).

Usage: ``python -m flows.guarded_child PARENT_PID -- COMMAND [ARGS...]``, started in a process
group of its own (``start_new_session=True``; :func:`command` builds the line). The command runs
in that group. SIGINT and SIGTERM sent to this process are passed on to the command, whose exit
code becomes this process's. A watchdog checks the parent every :data:`POLL_S`: once it is gone
(``kill -9``, an OOM kill: this process is re-parented), the command gets SIGINT (a Prefect
worker's clean stop), and after :data:`GRACE_S` the whole group (the command and whatever it
started) is killed. The starter's own last resort is ``os.killpg(pid, SIGKILL)`` on the group.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

#: How often the watchdog checks the parent (seconds).
POLL_S = 0.5
#: How long the command has to stop on SIGINT once the parent is gone (seconds).
GRACE_S = 10.0


def command(argv: list[str], parent: int | None = None) -> list[str]:
    """``argv`` run under the guard of ``parent`` (default: this process)."""
    return [sys.executable, "-m", "flows.guarded_child", str(parent or os.getpid()), "--", *argv]


def _watch(parent: int, child: subprocess.Popen) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    try:                                   # the parent died without stopping us
        child.send_signal(signal.SIGINT)
        child.wait(timeout=GRACE_S)
    except (subprocess.TimeoutExpired, OSError):
        pass
    os.killpg(os.getpgrp(), signal.SIGKILL)     # the command, its children, and this process


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m flows.guarded_child PARENT_PID -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent = int(argv[0])
    child = subprocess.Popen(argv[2:])

    def forward(signum, _frame):
        if child.poll() is None:
            child.send_signal(signum)
    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    threading.Thread(target=_watch, args=(parent, child), name="mtr-parent-watchdog", daemon=True).start()
    rc = child.wait()
    return 128 - rc if rc < 0 else rc       # killed by a signal: the shell's 128 + N


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
