"""How one item runs in a session: :class:`ItemRunner`, the part of
:class:`agents.session.LLMSession` that turns a step and one input into a
:class:`~agents.results.StepResult`.

* offline: the step's deterministic implementation, one ``llm_calls`` row;
* openai: build the messages -> cache lookup (key: :func:`request_key`), or the twin
  request already in flight, or the request (:meth:`agents.client.LLMClient.complete`) ->
  cache write, then the ``llm_calls`` row -> parse/validate; an invalid answer gets one repair
  call that shows the model its validation error; still invalid -> an explicit
  ``invalid_output`` failure with both raw outputs. A refusal is a ``refusal`` failure.
  Failed HTTP calls are not cached (a rerun tries them again); answered ones are, valid or
  not, so a rerun replays the same chain with zero requests.
"""
from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from agents.accounting import CallLog, CallRecord, new_call_id
from agents.budget import Budget
from agents.cache import CallCache, cache_key
from agents.client import LLMClient
from agents.completion import CallFailed, ChatRequest, Completion
from agents.config import LLMConfig, ResolvedRole
from agents.errors import OfflineBackendMissing, error_details
from agents.parsing import OutputInvalid
from agents.results import LLMFailure, StepResult, Usage
from agents.secrets import scrub
from agents.steps import LLMStep
from storage.store import RunStore


def request_key(resolved: ResolvedRole, step: LLMStep, messages: list[dict[str, Any]], sample: int = 0) -> str:
    """The cache key of one primary request of ``step`` (shared with the dry run)."""
    return cache_key(model=resolved.model or "", sampling=resolved.sampling.params(), messages=messages,
                     schema=step.schema, prompt_version=step.prompt_version, logprobs=step.logprobs,
                     top_logprobs=step.top_logprobs, sample=sample)


def output_schema_name(step: LLMStep) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", step.output_model.__name__)[:64] or "output"


class ItemRunner:
    """One item of a step, offline or against an endpoint (see module docstring); mixed into
    :class:`agents.session.LLMSession`, whose state it uses: the config, the run id, the
    store, the call cache, the ``llm_calls`` log, the budget, the client and the requests in
    flight (by cache key)."""

    config: LLMConfig
    run_id: str
    store: RunStore | None
    cache: CallCache | None
    calls: CallLog
    budget: Budget
    _inflight: dict[str, asyncio.Future]

    def _client(self) -> LLMClient:
        raise NotImplementedError

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
                          sampling=resolved.sampling.params(), schema=schema, schema_name=output_schema_name(step),
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
