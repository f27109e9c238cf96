"""A thin Prefect wrapper around :func:`evaluation.abstention.run_abstention`: one task does
the work, the flow publishes the Markdown summary as an artifact. Flows need no server
(ephemeral mode) and appear in the UI when ``PREFECT_API_URL`` is set.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from evaluation.abstention.config import AbstentionConfig


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in s.lower()).strip("-")[:60] or "run"


@task(name="abstention", tags=["mtr", "abstention"], cache_policy=NO_CACHE, persist_result=False)
def abstention_task(benchmark: str, fmt: str, domain: str | None, out_dir: str, config: dict,
                    llm_config: str | None = None):
    from agents.config import LLMConfig
    from evaluation.abstention.run import run_abstention
    llm = LLMConfig.from_file(llm_config) if llm_config else None
    return run_abstention(benchmark, out_dir, AbstentionConfig.model_validate(config), llm, format=fmt,
                          domain=domain)


@flow(name="mtr-abstention", flow_run_name="abstention-{run_name}", log_prints=False)
def abstention_flow(benchmark: str, fmt: str, domain: str | None, out_dir: str, config: dict,
                    llm_config: str | None = None, run_name: str = ""):
    """Run the analysis and publish its Markdown summary (key ``abstention-<run>``)."""
    res = abstention_task(benchmark, fmt, domain, out_dir, config, llm_config)
    try:
        create_markdown_artifact(key=f"abstention-{_slug(run_name or Path(out_dir).name)}", markdown=res.markdown,
                                 description="MTR-Suite content-based abstention evaluation")
    except Exception:  # noqa: BLE001 - artifacts are best effort (e.g. API unavailable)
        pass
    return res


@contextmanager
def _settings(out_dir: Path):
    from prefect.settings import (PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_RESULTS_LOCAL_STORAGE_PATH,
                                  temporary_settings)
    storage = Path(out_dir) / "cache" / "prefect"
    storage.mkdir(parents=True, exist_ok=True)
    with temporary_settings(updates={PREFECT_RESULTS_LOCAL_STORAGE_PATH: storage,
                                     PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def run_abstention_flow(benchmark: str | Path, fmt: str, domain: str | None, out_dir: str | Path,
                        config: AbstentionConfig, llm_config: str | Path | None = None):
    """Run :func:`abstention_flow` (ephemeral Prefect unless ``PREFECT_API_URL`` is set)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with _settings(out):
        return abstention_flow(str(Path(benchmark).resolve()), fmt, domain, str(out.resolve()),
                               config.model_dump(mode="json"), str(llm_config) if llm_config else None,
                               run_name=out.name)


__all__ = ["abstention_flow", "abstention_task", "run_abstention_flow"]
