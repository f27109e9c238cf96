"""Local operations in one command: a Prefect server on 127.0.0.1, the process work pool,
the deployments of ``deploy/prefect.yaml`` and a worker; Ctrl-C stops the worker, then the
server (in that order: once the server is gone, a worker no longer stops promptly on a signal
and has to be killed).

Every child runs under :mod:`flows.guarded_child` in a process group of its own: it dies with
this process even on ``kill -9`` (the guard notices it was re-parented and ends the group), and
a child that does not stop in time is killed with its whole group.

Plain functions so the end-to-end test drives exactly what ``mtr serve`` runs.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from flows.guarded_child import command as guarded

PROJECT_DIR = Path(__file__).resolve().parents[1]
POOL = "mtr-local"


def prefect_exe() -> str:
    exe = Path(sys.executable).parent / "prefect"
    return str(exe) if exe.exists() else "prefect"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def base_env(api_url: str | None, home: str | None = None, extra: dict | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update({"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false", "MTR_PROJECT_DIR": str(PROJECT_DIR),
                "PREFECT_WORKER_QUERY_SECONDS": env.get("PREFECT_WORKER_QUERY_SECONDS", "5")})
    if home:
        env["PREFECT_HOME"] = home
    if api_url:
        env["PREFECT_API_URL"] = api_url
    env.update(extra or {})
    return env


@dataclass
class LocalStack:
    host: str = "127.0.0.1"
    port: int = 4200
    home: str | None = None
    pool: str = POOL
    log_dir: Path | None = None
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}/api"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _log(self, name: str):
        if self.log_dir is None:
            return subprocess.DEVNULL
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return open(self.log_dir / f"{name}.log", "ab")

    def start_server(self, timeout: float = 120) -> None:
        env = base_env(None, self.home, {"PREFECT_UI_API_URL": self.api_url})
        self.procs["server"] = subprocess.Popen(
            guarded([prefect_exe(), "server", "start", "--host", self.host, "--port", str(self.port)]),
            env=env, stdout=self._log("server"), stderr=subprocess.STDOUT, cwd=PROJECT_DIR, start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.procs["server"].poll() is not None:
                raise RuntimeError(f"the Prefect server exited with code {self.procs['server'].returncode}")
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as r:
                    if json.loads(r.read()) is True:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the Prefect server did not become healthy within {timeout:.0f} s")

    def _cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.Popen(guarded([prefect_exe(), *args]), env=base_env(self.api_url, self.home), cwd=PROJECT_DIR,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            _kill_group(p)
            raise RuntimeError(f"`prefect {' '.join(args)}` did not finish within 300 s") from None
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if check and r.returncode != 0:
            raise RuntimeError(f"`prefect {' '.join(args)}` failed: {(r.stderr or r.stdout).strip()[-800:]}")
        return r

    def create_pool(self) -> None:
        r = self._cli("work-pool", "create", self.pool, "--type", "process", check=False)
        if r.returncode != 0 and "already exists" not in (r.stdout + r.stderr):
            raise RuntimeError(f"could not create work pool {self.pool}: {(r.stderr or r.stdout).strip()[-500:]}")

    def deploy(self) -> str:
        return self._cli("--no-prompt", "deploy", "--all", "--prefect-file", "deploy/prefect.yaml").stdout

    def start_worker(self) -> None:
        self.procs["worker"] = subprocess.Popen(
            guarded([prefect_exe(), "worker", "start", "--pool", self.pool, "--type", "process"]),
            env=base_env(self.api_url, self.home), stdout=self._log("worker"), stderr=subprocess.STDOUT,
            cwd=PROJECT_DIR, start_new_session=True)

    def stop(self) -> None:
        """Worker first (SIGINT), then the server; escalate to SIGKILL after a grace period."""
        for name in ("worker", "server"):
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGINT)       # the guard passes it on
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _kill_group(p)

    def __enter__(self) -> "LocalStack":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the process group of a guarded child (the guard, the command and its children)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=10)


def serve(host: str = "127.0.0.1", port: int = 4200, home: str | None = None, echo=print) -> None:
    """Start everything, print the UI address, block until Ctrl-C, stop cleanly."""
    stack = LocalStack(host=host, port=port, home=home, log_dir=PROJECT_DIR / ".mtr" / "serve-logs")
    stop = {"now": False}

    def _sig(*_):
        stop["now"] = True
    signal.signal(signal.SIGTERM, _sig)
    try:
        echo(f"starting the Prefect server on {stack.ui_url} ...")
        stack.start_server()
        stack.create_pool()
        echo("deploying deploy/prefect.yaml ...")
        stack.deploy()
        stack.start_worker()
        echo(f"Prefect UI: {stack.ui_url}   (worker on pool {stack.pool}; logs in .mtr/serve-logs; Ctrl-C stops)")
        echo("trigger a run: PREFECT_API_URL=" + stack.api_url + " prefect deployment run 'regenerate-benchmark/nightly'")
        while not stop["now"]:
            for name, p in stack.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"the {name} exited with code {p.returncode}; see .mtr/serve-logs/{name}.log")
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        echo("stopping the worker, then the server ...")
        stack.stop()
