"""A scriptable fake OpenAI-compatible server (real sockets, stdlib ``http.server``).

Used by the tests (the ``fake_llm`` fixture of ``tests/conftest.py``), the benchmarks and
``mtr fake-llm``, so every LLM path can be tried without an endpoint. It serves ``POST /v1/chat/completions``
and ``GET /v1/models`` on 127.0.0.1.

Unscripted requests get an automatic answer: with ``response_format`` ``json_schema`` (or a
schema embedded in the prompt by a client in text mode) an object built from the schema;
otherwise a short text. Usage counts are chars/4 estimates; logprobs are returned when
asked. Scripted replies (:class:`Reply`) are consumed in order, either for any request
(:meth:`FakeLLMServer.script`) or for requests whose messages contain a string
(:meth:`FakeLLMServer.on`, checked first)::

    with FakeLLMServer() as srv:
        srv.script(Reply.text("{not json"), Reply.json({"answer": "ok"}))   # malformed, then good
        srv.script(Reply.status(429, retry_after=0.05), Reply.auto())       # rate limit, then auto
        srv.on("slow question", Reply.hang(5))                             # past the client timeout
        srv.script(Reply.refusal("I can't help with that."), Reply.status(500))
        client = openai.OpenAI(base_url=srv.base_url, api_key="x")

Server-wide behaviour: ``latency`` (seconds added to every request), ``json_schema``
(``honour`` | ``reject`` with HTTP 400 | ``ignore``), ``logprobs`` (``honour`` | ``reject`` |
``ignore``), ``api_key`` (when set, other keys get a 401 that echoes the key sent, as some
servers do). ``requests`` records each request (body, headers); ``max_in_flight`` is the
highest number of requests being handled at once. :func:`schema_name` tells which output
schema a request asks for (subclasses answer per schema, e.g.
:class:`agents.testing.fake_roles.RoleScriptedServer`).

The sockets and the request handler are :mod:`agents.testing.fake_http`; the instance of a
schema an automatic answer holds is :mod:`agents.testing.fake_schema`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import signal
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.testing.fake_http import Handler, Server, error_body
from agents.testing.fake_schema import schema_in_prompt, value_from_schema

Mode = Literal["honour", "reject", "ignore"]


@dataclass
class Reply:
    """One scripted answer (build with the class methods)."""

    kind: Literal["auto", "content", "status", "hang", "refusal"] = "auto"
    content: str | None = None
    status: int = 200
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: tuple[int, int] | None = None
    logprobs: list[tuple[str, float, list[tuple[str, float]]]] | None = None
    finish_reason: str = "stop"
    omit_usage: bool = False

    @classmethod
    def auto(cls, **kw: Any) -> "Reply":
        return cls("auto", **kw)

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> "Reply":
        return cls("content", content=json.dumps(obj), **kw)

    @classmethod
    def text(cls, text: str, **kw: Any) -> "Reply":
        return cls("content", content=text, **kw)

    @classmethod
    def status(cls, code: int, message: str = "", *, retry_after: float | str | None = None,
               headers: dict[str, str] | None = None, **kw: Any) -> "Reply":
        h = dict(headers or {})
        if retry_after is not None:
            h["Retry-After"] = str(retry_after)
        return cls("status", status=code, message=message or f"fake error {code}", headers=h, **kw)

    @classmethod
    def hang(cls, seconds: float, **kw: Any) -> "Reply":
        return cls("hang", delay=seconds, **kw)

    @classmethod
    def refusal(cls, text: str = "I'm sorry, I can't help with that.", **kw: Any) -> "Reply":
        return cls("refusal", content=text, **kw)


@dataclass
class RecordedRequest:
    body: dict[str, Any]
    headers: dict[str, str]
    at: float

    @property
    def text(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages", []))


def _estimate(text: str) -> int:
    return max(1, (len(text) + 3) // 4) if text else 0


def schema_name(body: dict[str, Any], prompt_text: str) -> str | None:
    """The name of the output schema a request asks for: the ``response_format`` json_schema
    ``name``, else the ``title`` of a schema embedded in the prompt (text / json_object mode);
    None for a request without a schema."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        name = (rf.get("json_schema") or {}).get("name")
        if name:
            return str(name)
    schema = schema_in_prompt(prompt_text)
    if isinstance(schema, dict) and schema.get("title"):
        return str(schema["title"])
    return None


