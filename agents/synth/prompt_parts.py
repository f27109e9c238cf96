"""Pieces the synthesis agents share: passage and history formatting for prompts, and a
stable integer seed from a hash (offline choices independent of order and process)."""
from __future__ import annotations

import hashlib
import re
from typing import Any

from agents.quoting import quote_passages, quote_turns

_CITE = re.compile(r"\[\d+\]")


def fmt_passages(passages: list[dict]) -> str:
    """Numbered ``<passage id="1">`` blocks (citation marks like ``[3]`` removed, text escaped:
    :func:`agents.quoting.quote_passages`)."""
    return quote_passages(passages, titles=False, text_of=lambda p: _CITE.sub("", p["text"]))


def fmt_history(history: list[list[str]] | list[tuple[str, str]], cut: int | None = None) -> str:
    """``<turn role="user">...</turn>`` lines, text escaped; assistant turns longer than ``cut`` are shortened
    (:func:`agents.quoting.quote_turns`)."""
    return quote_turns(history, cut)


def seed_int(*parts: Any) -> int:
    """A stable 32-bit integer from the parts (sha256)."""
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)
