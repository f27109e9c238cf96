"""Progress reporting shared by the CLI (rich bars) and stage functions (plain callbacks).

Stage functions take ``progress(label, advance, total)``; the CLI installs a rich-backed
reporter here so Prefect tasks (which run in worker threads of the same process) can find
it without passing unserialisable objects as flow parameters.
"""
from __future__ import annotations

import threading
from typing import Callable

_lock = threading.Lock()
_reporter: Callable[[str, int, int], None] | None = None


def set_reporter(fn: Callable[[str, int, int], None] | None) -> None:
    global _reporter
    with _lock:
        _reporter = fn


def report(label: str, advance: int, total: int) -> None:
    fn = _reporter
    if fn is not None:
        fn(label, advance, total)


class RichReporter:
    """A rich Progress with one bar per label."""

    def __init__(self, progress) -> None:
        self.progress = progress
        self.tasks: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, label: str, advance: int, total: int) -> None:
        with self.lock:
            if label not in self.tasks:
                self.tasks[label] = self.progress.add_task(label, total=total or None)
            tid = self.tasks[label]
            self.progress.update(tid, advance=advance, total=total or None)
