"""Structured-output negotiation: how a request's JSON schema travels to an endpoint in its
structured-output mode (``json_schema``, ``json_object_schema``, ``json_object`` or ``text``,
:func:`request_body`), and the repair when a server rejects ``response_format``
(:func:`rejects_response_format`: the client then falls back to ``text``, the schema written
into the last user message by :func:`with_schema_in_prompt`).
"""
from __future__ import annotations

import json
from typing import Any

import openai

from agents.capabilities import is_validation_error
from agents.completion import ChatRequest
from agents.secrets import scrub


def schema_instruction(schema: dict[str, Any]) -> str:
    return ("\n\nRespond with only a JSON object (no prose, no code fences) that conforms to "
            "this JSON schema:\n" + json.dumps(schema, ensure_ascii=False))


def with_schema_in_prompt(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """``messages`` with the schema instruction appended to the last user message (or as a new one)."""
    msgs = [dict(m) for m in messages]
    for m in reversed(msgs):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            m["content"] = m["content"] + schema_instruction(schema)
            return msgs
    msgs.append({"role": "user", "content": schema_instruction(schema).strip()})
    return msgs


def request_body(req: ChatRequest, mode: str, *, strict_schema: bool, drop_seed: bool) -> dict[str, Any]:
    """The JSON body of ``req`` for an endpoint in structured-output ``mode`` (``drop_seed``: the
    endpoint rejects ``seed``)."""
    messages = req.messages
    kw: dict[str, Any] = {"model": req.model, **req.sampling}
    if drop_seed:
        kw.pop("seed", None)
    if req.schema is not None:
        if mode == "json_schema":
            kw["response_format"] = {"type": "json_schema", "json_schema": {
                "name": req.schema_name, "schema": req.schema, "strict": strict_schema}}
        elif mode == "json_object_schema":
            kw["response_format"] = {"type": "json_object", "schema": req.schema}
        else:
            messages = with_schema_in_prompt(messages, req.schema)
            if mode == "json_object":
                kw["response_format"] = {"type": "json_object"}
    if req.logprobs:
        kw["logprobs"] = True
        if req.top_logprobs:
            kw["top_logprobs"] = req.top_logprobs
    kw["messages"] = messages
    return kw


def rejects_response_format(exc: BaseException, req: ChatRequest, mode: str) -> bool:
    """True when ``exc`` is a server's refusal of the ``response_format`` of ``req`` sent in
    ``mode`` (a 400/422 or validation error that names it): the endpoint should fall back to text."""
    if req.schema is None or mode == "text":
        return False
    if isinstance(exc, openai.APIStatusError) and (exc.status_code in (400, 422)
                                                    or is_validation_error(exc.status_code, str(exc))):
        text = scrub(str(exc)).lower()
        return any(w in text for w in ("response_format", "json_schema", "json_object", "response format"))
    return False
