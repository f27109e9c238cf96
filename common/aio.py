"""One way to run a coroutine to completion: on uvloop when it is installed.

uvloop (libuv's event loop) roughly halves the CPU per LLM call of the asyncio loop on this
project's workloads (``benchmarks/llm_layer.py`` prints both). ``MTR_EVENT_LOOP=asyncio``
selects the standard loop (for debugging, or where uvloop misbehaves).
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from common.errors import UserError

T = TypeVar("T")


class EventLoopError(UserError, ValueError):
    """``MTR_EVENT_LOOP`` names no known loop (the CLI prints it as one line)."""


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory, or None for asyncio's default (``MTR_EVENT_LOOP=asyncio``, or no uvloop)."""
    choice = os.environ.get("MTR_EVENT_LOOP", "uvloop").strip().lower()
    if choice not in ("uvloop", "asyncio"):
        raise EventLoopError(f"MTR_EVENT_LOOP={choice!r}: use 'uvloop' or 'asyncio'")
    if choice == "asyncio":
        return None
    try:
        import uvloop   # optional: no uvloop on Windows
    except ImportError:  # pragma: no cover - uvloop is a dependency; a platform without it falls back
        return None
    return uvloop.new_event_loop


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on the chosen loop (a fresh loop, closed afterwards)."""
    try:
        factory = loop_factory()
    except BaseException:
        coro.close()          # never started: no "was never awaited" warning
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coro)
