"""The HTTP side of the LLM layer: one async ``openai`` client per endpoint, bounded
concurrency, retries, timeouts, structured-output negotiation.

Contract (after YourBench's inference core): bounded execution with explicit failures.

* Concurrency: a bounded semaphore per endpoint plus one global limit; a request holds
  both only while it is on the wire. Backoff sleeps happen with both released, so a
  rate-limited request does not block the others.
* Retries: only timeouts (per-attempt deadline = ``timeout_s``), connection errors and
  HTTP 408/409/429/5xx (:data:`TRANSIENT_STATUS`; not a 5xx that is a request validation
  error, as llama-cpp-python sends for an unknown ``response_format``), at most ``retry.max_attempts`` attempts,
  capped exponential backoff with jitter; a ``Retry-After``/``retry-after-ms`` header is
  honoured (capped). The SDK's own retries are off (``max_retries=0``).
* Non-retryable: 401/403/404 raise :class:`LLMFatalError` (every call would fail alike);
  other 4xx raise :class:`CallFailed` (``api_error``) for this request only. A 400 that
  names ``response_format``/``json_schema`` downgrades the endpoint to plain text with the
  schema in the prompt; one that names ``logprobs`` raises :class:`LogprobsUnsupported`;
  one that says the prompt exceeds the context (``ContextLengthExceeded``) teaches the
  client the endpoint's context length, so longer prompts are refused before sending.
* Capabilities: an endpoint with ``probe: true`` is probed once, before its first request
  (:mod:`agents.capabilities`); the client then uses its best structured-output mode, fails
  logprob requests it cannot answer fast, drops a rejected ``seed``, and refuses prompts that
  do not fit the context (``context_length`` in the config, or the probed value).
* Secrets: keys are read from the environment when the client is built, registered for
  scrubbing, and never appear in reprs or error messages.
"""
from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any

import openai
import httpx2

from agents.capabilities import (Capabilities, context_length_from_error, count_prompt_tokens, endpoint_headers,
                                 is_validation_error, probe_endpoint)
from agents.config import EndpointConfig, LLMConfig, RetryConfig
from agents.errors import LLMError, LLMFatalError, LogprobsUnsupported, error_details
from agents.results import TokenLogprob, Usage
from agents.secrets import scrub, scrub_known

log = logging.getLogger("mtr.agents.client")

TRANSIENT_STATUS = frozenset({408, 409, 429})  # plus every 5xx
FATAL_STATUS = frozenset({401, 403, 404})


