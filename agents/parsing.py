"""Turning model text into a validated Pydantic object.

Servers that honour ``response_format={"type": "json_schema", ...}`` return bare JSON; the
others return prose, Markdown fences or a JSON object somewhere in the text. We try the
whole text, then fenced blocks, then every ``{``/``[`` position, and validate each decoded
value against the output model; the first valid one wins. When none validates we raise
:class:`OutputInvalid` with a message meant to be shown to the model in the repair retry.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)
_MAX_CANDIDATES = 64


class OutputInvalid(ValueError):
    """No JSON value in the text validates against the output model."""

    def __init__(self, message: str, error_class: str = "ValidationError") -> None:
        self.error_class = error_class
        super().__init__(message)


class TextOutput(BaseModel):
    """Output model for free-text steps: no JSON schema is requested, the text is the output."""

    text: str


def _candidates(text: str) -> list[Any]:
    out: list[Any] = []
    s = text.strip()
    try:
        out.append(json.loads(s))
    except ValueError:
        pass
    for m in _FENCE.finditer(text):
        try:
            out.append(json.loads(m.group(1).strip()))
        except ValueError:
            pass
    dec = json.JSONDecoder()
    i = 0
    while len(out) < _MAX_CANDIDATES:
        starts = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not starts:
            break
        pos = min(starts)
        try:
            value, end = dec.raw_decode(text, pos)
        except ValueError:
            i = pos + 1
            continue
        out.append(value)
        i = end
    return out


def _short(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:8]:
        loc = ".".join(str(x) for x in e["loc"]) or "(root)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def parse_output(text: str | None, model: type[M]) -> M:
    """Validate ``text`` as ``model`` (see module docstring)."""
    if model is TextOutput:
        if text is None or not text.strip():
            raise OutputInvalid("the answer is empty", "EmptyOutput")
        return model(text=text)  # type: ignore[return-value]
    if text is None or not text.strip():
        raise OutputInvalid("the answer is empty; a JSON object was expected", "EmptyOutput")
    cands = _candidates(text)
    if not cands:
        raise OutputInvalid("no JSON object found in the answer", "JSONDecodeError")
    first_err: ValidationError | None = None
    for value in cands:
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            first_err = first_err or exc
    assert first_err is not None
    return _raise(first_err)


def _raise(err: ValidationError) -> Any:
    raise OutputInvalid(f"the JSON does not match the schema: {_short(err)}")


@lru_cache(maxsize=256)
def schema_of(model: type[BaseModel]) -> dict[str, Any] | None:
    """The JSON schema requested from the server (None for free text); cached per model,
    treat as read-only."""
    return None if model is TextOutput else model.model_json_schema()
