"""The step abstraction (distilabel's task split): a step = prompt builder + Pydantic output
model + parser + prompt version, plus an optional deterministic offline implementation.

A step does not call anything itself; an :class:`agents.session.LLMSession` runs it with
the backend chosen explicitly in the config (``backend: openai|offline``, globally or per
role) or by the session's ``backend=`` argument. There is no silent fallback: selecting
``offline`` for a step without an offline implementation raises
:class:`OfflineBackendMissing`, and ``openai`` without an endpoint raises
:class:`LLMConfigError`. The backend used is recorded on every :class:`StepResult` and
``llm_calls`` row.

Two ways to define a step::

    class Verdict(BaseModel):
        faithful: bool
        reason: str

    class JudgeFaithfulness(LLMStep[dict, Verdict]):
        name = "judge_faithfulness"
        kind = "judge"                   # temperature 0 by default
        prompt_version = "faithfulness-v1"
        output_model = Verdict

        def build_messages(self, x):
            return [{"role": "system", "content": "You are a strict judge."},
                    {"role": "user", "content": f"Passage: {x['passage']}\\nAnswer: {x['answer']}"}]

        def offline(self, x):            # optional deterministic implementation
            return Verdict(faithful=x["answer"] in x["passage"], reason="substring check")

    step = LLMStep(name="rewrite", prompt_version="rewrite-v2", output_model=TextOutput,
                   build_messages=lambda x: [{"role": "user", "content": x["query"]}],
                   offline=lambda x: TextOutput(text=x["query"]))
"""
from __future__ import annotations

import json
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel

from agents.config import RoleKind, Sampling
from agents.errors import LLMError, OfflineBackendMissing
from agents.parsing import TextOutput, parse_output, schema_of

InT = TypeVar("InT")
OutT = TypeVar("OutT", bound=BaseModel)

_VALID_ROLES = {"system", "user", "assistant"}


class StepDefinitionError(LLMError):
    """A step is missing its output model or builds malformed messages."""


class LLMStep(Generic[InT, OutT]):
    """Base class of every LLM-backed step (see module docstring).

    Attributes:
        name: step name (``llm_calls.step``).
        role: config role it runs as (default: ``name``); selects endpoint/model/sampling.
        kind: ``generation`` (temperature 0.8, top_p 0.95) or ``judge`` (temperature 0).
        prompt_version: bump whenever the prompt changes; part of the cache key.
        output_model: Pydantic model of the output (:class:`TextOutput` for free text).
        sampling: the step's own sampling defaults (e.g. ``max_tokens``); the role config
            overrides them.
        logprobs / top_logprobs: request token log-probabilities.
        expected_output_tokens: completion size assumed by the dry run.
    """

    name: str = ""
    role: str | None = None
    kind: RoleKind = "generation"
    prompt_version: str = "v1"
    output_model: type[BaseModel] | None = None
    sampling: Sampling | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    expected_output_tokens: int = 256

    def __init__(self, *, build_messages: Callable[[Any], list[dict[str, Any]]] | None = None,
                 parse: Callable[[str, Any], BaseModel] | None = None,
                 offline: Callable[[Any], BaseModel | dict[str, Any]] | None = None,
                 **attrs: Any) -> None:
        for k, v in attrs.items():
            if k not in ("name", "role", "kind", "prompt_version", "output_model", "sampling",
                         "logprobs", "top_logprobs", "expected_output_tokens"):
                raise StepDefinitionError(f"unknown step attribute {k!r}")
            setattr(self, k, v)
        if build_messages is not None:
            self._build = build_messages
        if parse is not None:
            self._parse = parse
        if offline is not None:
            self._offline = offline
        if not self.name:
            raise StepDefinitionError(f"{type(self).__name__} has no name")
        if self.output_model is None:
            raise StepDefinitionError(f"step {self.name!r} has no output_model")
        if self.role is None:
            self.role = self.name

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, role={self.role!r}, "
                f"prompt_version={self.prompt_version!r}, output={self.output_model.__name__})")

    # -- prompt -----------------------------------------------------------------------------
    def build_messages(self, inputs: InT) -> list[dict[str, Any]]:
        """Chat messages for ``inputs``; override or pass ``build_messages=``."""
        fn = getattr(self, "_build", None)
        if fn is None:
            raise StepDefinitionError(f"step {self.name!r} has no prompt builder")
        return fn(inputs)

    def messages(self, inputs: InT) -> list[dict[str, Any]]:
        """:meth:`build_messages` checked for shape (role + string content)."""
        msgs = self.build_messages(inputs)
        if not isinstance(msgs, list) or not msgs:
            raise StepDefinitionError(f"step {self.name!r} built no messages")
        out = []
        for m in msgs:
            if not isinstance(m, dict) or m.get("role") not in _VALID_ROLES or not isinstance(m.get("content"), str):
                raise StepDefinitionError(f"step {self.name!r} built a malformed message: "
                                          "each needs role system|user|assistant and string content")
            out.append({"role": m["role"], "content": m["content"]})
        return out

    def repair_messages(self, messages: list[dict[str, Any]], raw_output: str | None,
                        error: str) -> list[dict[str, Any]]:
        """The conversation for the one repair retry: shows the model its validation error."""
        schema = schema_of(self.output_model)
        hint = ""
        if schema is not None:
            s = json.dumps(schema, ensure_ascii=False)
            if len(s) <= 4000:
                hint = f"\nThe JSON schema is:\n{s}"
        return [*messages,
                {"role": "assistant", "content": raw_output or ""},
                {"role": "user", "content": (
                    f"Your previous answer could not be used: {error}.\n"
                    "Reply again with only a JSON object that matches the required schema, "
                    f"without any other text.{hint}")}]

    # -- output -----------------------------------------------------------------------------
    def parse(self, text: str | None, inputs: InT) -> OutT:
        """Validate the model's text; raise ``OutputInvalid`` (or ValueError) when unusable."""
        fn = getattr(self, "_parse", None)
        if fn is not None:
            return fn(text, inputs)
        return parse_output(text, self.output_model)  # type: ignore[return-value]

    @property
    def schema(self) -> dict[str, Any] | None:
        return schema_of(self.output_model)

    # -- offline backend --------------------------------------------------------------------
    @property
    def has_offline(self) -> bool:
        return getattr(self, "_offline", None) is not None or type(self).offline is not LLMStep.offline

    def offline(self, inputs: InT) -> OutT | dict[str, Any]:
        """The deterministic offline implementation; override or pass ``offline=``."""
        fn = getattr(self, "_offline", None)
        if fn is None:
            raise OfflineBackendMissing(f"step {self.name!r} has no offline implementation; "
                                        "select the openai backend for its role")
        return fn(inputs)

    @property
    def offline_model_id(self) -> str:
        fn = getattr(self, "_offline", None)
        qual = getattr(fn, "__qualname__", None) if fn is not None else f"{type(self).__qualname__}.offline"
        return f"offline:{self.name}:{qual}"

    def run_offline(self, inputs: InT) -> OutT:
        out = self.offline(inputs)
        model = self.output_model
        if isinstance(out, model):
            return out  # type: ignore[return-value]
        if isinstance(out, BaseModel):
            out = out.model_dump()
        return model.model_validate(out)  # type: ignore[return-value]


__all__ = ["LLMStep", "StepDefinitionError", "TextOutput"]
