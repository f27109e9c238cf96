"""What an OpenAI-compatible endpoint actually supports, detected by probing it.

"OpenAI-compatible" servers differ in exactly the places the LLM layer relies on:

* ``response_format``: OpenAI and vLLM honour ``{"type": "json_schema", ...}``; llama.cpp's
  Python server rejects it (a request validation error, sent as HTTP 500) but constrains
  decoding with a grammar for
  ``{"type": "json_object", "schema": {...}}``; Ollama honours ``json_object``; some servers
  accept the field and ignore it.
* ``logprobs`` / ``top_logprobs``: returned, rejected, or silently dropped.
* ``seed``: honoured (same seed, same text), accepted and ignored, or rejected.
* context length: vLLM reports ``max_model_len`` in ``/v1/models`` and ``/tokenize``;
  llama.cpp's C++ server reports ``n_ctx`` under ``/props``; llama-cpp-python and Ollama
  report nothing (set ``context_length`` in the endpoint config).

:func:`probe_endpoint` sends a handful of tiny requests (at most 24 completion tokens each,
temperature 0, header ``X-MTR-Probe: 1``) and returns a :class:`Capabilities`. The client
(:class:`agents.client.LLMClient`) probes an endpoint whose config says ``probe: true`` once
per run, lazily (only when a request actually has to go to the server, so a run replayed
from the cache sends nothing), and then uses the best structured-output mode, refuses
logprob requests the server cannot answer, drops a rejected ``seed`` and refuses prompts
longer than the context before sending them. Probe requests are not ``llm_calls`` rows.

Example::

    caps = asyncio.run(probe_endpoint("local", config.endpoints["local"]))
    print(caps.structured_mode, caps.logprobs, caps.context_length)
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx2

from agents.config import EndpointConfig
from agents.errors import LLMConfigError, LLMError
from agents.secrets import SecretURL, read_secret, scrub
from common.errors import UserError

Support = Literal["yes", "ignored", "rejected", "error", "unknown"]
StructuredMode = Literal["json_schema", "json_object_schema", "json_object", "text"]

PROBE_HEADER = "X-MTR-Probe"
_PROBE_KEY = "mtr_probe_ok"
_PROBE_SCHEMA = {"type": "object", "properties": {_PROBE_KEY: {"type": "boolean"}},
                 "required": [_PROBE_KEY], "additionalProperties": False}
_CTX_PATTERNS = (re.compile(r"maximum context length is (\d+)", re.I),
                 re.compile(r"context window of (\d+)", re.I),
                 re.compile(r"context (?:size|length) (?:is |of )?\(?(\d+)\)?", re.I))


class EndpointUnreachable(UserError, LLMError):
    """The endpoint did not answer at all (connection refused, DNS, timeout)."""


def context_length_from_error(message: str) -> int | None:
    """The context length named in a server's "prompt too long" error, if any."""
    for pat in _CTX_PATTERNS:
        m = pat.search(message or "")
        if m:
            return int(m.group(1))
    return None


def endpoint_headers(name: str, ep: EndpointConfig) -> tuple[str, dict[str, str]]:
    """(api key, headers) of an endpoint, revealed for the HTTP client: the key and the secret
    headers read from the environment now (as :class:`~agents.secrets.Secret`, registered for
    masking), the configured header values from their secrets."""
    key = "no-key-configured"
    if ep.api_key_env:
        secret = read_secret(ep.api_key_env)
        if secret is None:
            raise LLMConfigError(f"environment variable {ep.api_key_env} (API key of LLM endpoint "
                                 f"{name!r}) is not set")
        key = secret.get_secret_value()
    headers = {h: v.get_secret_value() for h, v in ep.headers.items()}
    for h, env in ep.header_envs.items():
        val = read_secret(env)
        if val is None:
            raise LLMConfigError(f"environment variable {env} (header {h!r} of LLM endpoint {name!r}) is not set")
        headers[h] = val.get_secret_value()
    return key, headers


