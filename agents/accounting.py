"""Accounting: one ``llm_calls`` row per call (cache hit or miss, offline included).

Rows go through the storage layer (``RunStore.append_part("llm_calls", ...)``): each flush
writes one immutable part file atomically (temp + rename), so a kill loses at most the rows
not yet flushed (``flush_every``, default 1: none but the call in progress) and never
writes a partial or duplicated row. At close, the session's parts are compacted into one;
should a kill hit between writing the merged part and deleting the originals, readers
de-duplicate on ``call_id`` (:func:`read_calls`).

Group commit (``commit_interval_s`` set; what :class:`agents.session.LLMSession` does by
default): ``add`` only buffers the row and a background committer thread commits, every
``commit_interval_s`` or as soon as ``flush_every`` calls are pending, first the group-commit
cache's staged entries (:meth:`agents.cache.CallCache.flush`, one sync per batch), then one
part with the rows; ``flush`` does the same synchronously (end of every ``map``, close).
The rows of a batch are taken before its cache entries are committed, so a row is never on
disk without its cache entry; a kill loses at most the calls since the last commit (asked
again once on a rerun, without duplicate rows).

Columns: see ``storage.schemas.LLM_CALLS``. ``prompt_tokens``/``completion_tokens`` are the
response's usage (also on hits, for information); ``cost_usd`` is what the call spent (0 for
cache hits and offline calls). Totals count spend on misses only.
"""
from __future__ import annotations

import datetime as _dt
import itertools
import logging
import operator
import os
import threading
from collections import defaultdict
from dataclasses import dataclass, field, fields
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from storage.schemas import LLM_CALLS
from storage.store import RunStore, StoreError

TABLE = "llm_calls"
log = logging.getLogger("mtr.agents.accounting")


_ID = {"prefix": "", "seq": itertools.count()}


def _reset_ids() -> None:
    _ID["prefix"] = os.urandom(8).hex()
    _ID["seq"] = itertools.count()


_reset_ids()
os.register_at_fork(after_in_child=_reset_ids)   # a forked child never repeats the parent's ids


def new_call_id() -> str:
    """A unique 32-hex-digit id: 64 random bits drawn once per process + a counter (no
    system call per call, unlike ``uuid4``: each one is a point where the event loop's
    thread can lose the GIL to the group committer)."""
    return f"{_ID['prefix']}{next(_ID['seq']):016x}"


@dataclass(slots=True)
class CallRecord:
    """One row of ``llm_calls``."""

    call_id: str
    run_id: str
    role: str
    step: str
    endpoint: str | None
    model: str | None
    backend: str
    prompt_version: str
    cache_key: str | None
    purpose: str = "primary"
    item_id: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cache_hit: bool = False
    retries: int = 0
    error_class: str | None = None
    outcome: str = "ok"
    cost_usd: float | None = 0.0
    created_at: _dt.datetime = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc))

    def row(self) -> dict[str, Any]:
        return dict(zip(RECORD_FIELDS, _record_values(self)))

    def values(self) -> tuple:
        """The field values in :data:`RECORD_FIELDS` order (a cheap snapshot for the buffer)."""
        return _record_values(self)


RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(CallRecord))
_record_values = operator.attrgetter(*RECORD_FIELDS)
_COLUMN_AT = {name: i for i, name in enumerate(RECORD_FIELDS)}
if set(RECORD_FIELDS) != set(LLM_CALLS.names):  # pragma: no cover - caught by any test importing this
    raise RuntimeError("CallRecord fields and storage.schemas.LLM_CALLS columns differ")


def records_table(values: list[tuple]) -> pa.Table:
    """``llm_calls`` table of :meth:`CallRecord.values` tuples, built column by column."""
    cols = list(zip(*values)) if values else [()] * len(RECORD_FIELDS)
    return pa.Table.from_arrays([pa.array(cols[_COLUMN_AT[f.name]], type=f.type) for f in LLM_CALLS],
                                schema=LLM_CALLS)


