"""The LLM layer: every LLM-backed feature (synthesis agents, judges, query rewriting) goes
through it. One concern per module:

* ``config``      — :class:`LLMConfig` (endpoints, roles, sampling, budget, cache, prices)
* ``steps``       — :class:`LLMStep`: prompt builder + output model + parser + prompt version
                    (+ optional deterministic offline implementation)
* ``session``     — :class:`LLMSession` / :func:`run_batch`: run steps (cache, accounting, budget)
* ``runner``      — how one item runs in a session (cache lookup, request, repair call, ``llm_calls`` row)
* ``client``      — the async ``openai`` client: limits, retries, timeouts, structured outputs
* ``completion``  — what one call sends and gets back (request, completion, call failure)
* ``transport``   — the HTTP transport, error classification, retry waits
* ``structured``  — structured-output modes: the request body per mode, the fall-back to text
* ``cache``       — content-addressed crash-safe call cache
* ``accounting``  — ``llm_calls`` rows, totals per role and run
* ``budget``      — token / money caps
* ``dryrun``      — offline estimate of calls, tokens and cost
* ``results``     — :class:`StepResult`, :class:`LLMFailure`, :class:`BatchResult`
* ``synth``       — the synthesis agents and their conversation graph (one module per agent)
* ``testing``     — test doubles: the scriptable fake OpenAI-compatible server (tests, ``mtr fake-llm``)

See ``docs/concepts/llm-layer.md`` and ``docs/how-to/endpoints.md``.
"""
from agents.accounting import CallLog, CallRecord, RoleTotals, format_totals, read_calls, totals_from_table
from agents.budget import Budget
from agents.cache import CallCache, cache_key
from agents.config import (BudgetConfig, CacheConfig, EndpointConfig, LLMConfig, ModelPrice, RetryConfig,
                           RoleConfig, Sampling)
from agents.dryrun import DryRunReport, dry_run
from agents.errors import (BudgetExceeded, LLMCallFailed, LLMConfigError, LLMError, LLMFatalError,
                           LogprobsUnsupported, OfflineBackendMissing)
from agents.parsing import OutputInvalid, TextOutput, parse_output
from agents.results import BatchResult, LLMFailure, StepResult, TokenLogprob, Usage
from agents.session import LLMSession, run_batch
from agents.steps import LLMStep

__all__ = [
    "BatchResult", "Budget", "BudgetConfig", "BudgetExceeded", "CacheConfig", "CallCache", "CallLog",
    "CallRecord", "DryRunReport", "EndpointConfig", "LLMCallFailed", "LLMConfig", "LLMConfigError",
    "LLMError", "LLMFailure", "LLMFatalError", "LLMSession", "LLMStep", "LogprobsUnsupported",
    "ModelPrice", "OfflineBackendMissing", "OutputInvalid", "RetryConfig", "RoleConfig", "RoleTotals",
    "Sampling", "StepResult", "TextOutput", "TokenLogprob", "Usage", "cache_key", "dry_run",
    "format_totals", "parse_output", "read_calls", "run_batch", "totals_from_table",
]