def server_root(base_url: "str | SecretURL") -> str:
    """``http://host:port/v1`` -> ``http://host:port`` (where /props, /tokenize, /extras live);
    a :class:`~agents.secrets.SecretURL` keeps its userinfo and drops its query."""
    if isinstance(base_url, SecretURL):
        base_url = base_url.connect_url()
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def public_url(base_url: "str | SecretURL") -> str:
    """The base URL without credentials (``user:pass@`` is dropped) and without the query."""
    if isinstance(base_url, SecretURL):
        return base_url.bare
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Capabilities:
    """What one endpoint supports (see module docstring). Secret-free; JSON-able via :meth:`to_dict`.

    Attributes:
        endpoint / model / base_url: which endpoint and model were probed (URL without credentials).
        models: model ids listed by ``GET /models`` (empty when the route is missing).
        json_schema / json_object / json_object_schema: ``yes`` (honoured), ``ignored``
            (accepted, output not constrained), ``rejected`` (HTTP 4xx), ``error``.
        logprobs: ``yes`` / ``ignored`` / ``rejected``; top_logprobs: alternatives returned.
        seed: ``yes`` (same seed -> same text at temperature 1), ``ignored`` (accepted, differs),
            ``rejected``.
        context_length / context_source: tokens, and where the number came from.
        tokenize: path of a tokenizer route (``/extras/tokenize/count``, ``/tokenize``) or None.
        usage: the server reports token usage.
        latency_s: wall time of one short plain call.
    """

    endpoint: str
    model: str
    base_url: str
    models: tuple[str, ...] = ()
    json_schema: Support = "unknown"
    json_object: Support = "unknown"
    json_object_schema: Support = "unknown"
    logprobs: Support = "unknown"
    top_logprobs: int = 0
    seed: Support = "unknown"
    context_length: int | None = None
    context_source: str = "unknown"
    tokenize: str | None = None
    usage: bool = False
    latency_s: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def structured_mode(self) -> StructuredMode:
        """The best way to get JSON for an output model from this endpoint."""
        if self.json_schema == "yes":
            return "json_schema"
        if self.json_object_schema == "yes":
            return "json_object_schema"
        if self.json_object == "yes":
            return "json_object"
        return "text"

    @property
    def model_listed(self) -> bool:
        return not self.models or self.model in self.models

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["structured_mode"] = self.structured_mode
        return d


class _Prober:
    def __init__(self, name: str, ep: EndpointConfig, model: str | None) -> None:
        self.name, self.ep = name, ep
        self.model = model or ep.model
        key, headers = endpoint_headers(name, ep)
        headers = {**headers, "Authorization": f"Bearer {key}", PROBE_HEADER: "1"}
        self.http = httpx2.AsyncClient(headers=headers, params=ep.base_url.query() or None,
                                       timeout=httpx2.Timeout(ep.timeout_s, connect=ep.connect_timeout_s))
        self.base = ep.base_url.connect_url().rstrip("/")
        self.root = server_root(ep.base_url)
        self.notes: list[str] = []

    async def get(self, url: str) -> tuple[int, Any]:
        r = await self.http.get(url)
        try:
            return r.status_code, r.json()
        except ValueError:
            return r.status_code, None

    async def post(self, url: str, body: dict[str, Any]) -> tuple[int, Any]:
        r = await self.http.post(url, json=body)
        try:
            return r.status_code, r.json()
        except ValueError:
            return r.status_code, r.text

    async def chat(self, content: str, **extra: Any) -> tuple[int, Any]:
        body = {"model": self.model, "messages": [{"role": "user", "content": content}],
                "temperature": 0, "max_tokens": 24, **extra}
        return await self.post(f"{self.base}/chat/completions", body)

    @staticmethod
    def content(payload: Any) -> str | None:
        try:
            return payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None

    def note_error(self, what: str, status: int, payload: Any) -> None:
        msg = payload.get("error", payload) if isinstance(payload, dict) else payload
        if isinstance(msg, dict):
            msg = msg.get("message") or msg.get("detail") or json.dumps(msg)[:200]
        one = " ".join(scrub(str(msg)).split()) if msg else ""
        self.notes.append(f"{what}: HTTP {status}: {one[:200]}")


def _json_value(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text.strip())
    except ValueError:
        return None