class FakeLLMServer:
    """See module docstring. ``with FakeLLMServer() as srv:`` starts it on a free port."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, latency: float = 0.0,
                 json_schema: Mode = "honour", logprobs: Mode = "honour", api_key: str | None = None,
                 model: str = "fake-model") -> None:
        self.host, self.port = host, port
        self.latency = latency
        self.json_schema = json_schema
        self.logprobs_mode = logprobs
        self.api_key = api_key
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.paths: list[str] = []      # every request's path, query included, as received
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._rules: list[tuple[str, deque[Reply]]] = []
        self._stop = threading.Event()
        self._httpd: Server | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------
    def script(self, *replies: Reply) -> "FakeLLMServer":
        with self._lock:
            self._script.extend(replies)
        return self

    def on(self, contains: str, *replies: Reply) -> "FakeLLMServer":
        with self._lock:
            self._rules.append((contains, deque(replies)))
        return self

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._rules.clear()
            self.requests.clear()
            self.paths.clear()
            self.max_in_flight = 0

    @property
    def count(self) -> int:
        return len(self.requests)

    def _next_reply(self, text: str) -> Reply:
        with self._lock:
            for contains, q in self._rules:
                if q and contains in text:
                    return q.popleft()
            if self._script:
                return self._script.popleft()
        return Reply.auto()

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "FakeLLMServer":
        server = self

        class BoundHandler(Handler):
            fake = server

        httpd = Server((self.host, self.port), BoundHandler)
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._stop.clear()
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-llm-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def wait(self, seconds: float) -> None:
        """Sleep that returns early when the server stops."""
        if seconds > 0:
            self._stop.wait(seconds)

    # -- answering ------------------------------------------------------------------------
    def handle(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any]]:
        rec = RecordedRequest(body, headers, time.time())
        with self._lock:
            self.requests.append(rec)
        if self.api_key is not None:
            auth = headers.get("authorization", "")
            if auth != f"Bearer {self.api_key}":
                sent = auth.removeprefix("Bearer ")
                return 401, {}, error_body(f"Incorrect API key provided: {sent}.", "invalid_request_error",
                                       "invalid_api_key")
        rf = body.get("response_format") or {}
        if rf.get("type") == "json_schema" and self.json_schema == "reject":
            return 400, {}, error_body("response_format json_schema is not supported by this server",
                                   "invalid_request_error", None)
        if body.get("logprobs") and self.logprobs_mode == "reject":
            return 400, {}, error_body("logprobs are not supported by this model", "invalid_request_error", None)
        self.wait(self.latency)
        reply = self._next_reply(rec.text)
        if reply.kind == "hang":
            self.wait(reply.delay)
            reply = Reply.auto()
        elif reply.delay:
            self.wait(reply.delay)
        if reply.kind == "status":
            return reply.status, reply.headers, error_body(reply.message, "server_error" if reply.status >= 500
                                                       else "invalid_request_error", None)
        return 200, reply.headers, self._completion(body, reply, rec.text)

    def _completion(self, body: dict[str, Any], reply: Reply, prompt_text: str) -> dict[str, Any]:
        content: str | None
        refusal = None
        if reply.kind == "refusal":
            content, refusal = None, reply.content
        elif reply.kind == "content":
            content = reply.content
        else:
            content = self._auto_content(body, prompt_text)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if refusal is not None:
            message["refusal"] = refusal
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": reply.finish_reason}
        if body.get("logprobs") and self.logprobs_mode == "honour":
            choice["logprobs"] = {"content": self._logprobs(content or refusal or "", reply,
                                                            int(body.get("top_logprobs") or 0))}
        out: dict[str, Any] = {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion",
                               "created": int(time.time()), "model": body.get("model") or self.model,
                               "choices": [choice]}
        if not reply.omit_usage:
            p, c = reply.usage or (_estimate(prompt_text), _estimate(content or refusal or ""))
            out["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        return out

    def _auto_content(self, body: dict[str, Any], prompt_text: str) -> str:
        seed = hashlib.sha256(prompt_text.encode()).hexdigest()[:6]
        rf = body.get("response_format") or {}
        schema = None
        if rf.get("type") == "json_schema" and self.json_schema == "honour":
            schema = (rf.get("json_schema") or {}).get("schema") or {}
        else:
            schema = schema_in_prompt(prompt_text)
            if schema is not None:   # a server without structured outputs: chatty JSON
                return "Sure! Here is the JSON:\n```json\n" + json.dumps(value_from_schema(schema, seed=seed)) + "\n```"
        if schema is not None:
            return json.dumps(value_from_schema(schema, seed=seed))
        if rf.get("type") == "json_object":
            return json.dumps({"answer": f"fake answer {seed}"})
        last = ""
        for m in body.get("messages", []):
            if m.get("role") == "user":
                last = str(m.get("content", ""))
        return f"fake answer {seed} to: {last[:80]}"

    def _logprobs(self, content: str, reply: Reply, top: int) -> list[dict[str, Any]]:
        if reply.logprobs is not None:
            return [{"token": t, "logprob": lp, "bytes": None,
                     "top_logprobs": [{"token": a, "logprob": b, "bytes": None} for a, b in alts[:top or len(alts)]]}
                    for t, lp, alts in reply.logprobs]
        toks = re.findall(r"\s*\S+", content) or [content]
        return [{"token": t, "logprob": -0.05, "bytes": None,
                 "top_logprobs": [{"token": t, "logprob": -0.05, "bytes": None},
                                  {"token": " alt", "logprob": -3.0, "bytes": None}][:top]}
                for t in toks]


def main(argv: list[str] | None = None) -> None:
    """``python -m agents.testing.fake_server [--host H] [--port P] [--latency S]`` (until Ctrl-C)."""
    ap = argparse.ArgumentParser(description="Fake OpenAI-compatible server for MTR-Suite")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    ap.add_argument("--json-schema", choices=["honour", "reject", "ignore"], default="honour")
    ap.add_argument("--logprobs", choices=["honour", "reject", "ignore"], default="honour")
    a = ap.parse_args(argv)
    serve(a.host, a.port, latency=a.latency, json_schema=a.json_schema, logprobs=a.logprobs)


def serve(host: str, port: int, *, latency: float = 0.0, json_schema: Mode = "honour",
          logprobs: Mode = "honour", out: Any = None, server_class: type | None = None) -> None:
    """Run a server in the foreground until Ctrl-C / SIGTERM (``server_class``: a subclass
    such as :class:`agents.testing.fake_roles.RoleScriptedServer`; default the plain one)."""
    out = out or sys.stdout
    cls = server_class or FakeLLMServer
    stop = threading.Event()
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C and SIGTERM end the wait: the server shuts down at once and the count is printed.
        # SIGINT gets its own handler too: a process started in the background of a shell without
        # job control inherits SIGINT *ignored*, and Python then raises no KeyboardInterrupt
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda signum, frame: stop.set())
    srv = cls(host, port, latency=latency, json_schema=json_schema, logprobs=logprobs).start()
    print(f"fake OpenAI-compatible server listening on {srv.base_url} "
          f"(latency {latency * 1000:.0f} ms); Ctrl-C to stop", file=out, flush=True)
    try:
        while not stop.wait(0.2):   # short waits: the signal handlers run between them
            pass
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        srv.stop()
        print(f"served {srv.count} chat completion request(s)", file=out, flush=True)


if __name__ == "__main__":
    main()
