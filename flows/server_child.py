"""Entry point of Prefect's temporary API server when started by ``mtr``: uvicorn plus a
watchdog that ends the server when the ``mtr`` process that started it is gone.

Prefect starts its ephemeral server as a plain child process and stops it at interpreter
exit; a ``kill -9`` of the parent skips that, and the server used to live on (parent pid 1).
Usage (by :mod:`flows.orphan_guard`): ``python -m flows.server_child PARENT_PID <uvicorn args>``.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

#: How often the watchdog checks its parent (seconds).
POLL_S = 0.5


def _watch(parent: int) -> None:
    while True:
        if os.getppid() != parent:  # re-parented: the mtr process died without stopping us
            os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's graceful shutdown
            time.sleep(10)
            os._exit(1)
        time.sleep(POLL_S)


def main() -> None:
    parent = int(sys.argv[1])
    del sys.argv[1]
    sys.argv[0] = "uvicorn"
    threading.Thread(target=_watch, args=(parent,), name="mtr-orphan-watchdog", daemon=True).start()
    from uvicorn.main import main as uvicorn_main   # costly: uvicorn
    uvicorn_main()


if __name__ == "__main__":
    main()
