"""Result objects of the LLM layer: what a step returns, success or explicit failure.

A :class:`StepResult` always carries the provenance YourBench/distilabel keep next to an
LLM output: raw prompt (messages), raw output text, model id, prompt version, token usage,
``backend`` ("openai" or "offline"), cache-hit flag and the ids of the underlying calls.
Exactly one of ``output`` (the validated Pydantic object) and ``failure`` is set.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from agents.errors import BudgetExceeded, LLMCallFailed

OutT = TypeVar("OutT", bound=BaseModel)

FailureKind = Literal[
    "invalid_output",       # no valid JSON for the output model after the repair retry
    "refusal",              # the model refused (message.refusal / content filter)
    "retries_exhausted",    # timeouts / connection errors / 408/409/429/5xx on every attempt
    "api_error",            # a non-retryable 4xx for this request (e.g. context too long)
    "offline_error",        # the offline implementation raised or returned an invalid object
    "not_started",          # the batch stopped (budget) before this item started
]


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False     # True when the server sent no usage (chars/4 estimate)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens,
                     self.estimated or other.estimated)


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class LLMFailure:
    """An explicit failure of one item; keeps every raw output the model produced.

    Attributes:
        kind: see ``FailureKind``.
        message: one scrubbed sentence (validation error, HTTP error ...).
        raw_outputs: the texts returned by the model (first answer, repair answer ...).
        error_class: exception / error class name (``ValidationError``, ``RateLimitError`` ...).
        status_code: HTTP status when relevant.
    """

    kind: FailureKind
    message: str
    raw_outputs: tuple[str, ...] = ()
    error_class: str | None = None
    status_code: int | None = None
    step: str | None = None
    role: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["raw_outputs"] = list(self.raw_outputs)
        return d


@dataclass(frozen=True, slots=True)
class StepResult(Generic[OutT]):
    """The outcome of running one step on one input (see module docstring)."""

    step: str
    role: str
    backend: Literal["openai", "offline"]
    prompt_version: str
    model: str | None
    endpoint: str | None
    raw_prompt: tuple[dict[str, Any], ...]
    raw_output: str | None
    output: OutT | None = None
    failure: LLMFailure | None = None
    usage: Usage = field(default_factory=Usage)
    cache_hit: bool = False
    call_ids: tuple[str, ...] = ()
    latency_s: float = 0.0
    logprobs: tuple[TokenLogprob, ...] | None = None
    item_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None and self.output is not None

    def unwrap(self) -> OutT:
        """The parsed output, or raise :class:`LLMCallFailed` with the failure."""
        if self.failure is not None or self.output is None:
            raise LLMCallFailed(self.failure or LLMFailure("invalid_output", "no output", step=self.step))
        return self.output

    def to_row(self) -> dict[str, Any]:
        """A flat, JSON-able row for a stage table (output and failure as JSON strings)."""
        return {
            "item_id": self.item_id, "step": self.step, "role": self.role, "backend": self.backend,
            "prompt_version": self.prompt_version, "model": self.model, "endpoint": self.endpoint,
            "ok": self.ok,
            "output_json": self.output.model_dump_json() if self.output is not None else None,
            "failure_json": json.dumps(self.failure.to_dict()) if self.failure else None,
            "raw_prompt_json": json.dumps(list(self.raw_prompt), ensure_ascii=False),
            "raw_output": self.raw_output,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cache_hit": self.cache_hit, "call_ids": list(self.call_ids),
        }


@dataclass(slots=True)
class BatchResult(Generic[OutT]):
    """Results of a batch, in input order (unstarted items hold a ``not_started`` failure)."""

    items: list[StepResult[OutT]]
    stopped_reason: str | None = None

    @property
    def outputs(self) -> list[OutT | None]:
        return [r.output for r in self.items]

    @property
    def failures(self) -> list[StepResult[OutT]]:
        return [r for r in self.items if not r.ok]

    @property
    def n_ok(self) -> int:
        return sum(r.ok for r in self.items)

    def raise_if_stopped(self) -> None:
        if self.stopped_reason:
            raise BudgetExceeded(self.stopped_reason, partial=self)

    def __len__(self) -> int:
        return len(self.items)
