"""What every MTR-Suite flow run shares: its Prefect settings, its artifact keys and the
best-effort publication of its Markdown artifacts."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from agents.config import LLMConfig
from agents.errors import LLMConfigError
from flows.orphan_guard import install as install_orphan_guard

# LLM configs handed to a flow of this process, by (file, digest): a flow run's parameters
# carry the file and the digest of the config's public form, never the config
_HANDED: dict[tuple[str | None, str], LLMConfig] = {}


def llm_flow_params(llm: LLMConfig | None) -> dict[str, str | None]:
    """What a flow run carries for an LLM config: ``llm_config`` (the file it was loaded from)
    and ``llm_digest`` (:meth:`~agents.config.LLMConfig.digest`, a hash of its redacted form).
    The config itself (credentials included) stays in this process for
    :func:`llm_from_flow_params`; a flow run in another process loads the file."""
    if llm is None:
        return {"llm_config": None, "llm_digest": None}
    digest = llm.digest()
    _HANDED[(llm.source, digest)] = llm
    return {"llm_config": llm.source, "llm_digest": digest}


def llm_from_flow_params(llm_config: str | None, llm_digest: str | None) -> LLMConfig | None:
    """The LLM config of a flow run (inside the flow): the one handed in by this process, else
    the file, which must still have the digest the run was started with."""
    if llm_config is None and llm_digest is None:
        return None
    held = _HANDED.get((llm_config, llm_digest)) if llm_digest is not None else None
    if held is not None:
        return held
    if llm_config is None:
        raise LLMConfigError("this flow run's LLM config was built in code by another process; "
                             "pass the config as a file (--llm-config) to run the flow elsewhere")
    llm = LLMConfig.from_file(llm_config)
    if llm_digest is not None and llm.digest() != llm_digest:
        raise LLMConfigError(f"LLM config {llm_config} changed after the run started (digest {llm.digest()}, "
                             f"the run was started with {llm_digest})")
    return llm


@contextmanager
def prefect_run_settings(run_dir: str | Path | None = None) -> Iterator[None]:
    """Settings for one flow run: no heartbeat thread (a cost on short flows) and, with
    ``run_dir``, task results persisted inside the run under ``cache/prefect`` (an object-store run: in its
    local directory on this machine)."""
    from prefect.settings import (PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_RESULTS_LOCAL_STORAGE_PATH,  # costly: prefect
                                  temporary_settings)
    install_orphan_guard()  # a temporary server dies with this process, even on kill -9
    updates: dict = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    if run_dir is not None:
        from storage.store import RunStore
        storage = RunStore(str(run_dir)).local_dir("cache", "prefect")
        updates[PREFECT_RESULTS_LOCAL_STORAGE_PATH] = storage
    with temporary_settings(updates=updates):
        yield


class _QuietExpectedFailures:
    """Console-handler filter: drops Prefect's own logging of a flow or task run that failed
    with one of ``expected`` (the traceback, and that run's "Finished in state Failed" line).
    Other handlers (the API handler: the UI keeps the traceback) are untouched."""

    _RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")

    def __init__(self, expected: tuple[type[BaseException], ...]):
        self.expected = expected
        self.failed_runs: set[str] = set()

    @staticmethod
    def _run_id(record) -> str:
        return str(getattr(record, "task_run_id", None) or getattr(record, "flow_run_id", None) or "")

    def filter(self, record) -> bool:
        if not record.name.startswith(self._RUN_LOGGERS):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and isinstance(exc, self.expected):
            self.failed_runs.add(self._run_id(record))
            return False
        if self._run_id(record) in self.failed_runs and str(record.msg).startswith("Finished in state"):
            return False
        return True


@contextmanager
def quiet_expected_failures(*expected: type[BaseException]) -> Iterator[None]:
    """While active, a flow or task run failing with one of ``expected`` (errors the CLI
    reports as one line, exit 2) prints no Prefect traceback on the console; the records
    still reach the Prefect API, so the UI shows the failure in full."""
    import prefect  # noqa: F401 - costly: prefect; configures Prefect's logging (its console handlers)
    from prefect.logging.handlers import PrefectConsoleHandler   # costly: prefect

    quiet = _QuietExpectedFailures(tuple(expected))
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    handlers = {id(h): h for lg in loggers for h in lg.handlers if isinstance(h, PrefectConsoleHandler)}
    for h in handlers.values():
        h.addFilter(quiet)
    try:
        yield
    finally:
        for h in handlers.values():
            h.removeFilter(quiet)


def slug(text: str, max_len: int = 60) -> str:
    """An artifact-key fragment: lower case, every non-alphanumeric character a dash, at most
    ``max_len`` characters; ``"run"`` when nothing is left."""
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")[:max_len] or "run"


def publish_markdown(key: str, markdown: str | Callable[[], str], description: str) -> None:
    """Create the Prefect Markdown artifact ``key``, best effort: any error (e.g. the API is
    unavailable) is ignored. ``markdown`` may be a function, called inside that guard, so that
    a summary which fails to build is skipped the same way."""
    from prefect.artifacts import create_markdown_artifact   # costly: prefect
    try:
        create_markdown_artifact(key=key, markdown=markdown() if callable(markdown) else markdown,
                                 description=description)
    except Exception:  # noqa: BLE001 - artifacts are best effort (e.g. API unavailable)
        pass
