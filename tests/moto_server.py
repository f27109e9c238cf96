"""A real S3 server on localhost for tests and benchmarks: moto's server mode in a child process."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(port: int | None = None, bucket: str | None = None,
               log: Path | None = None) -> tuple[subprocess.Popen, str]:
    """Start ``moto.server`` on ``port`` (a free one by default), wait until it answers and create ``bucket``;
    returns the process (the caller stops it) and its endpoint URL. Output goes to ``log`` (appended) or nowhere.
    A server that exits or does not answer within 30 s is an error (and is stopped)."""
    port = port or free_port()
    out = open(log, "ab") if log is not None else subprocess.DEVNULL
    try:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    finally:
        if log is not None:
            out.close()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if proc.poll() is not None:
                tail = Path(log).read_text(errors="replace")[-2000:] if log is not None else ""
                raise RuntimeError(f"moto_server exited: {tail}")
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"moto_server did not start on port {port}")
        if bucket:
            urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"), timeout=10).close()
    except BaseException:
        stop(proc)
        raise
    return proc, endpoint


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
