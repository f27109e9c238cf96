"""Running steps: the one entry point every agent and judge uses.

``LLMSession`` ties together the config, the HTTP client, the cache, the ``llm_calls``
accounting and the budget, for one run::

    async with LLMSession(config, store=RunStore(run_dir)) as llm:
        res = await llm.run(step, inputs, item_id="conv-1:3")     # -> StepResult
        batch = await llm.map(step, list_of_inputs, item_ids=ids)  # -> BatchResult (ordered)
    print(llm.summary())

    batch = run_batch(config, step, inputs, store=run_dir)       # sync wrapper (Prefect tasks)

Per item (openai backend): budget check (raise :class:`BudgetExceeded` once a cap is hit)
-> build messages -> cache lookup (key: model, sampling, messages, schema, logprob options,
prompt version, sample) -> on a miss, the request (retries, limits) -> cache write ->
``llm_calls`` row -> parse/validate; an invalid answer gets one repair call that shows the
model its validation error; still invalid -> an explicit ``invalid_output`` failure with
both raw outputs. A refusal is a ``refusal`` failure. Failed HTTP calls are not cached (a
rerun tries them again); answered ones are, valid or not, so a rerun replays the same
chain with zero requests.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any, Literal, Sequence

from agents.accounting import CallLog, CallRecord, RoleTotals, format_totals, new_call_id, read_calls
from agents.budget import Budget
from agents.cache import CallCache, cache_key
from agents.client import LLMClient
from agents.completion import CallFailed, ChatRequest, Completion
from agents.config import Backend, LLMConfig, ResolvedRole
from agents.errors import BudgetExceeded, LLMConfigError, OfflineBackendMissing, error_details
from agents.parsing import OutputInvalid
from agents.results import BatchResult, LLMFailure, StepResult, Usage
from agents.secrets import install_log_scrubbing, scrub
from agents.steps import LLMStep
from common.aio import run as aio_run
from storage.store import RunStore, new_run_id

log = logging.getLogger("mtr.agents.session")

_AUTO: Any = object()


def request_key(resolved: ResolvedRole, step: LLMStep, messages: list[dict[str, Any]], sample: int = 0) -> str:
    """The cache key of one primary request of ``step`` (shared with the dry run)."""
    return cache_key(model=resolved.model or "", sampling=resolved.sampling.params(), messages=messages,
                     schema=step.schema, prompt_version=step.prompt_version, logprobs=step.logprobs,
                     top_logprobs=step.top_logprobs, sample=sample)


def run_spend(store: RunStore, run_id: str) -> tuple[int, float]:
    """(tokens, USD) the run ``run_id`` spent on cache misses, as its ``llm_calls`` table records it."""
    t = read_calls(store)
    tokens, usd = 0, 0.0
    for r in t.select(["run_id", "cache_hit", "prompt_tokens", "completion_tokens", "cost_usd"]).to_pylist():
        if r["run_id"] == run_id and not r["cache_hit"]:
            tokens += (r["prompt_tokens"] or 0) + (r["completion_tokens"] or 0)
            usd += r["cost_usd"] or 0.0
    return tokens, usd


class LLMSession:
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
            d = config.cache.resolve_dir(self.store.path if self.store is not None else None)
            cache = CallCache(d, fsync=config.cache.fsync, group_commit=config.commit_interval_ms > 0) \
                if d is not None else None
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

    # -- offline ----------------------------------------------------------------------------
    async def _run_offline(self, step: LLMStep, inputs: Any, resolved: ResolvedRole,
                           item_id: str | None) -> StepResult:
        t0 = time.perf_counter()
        messages = step.messages(inputs)
        failure = None
        output = None
        try:
            output = step.run_offline(inputs)
        except OfflineBackendMissing:
            raise
        except Exception as exc:  # noqa: BLE001 - reported as an explicit failure
            d = error_details(exc)
            failure = LLMFailure("offline_error", d["message"], error_class=d["error_class"],
                                 step=step.name, role=resolved.role)
        latency = time.perf_counter() - t0
        rec = CallRecord(call_id=new_call_id(), run_id=self.run_id, role=resolved.role, step=step.name,
                         endpoint=None, model=step.offline_model_id, backend="offline",
                         prompt_version=step.prompt_version, cache_key=None, purpose="offline",
                         item_id=item_id, latency_s=latency, cost_usd=0.0,
                         outcome="ok" if failure is None else "offline_error",
                         error_class=failure.error_class if failure else None)
        self.calls.add(rec)
        return StepResult(step=step.name, role=resolved.role, backend="offline",
                          prompt_version=step.prompt_version, model=step.offline_model_id, endpoint=None,
                          raw_prompt=tuple(messages),
                          raw_output=output.model_dump_json() if output is not None else None,
                          output=output, failure=failure, usage=Usage(), call_ids=(rec.call_id,),
                          latency_s=latency, item_id=item_id)

    # -- openai -----------------------------------------------------------------------------
    async def _run_openai(self, step: LLMStep, inputs: Any, resolved: ResolvedRole, item_id: str | None,
                          sample: int) -> StepResult:
        t0 = time.perf_counter()
        messages = step.messages(inputs)
        schema = step.schema
        raws: list[str] = []
        usage = Usage()
        call_ids: list[str] = []
        hits: list[bool] = []
        model_id = resolved.model
        conv = messages
        failure: LLMFailure | None = None
        output = None
        last: Completion | None = None
        attempts = 1 + self.config.retry.repair_attempts
        for attempt in range(attempts):
            purpose = "primary" if attempt == 0 else "repair"
            key = request_key(resolved, step, conv, sample)
            rec = CallRecord(call_id=new_call_id(), run_id=self.run_id, role=resolved.role, step=step.name,
                             endpoint=resolved.endpoint_name, model=resolved.model, backend="openai",
                             prompt_version=step.prompt_version, cache_key=key, purpose=purpose,
                             item_id=item_id)
            call_ids.append(rec.call_id)
            try:
                comp, hit, retries, latency = await self._fetch(key, resolved, step, conv, schema)
            except CallFailed as exc:
                rec.retries, rec.latency_s = exc.retries, exc.latency_s
                rec.error_class, rec.outcome, rec.cost_usd = exc.error_class, "error", 0.0
                await self._persist(key, None, True, rec)
                failure = LLMFailure(exc.kind, str(exc), raw_outputs=tuple(raws),  # type: ignore[arg-type]
                                     error_class=exc.error_class, status_code=exc.status_code,
                                     step=step.name, role=resolved.role)
                hits.append(False)
                break
            except BaseException as exc:
                if not isinstance(exc, asyncio.CancelledError):
                    d = error_details(exc)
                    rec.error_class, rec.outcome = d["error_class"], "error"
                    await self._persist(key, None, True, rec)
                raise
            last = comp
            hits.append(hit)
            usage = usage + comp.usage
            model_id = comp.model or model_id
            rec.prompt_tokens, rec.completion_tokens = comp.usage.prompt_tokens, comp.usage.completion_tokens
            rec.cache_hit, rec.retries, rec.latency_s = hit, retries, latency
            price = self.config.price(resolved.model)
            spent = 0.0 if hit else (price.cost(comp.usage.prompt_tokens, comp.usage.completion_tokens)
                                     if price else None)
            rec.cost_usd = spent
            if not hit:
                self.budget.record(comp.usage.total_tokens, spent)
            if comp.refusal or comp.finish_reason == "content_filter":
                raws.append(comp.refusal or comp.content or "")
                rec.outcome, rec.error_class = "refusal", "Refusal"
                failure = LLMFailure("refusal", scrub(comp.refusal or f"finish_reason={comp.finish_reason}"),
                                     raw_outputs=tuple(raws), error_class="Refusal",
                                     step=step.name, role=resolved.role)
                await self._persist(key, comp, hit, rec)
                break
            raws.append(comp.content or "")
            try:
                output = step.parse(comp.content, inputs)
            except (OutputInvalid, ValueError) as exc:
                rec.outcome = "invalid_output"
                rec.error_class = getattr(exc, "error_class", type(exc).__name__)
                await self._persist(key, comp, hit, rec)
                msg = scrub(str(exc))
                if comp.finish_reason == "length":
                    msg += " (the answer was cut off: finish_reason=length)"
                failure = LLMFailure("invalid_output", msg, raw_outputs=tuple(raws), error_class=rec.error_class,
                                     step=step.name, role=resolved.role)
                conv = step.repair_messages(messages, comp.content, msg)
                continue
            await self._persist(key, comp, hit, rec)
            failure = None
            break
        return StepResult(step=step.name, role=resolved.role, backend="openai",
                          prompt_version=step.prompt_version, model=model_id, endpoint=resolved.endpoint_name,
                          raw_prompt=tuple(messages), raw_output=raws[-1] if raws else None,
                          output=output if failure is None else None, failure=failure, usage=usage,
                          cache_hit=bool(hits) and all(hits), call_ids=tuple(call_ids),
                          latency_s=time.perf_counter() - t0,
                          logprobs=last.logprobs if (last is not None and step.logprobs) else None,
                          item_id=item_id)

    async def _persist(self, key: str, comp: Completion | None, hit: bool, rec: CallRecord) -> None:
        """Cache entry first, then the ``llm_calls`` row (a kill between them loses one row,
        never duplicates one); off the event loop."""
        if hit or comp is None or self.cache is None:
            if self.store is not None and not self.calls.commit_interval_s:
                await asyncio.to_thread(self.calls.add, rec)
            else:
                self.calls.add(rec)
            return
        meta = {"model": rec.model, "prompt_version": rec.prompt_version, "step": rec.step}

        def work() -> None:
            self.cache.put(key, comp.to_payload(), meta)  # type: ignore[union-attr]
            self.calls.add(rec)

        if self.calls.commit_interval_s and self.cache.group_commit:  # type: ignore[union-attr]
            work()        # both only stage in memory; the group committer does the I/O
            return
        await asyncio.to_thread(work)

    async def _fetch(self, key: str, resolved: ResolvedRole, step: LLMStep, messages: list[dict[str, Any]],
                     schema: dict[str, Any] | None) -> tuple[Completion, bool, int, float]:
        """(completion, cache_hit, retries, latency) from the cache, a twin request in flight,
        or the server."""
        t0 = time.perf_counter()
        if self.cache is not None:
            payload = self.cache.get(key)
            if payload is not None:
                return Completion.from_payload(payload), True, 0, time.perf_counter() - t0
            twin = self._inflight.get(key)
            if twin is not None:
                comp = await asyncio.shield(twin)
                return comp, True, 0, time.perf_counter() - t0
        req = ChatRequest(endpoint=resolved.endpoint_name or "", model=resolved.model or "", messages=messages,
                          sampling=resolved.sampling.params(), schema=schema, schema_name=_schema_name(step),
                          logprobs=step.logprobs, top_logprobs=step.top_logprobs)
        fut: asyncio.Future | None = None
        if self.cache is not None:
            fut = asyncio.get_running_loop().create_future()
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._inflight[key] = fut
        try:
            res = await self._client().complete(req)
        except BaseException as exc:
            if fut is not None:
                if isinstance(exc, asyncio.CancelledError):
                    fut.cancel()
                else:
                    fut.set_exception(exc)
            raise
        else:
            if fut is not None:
                fut.set_result(res.completion)
        finally:
            if fut is not None:
                self._inflight.pop(key, None)
        return res.completion, False, res.retries, res.latency_s

    def _not_started(self, step: LLMStep, resolved: ResolvedRole, item_id: str | None, reason: str) -> StepResult:
        return StepResult(step=step.name, role=resolved.role, backend=resolved.backend,
                          prompt_version=step.prompt_version, model=resolved.model,
                          endpoint=resolved.endpoint_name, raw_prompt=(), raw_output=None,
                          failure=LLMFailure("not_started", f"not started: {reason}", step=step.name,
                                             role=resolved.role),
                          item_id=item_id)


def _schema_name(step: LLMStep) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_-]", "_", step.output_model.__name__)[:64] or "output"


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
