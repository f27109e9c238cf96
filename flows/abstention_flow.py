"""A thin Prefect wrapper around :func:`evaluation.abstention.run_abstention`: one task does
the work, the flow publishes the Markdown summary as an artifact. Flows need no server
(ephemeral mode) and appear in the UI when ``PREFECT_API_URL`` is set.
"""
from __future__ import annotations

import os
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from agents.config import LLMConfig
from evaluation.abstention.config import AbstentionConfig
from evaluation.abstention.run import run_abstention
from flows.prefect_env import prefect_run_settings, publish_markdown, slug


@task(name="abstention", tags=["mtr", "abstention"], cache_policy=NO_CACHE, persist_result=False)
def abstention_task(benchmark: str, fmt: str, domain: str | None, out_dir: str, config: dict,
                    llm_config: str | None = None):
    llm = LLMConfig.from_file(llm_config) if llm_config else None
    return run_abstention(benchmark, out_dir, AbstentionConfig.model_validate(config), llm, format=fmt,
                          domain=domain)


@flow(name="mtr-abstention", flow_run_name="abstention-{run_name}", log_prints=False)
def abstention_flow(benchmark: str, fmt: str, domain: str | None, out_dir: str, config: dict,
                    llm_config: str | None = None, run_name: str = ""):
    """Run the analysis and publish its Markdown summary (key ``abstention-<run>``)."""
    res = abstention_task(benchmark, fmt, domain, out_dir, config, llm_config)
    publish_markdown(f"abstention-{slug(run_name or Path(out_dir).name)}", res.markdown,
                     "MTR-Suite content-based abstention evaluation")
    return res


def run_abstention_flow(benchmark: str | Path, fmt: str, domain: str | None, out_dir: str | Path,
                        config: AbstentionConfig, llm_config: str | Path | None = None):
    """Run :func:`abstention_flow` (ephemeral Prefect unless ``PREFECT_API_URL`` is set)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with prefect_run_settings(out):
        return abstention_flow(str(Path(benchmark).resolve()), fmt, domain, str(out.resolve()),
                               config.model_dump(mode="json"), str(llm_config) if llm_config else None,
                               run_name=out.name)


__all__ = ["abstention_flow", "abstention_task", "run_abstention_flow"]
