"""The socket side of the fake OpenAI-compatible server: a threading HTTP server that forgives
clients going away, and the request handler that routes ``GET /v1/models`` and ``POST
/v1/chat/completions`` to a :class:`~agents.testing.fake_server.FakeLLMServer` and writes its
answer (JSON, with ``TCP_NODELAY``).
"""
from __future__ import annotations

import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


def error_body(message: str, typ: str, code: str | None) -> dict[str, Any]:
    """An OpenAI-style error object."""
    return {"error": {"message": message, "type": typ, "param": None, "code": code}}


class Server(ThreadingHTTPServer):
    """A threading server whose clients may go away mid-request (timeouts, killed processes)."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return   # a client went away (timeout, killed process): not the server's problem
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """Routes requests to ``fake`` (a subclass binds it) and writes its JSON answer."""

    fake: Any   # the FakeLLMServer answering (not imported: fake_server imports this module)
    protocol_version = "HTTP/1.1"
    server_version = "FakeLLM/1.0"

    def setup(self) -> None:
        super().setup()
        # headers and body go out as separate writes: without TCP_NODELAY, Nagle + delayed
        # ACKs add ~40 ms to every response
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence access log
        pass

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True

    def _route(self) -> str:
        """The request path without its query (recorded whole in ``fake.paths``)."""
        paths = getattr(self.fake, "paths", None)
        if paths is not None:
            with self.fake._lock:
                paths.append(self.path)
        return urlsplit(self.path).path.rstrip("/")

    def do_GET(self) -> None:  # noqa: N802
        if self._route().endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": self.fake.model, "object": "model",
                                                         "created": 0, "owned_by": "fake"}]})
        else:
            self._send(404, error_body(f"no route {self.path}", "invalid_request_error", None))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:          # the client went away mid-request
            self.close_connection = True
            return
        if not self._route().endswith("/chat/completions"):
            self._send(404, error_body(f"no route {self.path}", "invalid_request_error", None))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, error_body("request body is not JSON", "invalid_request_error", None))
            return
        fake = self.fake
        with fake._lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            status, headers, payload = fake.handle(body, {k.lower(): v for k, v in self.headers.items()})
        finally:
            with fake._lock:
                fake.in_flight -= 1
        self._send(status, payload, headers)
