"""Per-query metric files: JSON lines ``{"qid": ..., "<metric>": value, ...}``, one per query."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from storage.formats.io import FormatError, PathLike, atomic_text_writer, get_field, iter_jsonl


def read_per_query_jsonl(path: PathLike, key: str = "qid") -> dict[str, dict[str, float]]:
    """Read per-query metric values written as JSON lines (``{"qid": ..., "<metric>": value}``).

    Non-numeric fields other than ``key`` are dropped; integer fields (e.g. ``n_retrieved``)
    are kept as floats.

    Raises:
        FormatError: missing ``key`` or a duplicate id.
    """
    out: dict[str, dict[str, float]] = {}
    for lineno, obj in iter_jsonl(path):
        qid = get_field(path, lineno, obj, key)
        if qid in out:
            raise FormatError(path, lineno, f"duplicate {key} {qid!r}")
        out[qid] = {k: float(v) for k, v in obj.items()
                    if k != key and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return out


def write_per_query_jsonl(per_query: Mapping[str, Mapping[str, float]], path: PathLike,
                          key: str = "qid", extra: Mapping[str, Any] | None = None) -> Path:
    """Write per-query metric values as JSON lines, one object per query, in mapping order.

    Args:
        per_query: ``{qid: {metric: value}}`` (numpy scalars are converted; other JSON values
            such as booleans are written as they are).
        path: output file (``.gz`` writes gzip); parents are created.
        key: name of the id field.
        extra: constant fields added to every line (e.g. ``{"missing": "zero"}``).

    Returns:
        The written path.
    """
    out = Path(path)
    with atomic_text_writer(out) as f:
        for qid, values in per_query.items():
            row = {key: qid, **(extra or {}),
                   **{k: v.item() if hasattr(v, "item") else v for k, v in values.items()}}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out
