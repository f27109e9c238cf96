"""The JSON a fake server answers with: a deterministic instance of a (Pydantic-generated) JSON
schema (:func:`value_from_schema`), and the schema a client in text mode embedded in its prompt
(:func:`schema_in_prompt`).
"""
from __future__ import annotations

import json
import re
from typing import Any

_SCHEMA_MARK = re.compile(r"JSON schema[^\n]*:\s*\n", re.I)


def value_from_schema(schema: dict[str, Any], root: dict[str, Any] | None = None, name: str = "value",
                      seed: str = "") -> Any:
    """A deterministic instance of a (Pydantic-generated) JSON schema."""
    root = root or schema
    if "$ref" in schema:
        ref = schema["$ref"].split("/")[-1]
        return value_from_schema(root.get("$defs", {}).get(ref, {}), root, name, seed)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema and schema.get("type") != "object":
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            opts = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return value_from_schema(opts[0], root, name, seed)
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: value_from_schema(v, root, k, seed) for k, v in props.items()}
    if t == "array":
        n = max(1, int(schema.get("minItems", 1)))
        return [value_from_schema(schema.get("items", {}), root, name, seed) for _ in range(n)]
    if t == "integer":
        return int(schema.get("minimum", 1))
    if t == "number":
        return float(schema.get("minimum", 0.5))
    if t == "boolean":
        return True
    if t == "null":
        return None
    return f"fake {name} {seed}".strip()


def schema_in_prompt(prompt_text: str) -> Any:
    """The JSON schema a client in text mode embedded in the prompt (the last one), or None."""
    m = None
    for m in _SCHEMA_MARK.finditer(prompt_text):
        pass
    if m is None:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(prompt_text, m.end())
    except ValueError:
        return None
    return schema