def estimate_tokens(text: str) -> int:
    """Offline token estimate: ~4 characters per token (see docs/stack.md, tiktoken note)."""
    return max(1, (len(text) + 3) // 4) if text else 0


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat-completion request, secret-free."""

    endpoint: str
    model: str
    messages: list[dict[str, Any]]
    sampling: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    schema_name: str = "output"
    logprobs: bool = False
    top_logprobs: int | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """What a call returned; also the payload stored in the cache."""

    content: str | None
    refusal: str | None
    finish_reason: str | None
    model: str | None
    usage: Usage
    logprobs: tuple[TokenLogprob, ...] | None = None

    def to_payload(self) -> dict[str, Any]:
        return {
            "content": self.content, "refusal": self.refusal, "finish_reason": self.finish_reason,
            "model": self.model,
            "usage": {"prompt_tokens": self.usage.prompt_tokens,
                      "completion_tokens": self.usage.completion_tokens,
                      "estimated": self.usage.estimated},
            "logprobs": None if self.logprobs is None else
            [[t.token, t.logprob, [list(x) for x in t.top]] for t in self.logprobs],
        }

    @classmethod
    def from_payload(cls, d: dict[str, Any]) -> "Completion":
        u = d.get("usage") or {}
        lp = d.get("logprobs")
        return cls(content=d.get("content"), refusal=d.get("refusal"),
                   finish_reason=d.get("finish_reason"), model=d.get("model"),
                   usage=Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0),
                               bool(u.get("estimated"))),
                   logprobs=None if lp is None else tuple(
                       TokenLogprob(t[0], float(t[1]), tuple((a, float(b)) for a, b in t[2])) for t in lp))


@dataclass(frozen=True, slots=True)
class CallResult:
    completion: Completion
    retries: int
    latency_s: float


class CallFailed(LLMError):
    """A request could not be answered (retries exhausted or a non-retryable 4xx)."""

    def __init__(self, kind: str, message: str, *, error_class: str | None, status_code: int | None,
                 retries: int, latency_s: float) -> None:
        self.kind, self.error_class, self.status_code = kind, error_class, status_code
        self.retries, self.latency_s = retries, latency_s
        super().__init__(message)


class _Transient(Exception):
    def __init__(self, exc: BaseException, retry_after: float | None) -> None:
        self.exc, self.retry_after = exc, retry_after


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (number or HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        ra = headers.get("retry-after")
    except Exception:  # pragma: no cover - exotic header containers
        return None
    if ra is None:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def backoff_delay(attempt: int, cfg: RetryConfig, retry_after: float | None = None,
                  rng: random.Random | None = None) -> float:
    """Delay before attempt ``attempt + 1`` (``attempt`` counts from 0)."""
    if retry_after is not None:
        return min(retry_after, cfg.max_retry_after_s)
    base = min(cfg.backoff_max_s, cfg.backoff_base_s * (2 ** attempt))
    if cfg.jitter:
        base *= (rng or random).uniform(0.5, 1.0)
    return base


def _schema_instruction(schema: dict[str, Any]) -> str:
    return ("\n\nRespond with only a JSON object (no prose, no code fences) that conforms to "
            "this JSON schema:\n" + json.dumps(schema, ensure_ascii=False))


def _with_schema_in_prompt(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = [dict(m) for m in messages]
    for m in reversed(msgs):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            m["content"] = m["content"] + _schema_instruction(schema)
            return msgs
    msgs.append({"role": "user", "content": _schema_instruction(schema).strip()})
    return msgs


def transport_kwargs(http_client: str, base_url: str, timeout: Any = None) -> dict[str, Any]:
    """``AsyncOpenAI`` keyword arguments for the ``llm.http_client`` transport: the SDK's
    ``DefaultAioHttpClient`` for "aiohttp", nothing (the SDK's httpx2 default) for "httpx".
    aiohttp refuses credentials in the URL next to the SDK's Authorization header: such an
    endpoint keeps the httpx transport (it sends them as the SDK always has)."""
    if http_client != "aiohttp" or httpx2.URL(base_url).userinfo:
        return {}
    return {"http_client": openai.DefaultAioHttpClient(**({"timeout": timeout} if timeout is not None else {}))}


def _text_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def unmask_connection_error(exc: BaseException) -> BaseException:
    """The aiohttp transport maps every ``aiohttp.ClientConnectionError`` (a refused connection,
    an unknown host, a dropped socket) to ``httpx.ConnectTimeout``, so the SDK raises
    ``APITimeoutError`` for a server that is not there. Give such an error back its own name
    (``APIConnectionError``, the httpx transport's answer); a real timeout stays a timeout."""
    if not isinstance(exc, openai.APITimeoutError):
        return exc
    cause: BaseException | None = exc.__cause__
    while cause is not None:
        mod = type(cause).__module__
        if mod.startswith("aiohttp") and not isinstance(cause, (TimeoutError, asyncio.TimeoutError)):
            err = openai.APIConnectionError(message=f"Connection error: {cause}", request=exc.request)
            err.__cause__ = cause
            return err
        cause = cause.__cause__
    return exc


class LLMClient:
    """Owns the per-endpoint ``AsyncOpenAI`` clients and the concurrency limits.

    Use inside one event loop; close with :meth:`aclose` (the session does it).

    Attributes:
        in_flight / max_in_flight: requests on the wire now / at most so far.
    """

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._clients: dict[str, openai.AsyncOpenAI] = {}
        self._ep_sem: dict[str, asyncio.BoundedSemaphore] = {}
        self._global = asyncio.BoundedSemaphore(config.max_concurrency)
        self._mode: dict[str, str] = {n: e.structured_output for n, e in config.endpoints.items()}
        self._caps: dict[str, Capabilities] = {}
        self._probe_locks: dict[str, asyncio.Lock] = {}
        self._ctx_learned: dict[str, int] = {}
        self.probes_sent = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests_sent = 0

    def __repr__(self) -> str:
        return f"LLMClient(endpoints={sorted(self.config.endpoints)})"

    # -- clients --------------------------------------------------------------------------
    def _client(self, name: str) -> openai.AsyncOpenAI:
        c = self._clients.get(name)
        if c is not None:
            return c
        ep = self.config.endpoints[name]
        key, headers = endpoint_headers(name, ep)
        timeout = httpx2.Timeout(ep.timeout_s, connect=ep.connect_timeout_s)
        c = openai.AsyncOpenAI(
            base_url=ep.base_url, api_key=key, max_retries=0, default_headers=headers or None,
            timeout=timeout, **transport_kwargs(self.config.http_client, ep.base_url, timeout))
        self._clients[name] = c
        return c

    def _sem(self, name: str) -> asyncio.BoundedSemaphore:
        s = self._ep_sem.get(name)
        if s is None:
            s = self._ep_sem[name] = asyncio.BoundedSemaphore(self.config.endpoints[name].max_concurrency)
        return s

    def endpoint_mode(self, name: str) -> str:
        return self._mode[name]

    # -- capabilities ---------------------------------------------------------------------
    async def capabilities(self, name: str) -> Capabilities:
        """The endpoint's probed capabilities (probed once per client, i.e. per run)."""
        caps = self._caps.get(name)
        if caps is not None:
            return caps
        lock = self._probe_locks.setdefault(name, asyncio.Lock())
        async with lock:
            caps = self._caps.get(name)
            if caps is None:
                ep = self.config.endpoints[name]
                self.probes_sent += 1
                caps = await probe_endpoint(name, ep)
                self._caps[name] = caps
                self._mode[name] = caps.structured_mode
                log.info("endpoint %r probed: structured output %s, logprobs %s, seed %s, context %s (%s)", name,
                         caps.structured_mode, caps.logprobs, caps.seed, caps.context_length, caps.context_source)
        return caps

    def context_length(self, name: str) -> tuple[int | None, str]:
        """(tokens, source) of the endpoint's context: config > probe > learned from a 400."""
        ep = self.config.endpoints[name]
        if ep.context_length is not None:
            return ep.context_length, "config context_length"
        caps = self._caps.get(name)
        if caps is not None and caps.context_length is not None:
            return caps.context_length, caps.context_source
        if name in self._ctx_learned:
            return self._ctx_learned[name], "learned from the server's error"
        return None, "unknown"

    async def _check_context(self, req: ChatRequest, ep: EndpointConfig) -> None:
        ctx, source = self.context_length(req.endpoint)
        if ctx is None:
            return
        msgs = req.messages
        if req.schema is not None and self._mode[req.endpoint] in ("json_object", "text"):
            msgs = _with_schema_in_prompt(msgs, req.schema)
        reserve = int(req.sampling.get("max_tokens") or 1)
        n, exact = await count_prompt_tokens(ep, req.endpoint, self._caps.get(req.endpoint), req.model, msgs,
                                             exact_above=(ctx - reserve) // 2)
        if n + reserve > ctx:
            what = "tokens" if exact else "tokens (estimated at 4 characters per token)"
            raise CallFailed("api_error", f"prompt of {n} {what} plus max_tokens {reserve} exceeds the context "
                             f"length {ctx} of endpoint {req.endpoint!r} ({source}); not sent",
                             error_class="ContextLengthExceeded", status_code=None, retries=0, latency_s=0.0)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            try:
                await c.close()
            except Exception:  # pragma: no cover - closing is best effort
                pass

    # -- one request ----------------------------------------------------------------------
    def _kwargs(self, req: ChatRequest, ep: EndpointConfig) -> dict[str, Any]:
        mode = self._mode[req.endpoint]
        messages = req.messages
        kw: dict[str, Any] = {"model": req.model, **req.sampling}
        caps = self._caps.get(req.endpoint)
        if caps is not None and caps.seed == "rejected":
            kw.pop("seed", None)
        if req.schema is not None:
            if mode == "json_schema":
                kw["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": req.schema_name, "schema": req.schema, "strict": ep.strict_schema}}
            elif mode == "json_object_schema":
                kw["response_format"] = {"type": "json_object", "schema": req.schema}
            else:
                messages = _with_schema_in_prompt(messages, req.schema)
                if mode == "json_object":
                    kw["response_format"] = {"type": "json_object"}
        if req.logprobs:
            kw["logprobs"] = True
            if req.top_logprobs:
                kw["top_logprobs"] = req.top_logprobs
        kw["messages"] = messages
        return kw

    async def _attempt(self, req: ChatRequest, ep: EndpointConfig) -> Completion:
        client = self._client(req.endpoint)
        body = self._kwargs(req, ep)
        async with self._sem(req.endpoint), self._global:
            self.in_flight += 1
            self.requests_sent += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                async with asyncio.timeout(ep.timeout_s):
                    # the SDK's documented low-level POST with the body already plain JSON (str
                    # messages and schema): the same bytes on the wire and the same auth, errors
                    # and status handling as ``chat.completions.create``, without its recursive
                    # typed transform of the params and its response model (the largest
                    # client-side CPU costs per call at concurrency 64; benchmarks/synthesis.py --profile)
                    resp = await client.post("/chat/completions", cast_to=dict, body=body)
            finally:
                self.in_flight -= 1
        return self._completion(resp, req)

    def _completion(self, resp: Any, req: ChatRequest) -> Completion:
        """A ``chat.completion`` JSON object (a dict, as the SDK returns it for ``cast_to=dict``)."""
        if not isinstance(resp, dict):
            raise CallFailed("api_error", f"the server's response is not a JSON object ({scrub(str(resp))[:200]!r})",
                             error_class="InvalidResponse", status_code=None, retries=0, latency_s=0.0)
        choices = resp.get("choices") or []
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise CallFailed("api_error", "the server returned no choices", error_class="EmptyResponse",
                             status_code=None, retries=0, latency_s=0.0)
        ch = choices[0]
        msg = ch.get("message") if isinstance(ch.get("message"), dict) else {}
        # a model echoing a key (prompt injection, a leaky proxy) must not put it on disk
        content = scrub_known(_text_or_none(msg.get("content")))
        refusal = scrub_known(_text_or_none(msg.get("refusal")))
        u = resp.get("usage") if isinstance(resp.get("usage"), dict) else None
        if u is not None and u.get("prompt_tokens") is not None:
            usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
        else:
            ptext = "".join(str(m.get("content", "")) for m in req.messages)
            usage = Usage(estimate_tokens(ptext), estimate_tokens(content or refusal or ""), True)
        lps: tuple[TokenLogprob, ...] | None = None
        if req.logprobs:
            lp = ch.get("logprobs")
            items = lp.get("content") if isinstance(lp, dict) else None
            if items is None and refusal is None:
                raise LogprobsUnsupported(req.endpoint, req.model, "the response carries no logprobs")
            lps = tuple(
                TokenLogprob(t["token"], float(t["logprob"]),
                             tuple((x["token"], float(x["logprob"])) for x in (t.get("top_logprobs") or ())))
                for t in (items or ()))
        model = resp.get("model")
        return Completion(content=content, refusal=refusal, finish_reason=ch.get("finish_reason"),
                          model=model if isinstance(model, str) else None, usage=usage, logprobs=lps)

    def _classify(self, exc: BaseException, req: ChatRequest) -> BaseException:
        """Map an exception of one attempt to _Transient or a final error."""
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError, openai.APITimeoutError)):
            return _Transient(exc, None)
        if isinstance(exc, openai.APIConnectionError):
            return _Transient(exc, None)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if status in TRANSIENT_STATUS or (status >= 500 and not is_validation_error(status, str(exc))):
                return _Transient(exc, retry_after_seconds(getattr(exc.response, "headers", None)))
            d = error_details(exc)
            text = d["message"].lower()
            if status in FATAL_STATUS:
                return LLMFatalError(f"LLM endpoint {req.endpoint!r} answered HTTP {status} "
                                     f"({d['error_class']}): {d['message']}")
            if req.logprobs and "logprob" in text:
                return LogprobsUnsupported(req.endpoint, req.model, d["message"])
            ctx = context_length_from_error(d["message"])
            if ctx is not None and status in (400, 413, 422):
                self._ctx_learned[req.endpoint] = ctx
                return CallFailed("api_error", f"the prompt does not fit the context ({ctx} tokens) of endpoint "
                                  f"{req.endpoint!r}: {d['message']}", error_class="ContextLengthExceeded",
                                  status_code=status, retries=0, latency_s=0.0)
            return CallFailed("api_error", d["message"], error_class=d["error_class"], status_code=status,
                              retries=0, latency_s=0.0)
        if isinstance(exc, (LLMError,)):
            return exc
        if isinstance(exc, openai.OpenAIError):
            d = error_details(exc)
            return CallFailed("api_error", d["message"], error_class=d["error_class"], status_code=None,
                              retries=0, latency_s=0.0)
        return exc

    def _should_downgrade(self, exc: BaseException, req: ChatRequest) -> bool:
        if req.schema is None or self._mode[req.endpoint] == "text":
            return False
        if isinstance(exc, openai.APIStatusError) and (exc.status_code in (400, 422)
                                                        or is_validation_error(exc.status_code, str(exc))):
            text = scrub(str(exc)).lower()
            return any(w in text for w in ("response_format", "json_schema", "json_object", "response format"))
        return False

    async def complete(self, req: ChatRequest) -> CallResult:
        """Send ``req`` with retries; raise CallFailed / LLMFatalError / LogprobsUnsupported."""
        ep = self.config.endpoints[req.endpoint]
        if req.logprobs and not ep.supports_logprobs:
            raise LogprobsUnsupported(req.endpoint, req.model, "supports_logprobs is false in the config")
        if ep.probe:
            caps = await self.capabilities(req.endpoint)
            if req.logprobs and caps.logprobs != "yes":
                raise LogprobsUnsupported(req.endpoint, req.model, f"the probe found logprobs {caps.logprobs}")
        await self._check_context(req, ep)
        cfg = self.config.retry
        t0 = time.perf_counter()
        retries = 0
        attempt = 0
        downgraded = False
        while True:
            try:
                comp = await self._attempt(req, ep)
                return CallResult(comp, retries, time.perf_counter() - t0)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - classified below
                exc = unmask_connection_error(exc)
                if not downgraded and self._should_downgrade(exc, req):
                    downgraded = True
                    self._mode[req.endpoint] = "text"
                    log.warning("endpoint %r rejected response_format; falling back to JSON in plain text",
                                req.endpoint)
                    continue
                final = self._classify(exc, req)
                if not isinstance(final, _Transient):
                    if isinstance(final, CallFailed):
                        final.retries, final.latency_s = retries, time.perf_counter() - t0
                    if final is exc:
                        raise
                    raise final from None
                attempt += 1
                if attempt >= cfg.max_attempts:
                    d = error_details(final.exc)
                    raise CallFailed("retries_exhausted",
                                     f"{attempt} attempts failed; last: {d['error_class']}: {d['message']}",
                                     error_class=d["error_class"], status_code=d["status_code"],
                                     retries=retries, latency_s=time.perf_counter() - t0) from None
                delay = backoff_delay(attempt - 1, cfg, final.retry_after)
                log.info("transient %s from %r (attempt %d/%d); retrying in %.3fs",
                         type(final.exc).__name__, req.endpoint, attempt, cfg.max_attempts, delay)
                retries += 1
                await asyncio.sleep(delay)   # both semaphores are released here
