"""How a request travels and when it is tried again: the ``AsyncOpenAI`` transport of
``llm.http_client`` (:func:`transport_kwargs`), the classification of one attempt's error
(:func:`classify_error`: :class:`Transient`, retried; or the final error), and the wait before
the next attempt (:func:`backoff_delay`, honouring ``Retry-After``).

Retried: timeouts, connection errors and HTTP 408/409/429/5xx (:data:`TRANSIENT_STATUS`; not a
5xx that is a request validation error, as llama-cpp-python sends for an unknown
``response_format``). 401/403/404 are :class:`LLMFatalError` (every call would fail alike);
other 4xx are a :class:`CallFailed` (``api_error``) of this request only.
"""
from __future__ import annotations

import asyncio
import email.utils
import random
import time
from typing import Any

import httpx2
import openai

from agents.capabilities import context_length_from_error, is_validation_error
from agents.completion import CallFailed, ChatRequest
from agents.config import RetryConfig
from agents.errors import LLMError, LLMFatalError, LogprobsUnsupported, error_details

TRANSIENT_STATUS = frozenset({408, 409, 429})  # plus every 5xx
FATAL_STATUS = frozenset({401, 403, 404})


class Transient(Exception):
    """A retryable error of one attempt, with the server's ``Retry-After`` (seconds) if any."""

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


def transport_kwargs(http_client: str, base_url: str, timeout: Any = None) -> dict[str, Any]:
    """``AsyncOpenAI`` keyword arguments for the ``llm.http_client`` transport: the SDK's
    ``DefaultAioHttpClient`` for "aiohttp", nothing (the SDK's httpx2 default) for "httpx".
    aiohttp refuses credentials in the URL next to the SDK's Authorization header: such an
    endpoint keeps the httpx transport (it sends them as the SDK always has)."""
    if http_client != "aiohttp" or httpx2.URL(base_url).userinfo:
        return {}
    return {"http_client": openai.DefaultAioHttpClient(**({"timeout": timeout} if timeout is not None else {}))}


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


def classify_error(exc: BaseException, req: ChatRequest, learned_context: dict[str, int]) -> BaseException:
    """Map an exception of one attempt to :class:`Transient` or a final error. A 400/413/422
    that says the prompt exceeds the context records the endpoint's context length in
    ``learned_context`` (endpoint -> tokens)."""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, openai.APITimeoutError)):
        return Transient(exc, None)
    if isinstance(exc, openai.APIConnectionError):
        return Transient(exc, None)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in TRANSIENT_STATUS or (status >= 500 and not is_validation_error(status, str(exc))):
            return Transient(exc, retry_after_seconds(getattr(exc.response, "headers", None)))
        d = error_details(exc)
        text = d["message"].lower()
        if status in FATAL_STATUS:
            return LLMFatalError(f"LLM endpoint {req.endpoint!r} answered HTTP {status} "
                                 f"({d['error_class']}): {d['message']}")
        if req.logprobs and "logprob" in text:
            return LogprobsUnsupported(req.endpoint, req.model, d["message"])
        ctx = context_length_from_error(d["message"])
        if ctx is not None and status in (400, 413, 422):
            learned_context[req.endpoint] = ctx
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
