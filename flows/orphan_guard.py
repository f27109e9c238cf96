"""Make Prefect's temporary server die with the ``mtr`` process that started it.

:func:`install` wraps ``SubprocessASGIServer._run_uvicorn_command`` (Prefect 3.9) so that the
server runs ``python -m flows.server_child <our pid> ...`` instead of ``python -m uvicorn ...``;
that module watches its parent and shuts the server down when the parent is gone (kill -9,
OOM kill). A normal exit still stops it through Prefect's own ``atexit`` hook.
"""
from __future__ import annotations

import os
import subprocess
import threading

_lock = threading.Lock()


def _rewrite(argv: list[str]) -> list[str]:
    """``[python, -m, uvicorn, ...]`` -> ``[python, -m, flows.server_child, PID, ...]``."""
    if len(argv) >= 3 and argv[1] == "-m" and argv[2] == "uvicorn":
        return [argv[0], "-m", "flows.server_child", str(os.getpid()), *argv[3:]]
    return argv


def install() -> bool:
    """Idempotent; returns True when the guard is active."""
    from prefect.server.api import server as srv   # costly: the Prefect server
    cls = srv.SubprocessASGIServer
    if getattr(cls, "_mtr_orphan_guard", False):
        return True
    original = cls._run_uvicorn_command

    def _run_uvicorn_command(self):
        real_popen = subprocess.Popen

        def popen(*args, **kwargs):
            if "args" in kwargs:
                kwargs["args"] = _rewrite(list(kwargs["args"]))
            elif args:
                args = (_rewrite(list(args[0])), *args[1:])
            return real_popen(*args, **kwargs)

        with _lock:  # subprocess.Popen is swapped only for this call
            subprocess.Popen = popen
            try:
                return original(self)
            finally:
                subprocess.Popen = real_popen

    cls._run_uvicorn_command = _run_uvicorn_command
    cls._mtr_orphan_guard = True
    return True
