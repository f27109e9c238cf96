"""What every MTR-Suite flow run shares: its Prefect settings and its artifact keys."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def prefect_run_settings(run_dir: str | Path | None = None) -> Iterator[None]:
    """Settings for one flow run: no heartbeat thread (a cost on short flows) and, with
    ``run_dir``, task results persisted inside the run under ``cache/prefect``."""
    from prefect.settings import (PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_RESULTS_LOCAL_STORAGE_PATH,
                                  temporary_settings)

    from flows.orphan_guard import install as install_orphan_guard
    install_orphan_guard()  # a temporary server dies with this process, even on kill -9
    updates: dict = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    if run_dir is not None:
        storage = Path(run_dir) / "cache" / "prefect"
        storage.mkdir(parents=True, exist_ok=True)
        updates[PREFECT_RESULTS_LOCAL_STORAGE_PATH] = storage
    with temporary_settings(updates=updates):
        yield


def slug(text: str, max_len: int = 60) -> str:
    """An artifact-key fragment: lower case, every non-alphanumeric character a dash, at most
    ``max_len`` characters; ``"run"`` when nothing is left."""
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")[:max_len] or "run"
