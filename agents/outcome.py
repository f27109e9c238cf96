"""The outcome of one command's LLM calls: how many reached an answer, the main cause of the
failures, and whether the command must fail.

A command that spends LLM calls (``mtr synthesize``, ``mtr audit``) reads the ``llm_calls`` rows
it wrote (:func:`call_outcome`: rows created since it started, offline calls left out; cache hits
count as answered) and hands the result to :meth:`CallOutcome.check`: when every call failed, or
more than ``max_failure_rate`` of them, it raises :class:`CallsFailed` (a
:class:`~common.errors.UserError`: one line, exit code 2) naming the cause, e.g.
``endpoint unreachable: connection refused at http://127.0.0.1:9/v1; 0 of 25 calls succeeded``.
Otherwise :meth:`CallOutcome.summary` is the line to print (partial failures included).
"""
from __future__ import annotations

import datetime as _dt
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

import pyarrow.compute as pc

from agents.accounting import read_calls
from agents.secrets import scrub
from common.errors import UserError
from storage.store import RunStore


class CallsFailed(UserError):
    """Every LLM call of a command failed, or more than the allowed share."""


_CONNECTION = [(re.compile(r"refused|connect call failed|errno 111", re.I), "connection refused"),
               (re.compile(r"name or service not known|nodename nor servname|getaddrinfo|name resolution|"
                           r"no address associated", re.I), "host not found"),
               (re.compile(r"timed? ?out", re.I), "timed out"),
               (re.compile(r"ssl|certificate", re.I), "TLS handshake failed")]


@dataclass(frozen=True)
class CallOutcome:
    """Counts of one command's endpoint calls (``ok`` = an answer was parsed, or a cache hit)."""

    calls: int = 0
    ok: int = 0
    failed_by_class: dict[str, int] = field(default_factory=dict)
    cause: str | None = None         # the main failure, as a phrase naming the endpoint's address

    @property
    def failed(self) -> int:
        return self.calls - self.ok

    @property
    def failure_rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0

    def summary(self) -> str | None:
        """One line for the user: ``LLM calls: 27 of 29 succeeded; 2 failed (...)``; None without calls."""
        if not self.calls:
            return None
        line = f"LLM calls: {self.ok} of {self.calls} succeeded"
        if self.failed:
            line += f"; {self.failed} failed ({self.failure_rate:.0%})"
            if len(self.failed_by_class) > 1:
                kinds = sorted(self.failed_by_class.items(), key=lambda kv: -kv[1])
                line += f" - {', '.join(f'{n} {k}' for k, n in kinds)}; mostly"
            line += f": {self.cause}"
        return line

    def check(self, max_failure_rate: float | None = None) -> None:
        """Raise :class:`CallsFailed` when every call failed, or more than ``max_failure_rate`` (0..1)."""
        if not self.calls or not self.failed:
            return
        if not self.ok:
            raise CallsFailed(f"{self.cause}; 0 of {self.calls} calls succeeded")
        if max_failure_rate is not None and self.failure_rate > max_failure_rate:
            raise CallsFailed(f"{self.failed} of {self.calls} LLM calls failed ({self.failure_rate:.0%}), above "
                              f"--max-failure-rate {max_failure_rate:g}: {self.cause}")


def _address(llm_config: Any, endpoint: str | None) -> str:
    eps = getattr(llm_config, "endpoints", None) or {}
    ep = eps.get(endpoint) if endpoint else None
    url = getattr(ep, "base_url", None)
    return scrub(str(url)) if url else f"endpoint {endpoint!r}" if endpoint else "the LLM endpoint"


def _cause(error_class: str, where: str, messages: Iterable[str]) -> str:
    if error_class in ("APIConnectionError", "ConnectError", "ClientConnectorError", "ConnectionError"):
        text = " ".join(m for m in messages if m)
        detail = next((what for rx, what in _CONNECTION if rx.search(text)), "connection failed")
        return f"endpoint unreachable: {detail} at {where}"
    if error_class in ("APITimeoutError", "TimeoutError", "ReadTimeout"):
        return f"endpoint timed out at {where}"
    if error_class == "Refusal":
        return f"the model at {where} refused"
    if error_class in ("OutputInvalid", "ValidationError", "ValueError", "JSONDecodeError"):
        return f"the answers from {where} could not be parsed ({error_class})"
    return f"{error_class} from {where}"


def call_outcome(store: RunStore | str, since: _dt.datetime, llm_config: Any = None,
                 messages: Iterable[str] = ()) -> CallOutcome:
    """The outcome of the endpoint calls written to ``store``'s ``llm_calls`` since ``since``
    (offline calls left out). ``messages``: failure messages of the items (the ``failures`` table,
    ``audit_scores.failure_message``) that tell a refused connection from an unknown host."""
    store = store if isinstance(store, RunStore) else RunStore(str(store))
    table = read_calls(store)
    if table.num_rows:
        since = since if since.tzinfo else since.replace(tzinfo=_dt.timezone.utc)
        table = table.filter(pc.and_(pc.greater_equal(table.column("created_at"), since),
                                     pc.not_equal(table.column("backend"), "offline")))
    rows = table.select(["outcome", "error_class", "endpoint"]).to_pylist() if table.num_rows else []
    failed = [r for r in rows if r["outcome"] != "ok"]
    by_class = Counter(r["error_class"] or r["outcome"] or "error" for r in failed)
    cause = None
    if failed:
        top = by_class.most_common(1)[0][0]
        endpoint = Counter(r["endpoint"] for r in failed
                           if (r["error_class"] or r["outcome"] or "error") == top).most_common(1)[0][0]
        cause = _cause(top, _address(llm_config, endpoint), messages)
    return CallOutcome(calls=len(rows), ok=len(rows) - len(failed), failed_by_class=dict(by_class), cause=cause)