@dataclass(slots=True)
class RoleTotals:
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    retries: int = 0
    prompt_tokens: int = 0          # misses only (what was spent)
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0         # misses whose model has no price in the config
    latency_s: float = 0.0

    def add(self, r: CallRecord) -> None:
        self.calls += 1
        self.retries += r.retries
        self.latency_s += r.latency_s
        if r.outcome not in ("ok",):
            self.errors += 1
        if r.cache_hit:
            self.cache_hits += 1
            return
        self.prompt_tokens += r.prompt_tokens
        self.completion_tokens += r.completion_tokens
        if r.cost_usd is None:
            if r.backend != "offline":
                self.unpriced_calls += 1
        else:
            self.cost_usd += r.cost_usd

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class CallLog:
    """Buffers :class:`CallRecord` rows and appends them to the run's ``llm_calls`` table.

    Thread-safe. With ``store=None`` rows are only counted (totals), not persisted.
    ``cache``: a group-commit :class:`agents.cache.CallCache` committed together with the
    rows; ``commit_interval_s``: turn on group commit (see module docstring).
    """

    def __init__(self, store: RunStore | None, run_id: str, *, flush_every: int = 1, cache: Any = None,
                 commit_interval_s: float | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.flush_every = max(1, flush_every)
        self.cache = cache if getattr(cache, "group_commit", False) else None
        self.commit_interval_s = commit_interval_s if commit_interval_s and commit_interval_s > 0 else None
        self._buf: list[tuple] = []            # CallRecord.values() of rows not yet written
        self._parts: list[str] = []
        self._lock = threading.Lock()          # buffer, totals, part list
        self._write_lock = threading.Lock()    # one part writer at a time
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.commits = 0                       # group commits that wrote something
        self.totals: dict[str, RoleTotals] = defaultdict(RoleTotals)

    def __repr__(self) -> str:
        return f"CallLog(run_id={self.run_id!r}, parts={len(self._parts)})"

    def add(self, rec: CallRecord) -> None:
        """Count ``rec`` and persist it (with ``flush_every=1`` before returning, unless another
        thread is writing a part right now: that writer picks it up - group commit)."""
        if self.commit_interval_s:
            with self._lock:
                self.totals[rec.role].add(rec)
                if self.store is not None:
                    self._buf.append(rec.values())
                pending = len(self._buf) + (self.cache.pending if self.cache is not None else 0)
                if self._thread is None:
                    self._stopping = False
                    self._thread = threading.Thread(target=self._committer, name="mtr-group-commit", daemon=True)
                    self._thread.start()
            if pending >= self.flush_every:
                self._wake.set()
            return
        with self._lock:
            self.totals[rec.role].add(rec)
            if self.store is None:
                return
            self._buf.append(rec.values())
            if len(self._buf) < self.flush_every:
                return
        self._drain(block=False)

    def flush(self) -> None:
        """Write every buffered row (and staged cache entry) now (waits for a concurrent writer)."""
        if self.commit_interval_s or self.cache is not None:
            self._commit()
            return
        self._drain(block=True)

    def _commit(self) -> None:
        """One group commit: take the rows, commit the cache entries, write the rows."""
        with self._write_lock:
            with self._lock:
                rows, self._buf = self._buf, []
            wrote = self.cache.flush() if self.cache is not None else 0
            if rows and self.store is not None:
                try:
                    part = self.store.append_part(TABLE, records_table(rows))
                except BaseException:
                    with self._lock:              # keep them for the next commit
                        self._buf[:0] = rows
                    raise
                with self._lock:
                    self._parts.append(part)
            if rows or wrote:
                self.commits += 1

    def _committer(self) -> None:
        while True:
            self._wake.wait(self.commit_interval_s)
            self._wake.clear()
            if self._stopping:
                return
            try:
                self._commit()
            except Exception as exc:  # noqa: BLE001 - retried at the next tick; flush() raises
                log.warning("group commit failed (%s: %s); will retry", type(exc).__name__, exc)

    def close(self) -> None:
        """Commit everything and stop the committer thread (a later ``add`` restarts it)."""
        t = self._thread
        if t is not None:
            self._stopping = True
            self._wake.set()
            t.join()
            self._thread = None
        self.flush()

    def _drain(self, *, block: bool) -> None:
        if self.store is None:
            return
        while True:
            if not self._write_lock.acquire(blocking=block):
                return      # the thread holding it re-checks the buffer before leaving
            try:
                while True:
                    with self._lock:
                        rows, self._buf = self._buf, []
                    if not rows:
                        break
                    part = self.store.append_part(TABLE, records_table(rows))
                    with self._lock:
                        self._parts.append(part)
            finally:
                self._write_lock.release()
            with self._lock:   # rows added while we were releasing the write lock
                pending = len(self._buf) >= (1 if block else self.flush_every)
            if not pending:
                return

    def compact(self) -> None:
        """Merge the parts this log wrote into one part (dedupe covers a kill midway).
        Called at close: also stops the group committer."""
        self.close()
        with self._write_lock:
            if self.store is None or len(self._parts) < 2:
                return
            self._parts = [self.store.merge_parts(TABLE, self._parts, LLM_CALLS)]

    def run_totals(self) -> RoleTotals:
        return _sum_totals(self.totals.values())


def _sum_totals(items: Iterable[RoleTotals]) -> RoleTotals:
    out = RoleTotals()
    for t in items:
        for f in out.__dataclass_fields__:
            setattr(out, f, getattr(out, f) + getattr(t, f))
    return out


def read_calls(store: RunStore) -> pa.Table:
    """The run's ``llm_calls`` table, de-duplicated on ``call_id`` (first occurrence kept)."""
    try:
        table = store.read_table(TABLE)
    except StoreError:
        return LLM_CALLS.empty_table()
    if table.num_rows == 0:
        return table
    ids = table.column("call_id").to_pylist()
    seen: set[str] = set()
    keep = []
    for i, cid in enumerate(ids):
        if cid not in seen:
            seen.add(cid)
            keep.append(i)
    if len(keep) == table.num_rows:
        return table
    return table.take(pa.array(keep))


def totals_from_table(table: pa.Table, run_id: str | None = None) -> dict[str, RoleTotals]:
    """Per-role totals from an ``llm_calls`` table (optionally one run only)."""
    if run_id is not None and table.num_rows:
        table = table.filter(pc.equal(table.column("run_id"), run_id))
    out: dict[str, RoleTotals] = defaultdict(RoleTotals)
    for row in table.to_pylist():
        rec = CallRecord(**{k: row.get(k) for k in CallRecord.__dataclass_fields__})
        rec.prompt_tokens = rec.prompt_tokens or 0
        rec.completion_tokens = rec.completion_tokens or 0
        rec.latency_s = rec.latency_s or 0.0
        rec.retries = rec.retries or 0
        out[rec.role].add(rec)
    return dict(out)


def format_totals(totals: dict[str, RoleTotals], title: str = "LLM calls") -> str:
    """A plain-text table: one line per role plus the run total."""
    head = f"{'role':<28}{'calls':>7}{'hits':>7}{'errors':>7}{'retries':>8}{'prompt_tok':>12}{'compl_tok':>11}{'cost_usd':>11}"
    lines = [title, head, "-" * len(head)]

    def line(name: str, t: RoleTotals) -> str:
        cost = f"{t.cost_usd:.4f}" + ("+?" if t.unpriced_calls else "")
        return (f"{name[:27]:<28}{t.calls:>7}{t.cache_hits:>7}{t.errors:>7}{t.retries:>8}"
                f"{t.prompt_tokens:>12}{t.completion_tokens:>11}{cost:>11}")

    for name in sorted(totals):
        lines.append(line(name, totals[name]))
    lines.append("-" * len(head))
    lines.append(line("TOTAL (run)", _sum_totals(totals.values())))
    return "\n".join(lines)
