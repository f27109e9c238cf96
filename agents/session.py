"""Running steps: the one entry point every agent and judge uses.

``LLMSession`` ties together the config, the HTTP client, the cache, the ``llm_calls``
accounting and the budget, for one run::

    async with LLMSession(config, store=RunStore(run_dir)) as llm:
        res = await llm.run(step, inputs, item_id="conv-1:3")     # -> StepResult
        batch = await llm.map(step, list_of_inputs, item_ids=ids)  # -> BatchResult (ordered)
    print(llm.summary())

    batch = run_batch(config, step, inputs, store=run_dir)       # sync wrapper (Prefect tasks)

This module owns the session's life (clients, flush, manifest totals), the budget gate
(per item on the openai backend: raise :class:`BudgetExceeded` once a cap is hit), role
resolution, batching (:meth:`LLMSession.map`) and reporting. How one item then runs
(cache lookup -> request -> cache write -> ``llm_calls`` row -> parse, one repair call) is
:class:`agents.runner.ItemRunner`.
"""
from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any, Literal, Sequence

from agents.accounting import CallLog, RoleTotals, format_totals, read_calls
from agents.budget import Budget
from agents.cache import CallCache
from agents.client import LLMClient
from agents.config import Backend, LLMConfig, ResolvedRole
from agents.errors import BudgetExceeded, LLMConfigError, OfflineBackendMissing
from agents.results import BatchResult, LLMFailure, StepResult
from agents.runner import ItemRunner
from agents.secrets import install_log_scrubbing
from agents.steps import LLMStep
from common.aio import run as aio_run
from storage.store import RunStore, new_run_id

log = logging.getLogger("mtr.agents.session")

_AUTO: Any = object()


def run_spend(store: RunStore, run_id: str) -> tuple[int, float]:
    """(tokens, USD) the run ``run_id`` spent on cache misses, as its ``llm_calls`` table records it."""
    t = read_calls(store)
    tokens, usd = 0, 0.0
    for r in t.select(["run_id", "cache_hit", "prompt_tokens", "completion_tokens", "cost_usd"]).to_pylist():
        if r["run_id"] == run_id and not r["cache_hit"]:
            tokens += (r["prompt_tokens"] or 0) + (r["completion_tokens"] or 0)
            usd += r["cost_usd"] or 0.0
    return tokens, usd


def _run_cache(config: LLMConfig, store: RunStore | None) -> CallCache | None:
    """The cache ``config.cache`` asks for. An object-store run's own cache is in its local directory and
    written through to ``<run>/cache/llm`` on the store; what the store has and this machine lacks (a lost
    worker's calls) is fetched first, so no answered call is asked again."""
    remote = store is not None and store.remote
    d = config.cache.resolve_dir(store.local_dir() if remote else store.path if store is not None else None)
    if d is None:
        return None
    mirror = None
    if remote and not config.cache.dir and config.cache.scope != "shared":
        from storage.run_files import ObjectMirror
        mirror = ObjectMirror(store, "cache", "llm")
        mirror.pull(d)
    return CallCache(d, fsync=config.cache.fsync, group_commit=config.commit_interval_ms > 0, mirror=mirror)


