"""The HTTP side of the LLM layer: :class:`LLMClient`, one async ``openai`` client per
endpoint, bounded concurrency, retries, timeouts, structured-output negotiation.

Contract (after YourBench's inference core): bounded execution with explicit failures.

* Concurrency: a bounded semaphore per endpoint plus one global limit; a request holds
  both only while it is on the wire. Backoff sleeps happen with both released, so a
  rate-limited request does not block the others.
* Retries: only timeouts (per-attempt deadline = ``timeout_s``), connection errors and
  HTTP 408/409/429/5xx (:mod:`agents.transport`), at most ``retry.max_attempts`` attempts,
  capped exponential backoff with jitter; a ``Retry-After``/``retry-after-ms`` header is
  honoured (capped). The SDK's own retries are off (``max_retries=0``).
* Non-retryable: 401/403/404 raise :class:`LLMFatalError` (every call would fail alike);
  other 4xx raise :class:`~agents.completion.CallFailed` (``api_error``) for this request
  only. A 400 that names ``response_format``/``json_schema`` downgrades the endpoint to plain
  text with the schema in the prompt (:mod:`agents.structured`); one that names ``logprobs``
  raises :class:`LogprobsUnsupported`; one that says the prompt exceeds the context
  (``ContextLengthExceeded``) teaches the client the endpoint's context length, so longer
  prompts are refused before sending.
* Capabilities: an endpoint with ``probe: true`` is probed once, before its first request
  (:mod:`agents.capabilities`); the client then uses its best structured-output mode, fails
  logprob requests it cannot answer fast, drops a rejected ``seed``, and refuses prompts that
  do not fit the context (``context_length`` in the config, or the probed value).
* Secrets: keys are read from the environment when the client is built, registered for
  scrubbing, and never appear in reprs or error messages.

What a call sends and gets back is :mod:`agents.completion`.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx2
import openai

from agents.capabilities import Capabilities, count_prompt_tokens, endpoint_headers, probe_endpoint
from agents.completion import CallFailed, CallResult, ChatRequest, Completion, read_completion
from agents.config import EndpointConfig, LLMConfig
from agents.errors import LogprobsUnsupported, error_details
from agents.structured import rejects_response_format, request_body, with_schema_in_prompt
from agents.transport import Transient, backoff_delay, classify_error, transport_kwargs, unmask_connection_error

log = logging.getLogger("mtr.agents.client")


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
        # credentials revealed here only: userinfo in the URL (Basic auth), the query of base_url as
        # request parameters (a query inside base_url would end up before /chat/completions)
        url = ep.base_url.connect_url()
        c = openai.AsyncOpenAI(
            base_url=url, api_key=key, max_retries=0, default_headers=headers or None,
            default_query=ep.base_url.query() or None,
            timeout=timeout, **transport_kwargs(self.config.http_client, url, timeout))
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
            msgs = with_schema_in_prompt(msgs, req.schema)
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
        caps = self._caps.get(req.endpoint)
        return request_body(req, self._mode[req.endpoint], strict_schema=ep.strict_schema,
                            drop_seed=caps is not None and caps.seed == "rejected")

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
        return read_completion(resp, req)

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
                if not downgraded and rejects_response_format(exc, req, self._mode[req.endpoint]):
                    downgraded = True
                    self._mode[req.endpoint] = "text"
                    log.warning("endpoint %r rejected response_format; falling back to JSON in plain text",
                                req.endpoint)
                    continue
                final = classify_error(exc, req, self._ctx_learned)
                if not isinstance(final, Transient):
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