async def probe_endpoint(name: str, ep: EndpointConfig, model: str | None = None) -> Capabilities:
    """Probe one endpoint (see module docstring). Raises :class:`EndpointUnreachable` when
    nothing answers, :class:`LLMConfigError` for a missing key variable."""
    p = _Prober(name, ep, model)
    found: dict[str, Any] = {}
    try:
        # 1. models (and vLLM's max_model_len / llama.cpp's meta)
        try:
            status, data = await p.get(f"{p.base}/models")
        except httpx2.TransportError as exc:
            raise EndpointUnreachable(f"LLM endpoint {name!r} at {public_url(ep.base_url)} is unreachable: "
                                      f"{type(exc).__name__}: {scrub(str(exc)) or 'no answer'}") from None
        models: list[str] = []
        if status == 200 and isinstance(data, dict):
            for m in data.get("data") or []:
                if isinstance(m, dict) and m.get("id"):
                    models.append(str(m["id"]))
                    if m["id"] == p.model and m.get("max_model_len"):
                        found.update(context_length=int(m["max_model_len"]), context_source="/models max_model_len")
        elif status in (401, 403):
            raise LLMConfigError(f"LLM endpoint {name!r} refused the credentials (HTTP {status}) on GET /models")
        else:
            p.note_error("GET /models", status, data)
        found["models"] = tuple(models)
        # 2. context length and tokenizer routes (server specific; failures are fine)
        await _probe_context(p, found)
        # 3. one plain call: latency and usage
        t0 = time.perf_counter()
        try:
            status, data = await p.chat("Say OK.", max_tokens=4)
        except httpx2.TransportError as exc:
            raise EndpointUnreachable(f"LLM endpoint {name!r} at {public_url(ep.base_url)} does not answer chat "
                                      f"completions: {type(exc).__name__}") from None
        if status != 200:
            p.note_error("plain chat completion", status, data)
            if status in (401, 403, 404):
                raise LLMConfigError(f"LLM endpoint {name!r} answered HTTP {status} to a chat completion for model "
                                     f"{p.model!r}: {p.notes[-1]}")
        else:
            found["latency_s"] = time.perf_counter() - t0
            u = data.get("usage") if isinstance(data, dict) else None
            found["usage"] = bool(u and u.get("prompt_tokens") is not None)
        # 4. structured output
        # "Say OK." rather than "reply with JSON": a server that ignores response_format says OK
        instr = "Say OK."
        status, data = await p.chat(instr, response_format={"type": "json_schema", "json_schema": {
            "name": "probe", "schema": _PROBE_SCHEMA, "strict": True}})
        found["json_schema"] = _schema_support(p, "response_format json_schema", status, data)
        status, data = await p.chat(instr, response_format={"type": "json_object"})
        if status == 200:
            text = (p.content(data) or "").lstrip()
            cut = _finish(data) == "length"      # a grammar-constrained object cut by max_tokens is still JSON mode
            found["json_object"] = "yes" if isinstance(_json_value(text), dict) or (cut and text.startswith("{")) \
                else "ignored"
        else:
            found["json_object"] = _refused(status, data)
            p.note_error("response_format json_object", status, data)
        status, data = await p.chat(instr, response_format={"type": "json_object", "schema": _PROBE_SCHEMA})
        found["json_object_schema"] = _schema_support(p, "response_format json_object + schema", status, data)
        # 5. logprobs
        status, data = await p.chat("Say OK.", max_tokens=1, logprobs=True, top_logprobs=3)
        if status == 200:
            try:
                items = data["choices"][0]["logprobs"]["content"]
            except (KeyError, IndexError, TypeError):
                items = None
            found["logprobs"] = "yes" if items else "ignored"
            found["top_logprobs"] = len(items[0].get("top_logprobs") or []) if items else 0
        else:
            found["logprobs"] = _refused(status, data)
            p.note_error("logprobs", status, data)
        # 6. seed: same seed at temperature 1 -> same text?
        texts = []
        for _ in range(2):
            status, data = await p.chat("Write one random word.", temperature=1.0, seed=4242, max_tokens=4)
            if status != 200:
                found["seed"] = _refused(status, data)
                p.note_error("seed", status, data)
                break
            texts.append(p.content(data))
        else:
            found["seed"] = "yes" if texts[0] == texts[1] else "ignored"
    finally:
        await p.http.aclose()
    if ep.context_length is not None:
        found.update(context_length=ep.context_length, context_source="config (context_length)")
    return Capabilities(endpoint=name, model=p.model, base_url=public_url(ep.base_url), notes=tuple(p.notes),
                        **found)