class LLMSession(ItemRunner):
    """One run's access to LLMs (see module docstring).

    Args:
        config: the :class:`LLMConfig`.
        store: run directory (``RunStore`` or path) for ``llm_calls``, the run-scoped cache
            and the manifest; None keeps accounting in memory only.
        run_id: defaults to the store's run id (or a new id).
        backend: force a backend for every role (explicit selection, e.g. ``"offline"``).
        cache: a :class:`CallCache`, None to disable, or auto (from ``config.cache``).
        write_manifest: record totals, stop reason and the resolved config in the manifest.
        print_summary: print the totals table (per role and run) to stderr when closing.
        seed_budget: count what the run's ``llm_calls`` already recorded against the caps (a
            cap per run); False: the caps bound this session's own spend (an allowance the
            caller reserved, :func:`agents.budget.batch_allowance`).
    """

    def __init__(self, config: LLMConfig, *, store: RunStore | str | Path | None = None,
                 run_id: str | None = None, backend: Backend | None = None,
                 cache: CallCache | None = _AUTO, write_manifest: bool = True,
                 print_summary: bool = False, seed_budget: bool = True) -> None:
        install_log_scrubbing()
        self.config = config
        self.store = RunStore(str(store)) if isinstance(store, (str, Path)) else store
        self.run_id = run_id or (self.store.run_id if self.store is not None else new_run_id("llm"))
        self.backend = backend
        if cache is _AUTO:
            cache = _run_cache(config, self.store)
        self.cache = cache
        self.write_manifest = write_manifest
        self.print_summary = print_summary
        self.calls = CallLog(self.store, self.run_id, flush_every=config.accounting_flush_every, cache=cache,
                             commit_interval_s=config.commit_interval_ms / 1000.0)
        spent_t, spent_usd = self._prior_spend() if seed_budget else (0, 0.0)
        self.budget = Budget(config.budget, spent_tokens=spent_t, spent_usd=spent_usd)
        self.client: LLMClient | None = None
        self.stopped_reason: str | None = None
        self._inflight: dict[str, asyncio.Future] = {}
        self._checked_prices: set[str] = set()
        self._resolved: dict[int, tuple[LLMStep, ResolvedRole]] = {}   # id(step) -> (step, resolution)
        self._closed = False

    def __repr__(self) -> str:
        return f"LLMSession(run_id={self.run_id!r}, backend={self.backend!r}, cache={self.cache!r})"

    def _prior_spend(self) -> tuple[int, float]:
        caps = self.config.budget
        if self.store is None or (caps.max_tokens is None and caps.max_usd is None):
            return 0, 0.0
        return run_spend(self.store, self.run_id)

    # -- lifecycle --------------------------------------------------------------------------
    async def __aenter__(self) -> "LLMSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close clients, flush and compact ``llm_calls``, record totals in the manifest."""
        if self._closed:
            return
        self._closed = True
        if self.client is not None:
            await self.client.aclose()
        await asyncio.to_thread(self._finish)

    def _finish(self) -> None:
        self.calls.compact()
        if self.store is not None and self.write_manifest:
            self.store.write_manifest(llm={
                "run_id": self.run_id,
                "config": self.config.public_dict(),
                "totals_by_role": self.totals_by_role(),
                "totals": totals_dict(self.calls.run_totals()),
                "stopped_reason": self.stopped_reason,
            })
        log.info("%s", self.summary())
        if self.print_summary:
            print(self.summary(), file=sys.stderr, flush=True)

    def _client(self) -> LLMClient:
        if self.client is None:
            self.client = LLMClient(self.config)
        return self.client

    # -- reporting --------------------------------------------------------------------------
    def totals(self) -> dict[str, RoleTotals]:
        return dict(self.calls.totals)

    def totals_by_role(self) -> dict[str, dict[str, Any]]:
        """:meth:`totals` as plain dicts (JSON-ready: manifests, task results)."""
        return {role: totals_dict(t) for role, t in self.calls.totals.items()}

    def summary(self) -> str:
        text = format_totals(self.totals(), title=f"LLM calls of run {self.run_id}")
        if self.stopped_reason:
            text += f"\nstopped: {self.stopped_reason}"
        return text

    # -- running ----------------------------------------------------------------------------
    def resolve(self, step: LLMStep) -> ResolvedRole:
        hit = self._resolved.get(id(step))
        if hit is not None and hit[0] is step:   # the config is frozen: once per step and session
            return hit[1]
        resolved = self.config.resolve(step.role or step.name, kind=step.kind, step_sampling=step.sampling,
                                       backend=self.backend)
        if resolved.backend == "offline" and not step.has_offline:
            raise OfflineBackendMissing(f"the offline backend is selected for role {resolved.role!r} but "
                                        f"step {step.name!r} has no offline implementation")
        if resolved.backend == "openai" and self.config.budget.max_usd is not None \
                and resolved.model not in self._checked_prices:
            if self.config.price(resolved.model) is None:
                raise LLMConfigError(f"budget.max_usd is set but model {resolved.model!r} has no price "
                                     "under `prices`; add one or use budget.max_tokens")
            self._checked_prices.add(resolved.model or "")
        self._resolved[id(step)] = (step, resolved)
        return resolved

    async def run(self, step: LLMStep, inputs: Any, *, item_id: str | None = None,
                  sample: int = 0) -> StepResult:
        """Run ``step`` on one input. Raises BudgetExceeded (before starting), LLMFatalError,
        LogprobsUnsupported, config errors; every other problem is a failure in the result."""
        resolved = self.resolve(step)
        if resolved.backend == "offline":
            return await self._run_offline(step, inputs, resolved, item_id)
        try:
            self.budget.check()
        except BudgetExceeded as exc:
            self.stopped_reason = self.stopped_reason or exc.reason
            raise
        return await self._run_openai(step, inputs, resolved, item_id, sample)

    async def map(self, step: LLMStep, inputs: Sequence[Any], *, item_ids: Sequence[str] | None = None,
                  on_budget: Literal["raise", "return"] = "raise", concurrency: int | None = None,
                  samples: Sequence[int] | None = None) -> BatchResult:
        """Run ``step`` over ``inputs`` concurrently; results in input order.

        When the budget is reached, calls in flight finish, no new item starts, rows are
        flushed and (``on_budget="raise"``) :class:`BudgetExceeded` is raised with the partial
        :class:`BatchResult` attached (``.partial``); unstarted items hold ``not_started``
        failures. A fatal error (auth, unknown model) cancels the batch and is re-raised.
        """
        n = len(inputs)
        ids = list(item_ids) if item_ids is not None else [None] * n
        if len(ids) != n:
            raise ValueError("item_ids and inputs differ in length")
        resolved = self.resolve(step)
        results: list[StepResult | None] = [None] * n
        stop: list[str] = []
        it = iter(range(n))

        async def worker() -> None:
            for i in it:
                if stop:
                    return
                try:
                    results[i] = await self.run(step, inputs[i], item_id=ids[i],
                                                sample=samples[i] if samples is not None else 0)
                except BudgetExceeded as exc:
                    stop.append(exc.reason)
                    return

        width = concurrency or (self.config.max_concurrency if resolved.backend == "openai" else 1)
        tasks = [asyncio.create_task(worker()) for _ in range(max(1, min(n, width)))]
        try:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            failed = [t for t in done if not t.cancelled() and t.exception() is not None]
            if failed:
                for t in pending:
                    t.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                raise failed[0].exception()  # type: ignore[misc]
        finally:
            await asyncio.to_thread(self.calls.flush)
        reason = stop[0] if stop else None
        items = [r if r is not None else self._not_started(step, resolved, ids[i], reason or "not run")
                 for i, r in enumerate(results)]
        batch = BatchResult(items=items, stopped_reason=reason)
        if reason:
            self.stopped_reason = reason
            log.warning("batch of %r stopped: %s (%d of %d items not started)", step.name, reason,
                        sum(r is None for r in results), n)
            if on_budget == "raise":
                raise BudgetExceeded(reason, partial=batch)
        return batch

    def _not_started(self, step: LLMStep, resolved: ResolvedRole, item_id: str | None, reason: str) -> StepResult:
        return StepResult(step=step.name, role=resolved.role, backend=resolved.backend,
                          prompt_version=step.prompt_version, model=resolved.model,
                          endpoint=resolved.endpoint_name, raw_prompt=(), raw_output=None,
                          failure=LLMFailure("not_started", f"not started: {reason}", step=step.name,
                                             role=resolved.role),
                          item_id=item_id)


def totals_dict(t: RoleTotals) -> dict[str, Any]:
    """One :class:`RoleTotals` as a plain dict (field -> value)."""
    return {f: getattr(t, f) for f in t.__dataclass_fields__}


def run_batch(config: LLMConfig, step: LLMStep, inputs: Sequence[Any], *,
              store: RunStore | str | Path | None = None, item_ids: Sequence[str] | None = None,
              backend: Backend | None = None, on_budget: Literal["raise", "return"] = "raise",
              **session_kwargs: Any) -> BatchResult:
    """Synchronous wrapper: one session, one batch (for Prefect tasks and scripts)."""
    async def main() -> BatchResult:
        async with LLMSession(config, store=store, backend=backend, **session_kwargs) as llm:
            return await llm.map(step, inputs, item_ids=item_ids, on_budget=on_budget)
    return aio_run(main())