def _finish(payload: Any) -> str | None:
    try:
        return payload["choices"][0].get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None


def is_validation_error(status: int, message: str) -> bool:
    """A request the server refused to accept: 4xx, or a 5xx whose message is a request
    validation error (llama-cpp-python answers an unknown ``response_format`` type with 500)."""
    if 400 <= status < 500:
        return True
    m = (message or "").lower()
    return status >= 500 and "validation error" in m and ("body" in m or "input should be" in m)


def _refused(status: int, payload: Any) -> Support:
    return "rejected" if is_validation_error(status, json.dumps(payload) if payload is not None else "") else "error"


def _schema_support(p: _Prober, what: str, status: int, data: Any) -> Support:
    if status != 200:
        p.note_error(what, status, data)
        return _refused(status, data)
    value = _json_value(p.content(data))
    return "yes" if isinstance(value, dict) and isinstance(value.get(_PROBE_KEY), bool) else "ignored"


async def _probe_context(p: _Prober, found: dict[str, Any]) -> None:
    try:
        # llama-cpp-python: /extras/tokenize/count (no context length exposed)
        status, data = await p.post(f"{p.root}/extras/tokenize/count", {"input": "hello", "model": p.model})
        if status == 200 and isinstance(data, dict) and "count" in data:
            found["tokenize"] = "/extras/tokenize/count"
            return
        # vLLM: /tokenize returns max_model_len; llama.cpp server: /tokenize + /props n_ctx
        status, data = await p.post(f"{p.root}/tokenize", {"model": p.model, "prompt": "hello", "content": "hello"})
        if status == 200 and isinstance(data, dict) and ("count" in data or "tokens" in data):
            found["tokenize"] = "/tokenize"
            if data.get("max_model_len") and "context_length" not in found:
                found.update(context_length=int(data["max_model_len"]), context_source="/tokenize max_model_len")
        status, data = await p.get(f"{p.root}/props")
        if status == 200 and isinstance(data, dict) and "context_length" not in found:
            n = (data.get("default_generation_settings") or {}).get("n_ctx") or data.get("n_ctx")
            if n:
                found.update(context_length=int(n), context_source="/props n_ctx")
    except httpx2.HTTPError:
        return


async def count_prompt_tokens(ep: EndpointConfig, name: str, caps: Capabilities | None, model: str,
                              messages: list[dict[str, Any]], exact_above: int = 0) -> tuple[int, bool]:
    """(prompt tokens, exact?) of ``messages``: the server's tokenizer route when it has one
    (plus 8 tokens per message for the chat template), else the chars/4 estimate. The
    route is asked only when the estimate exceeds ``exact_above``."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    est = max(1, (len(text) + 3) // 4) + 4 * len(messages)
    if caps is None or caps.tokenize is None or est <= exact_above:
        return est, False
    key, headers = endpoint_headers(name, ep)
    root = server_root(ep.base_url)
    body = ({"input": text, "model": model} if caps.tokenize == "/extras/tokenize/count"
            else {"model": model, "prompt": text, "content": text})
    try:
        async with httpx2.AsyncClient(headers={**headers, "Authorization": f"Bearer {key}", PROBE_HEADER: "1"},
                                      params=ep.base_url.query() or None,
                                      timeout=httpx2.Timeout(ep.timeout_s, connect=ep.connect_timeout_s)) as http:
            r = await http.post(f"{root}{caps.tokenize}", json=body)
        data = r.json()
        n = data.get("count") if "count" in data else len(data.get("tokens") or [])
        return int(n) + 8 * len(messages), True
    except (httpx2.HTTPError, ValueError, AttributeError, TypeError):
        return est, False


__all__ = ["Capabilities", "EndpointUnreachable", "PROBE_HEADER", "context_length_from_error", "count_prompt_tokens",
           "endpoint_headers", "is_validation_error", "probe_endpoint", "public_url", "server_root"]
