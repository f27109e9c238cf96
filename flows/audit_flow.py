"""The ``mtr-audit`` Prefect flow: a thin wrapper over :mod:`evaluation.audit`.

Tasks: ``audit-prepare`` (one per benchmark: load, units, candidate lists), ``audit-judge``
(one per judge x metric variant x benchmark batch, submitted concurrently; each opens its own
LLM session on the run directory, so the LLM call cache makes a rerun of an interrupted
flow repeat no answered call), ``audit-finalize`` (tables, heatmap, HTML) and a Markdown
artifact ``audit-<run>``. Tasks are not cached by Prefect (the LLM cache already is the
resume mechanism); ``mtr audit --prefect`` runs it, ``mtr audit`` calls
:func:`evaluation.audit.run_audit` directly with the same outputs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from agents.config import LLMConfig
from evaluation.audit import AuditConfig, AuditResult
from evaluation.audit.judges import judge_config, resolve_judges
from evaluation.audit.prepare import PreparedBenchmark, prepare_benchmark
from evaluation.audit.run import JudgeBatch, finalize, judge_batch, negatives_index_dir, plan_batches
from flows.prefect_env import llm_flow_params, llm_from_flow_params, prefect_run_settings, publish_markdown, slug
from storage.benchmark import load_benchmarks
from storage.store import RunStore


@task(name="audit-prepare", cache_policy=NO_CACHE, task_run_name="prepare[{spec[format]}:{spec[path]}]")
def prepare_task(spec: dict[str, Any], config: AuditConfig, cache_dir: str, run_dir: str) -> PreparedBenchmark:
    bench = load_benchmarks([spec])[0]
    # the hard-negative indexes persist under <run>/cache/index (built once, reopened on a rerun)
    p = prepare_benchmark(bench, config, cache_dir=cache_dir, index_dir=negatives_index_dir(run_dir))
    get_run_logger().info("%s: %s", p.name, p.counts())
    return p


@task(name="audit-judge", cache_policy=NO_CACHE, task_run_name="judge[{label}]")
def judge_task(batch: JudgeBatch, llm_config: LLMConfig, prepared: PreparedBenchmark, config: AuditConfig,
               run_dir: str, label: str) -> list[dict[str, Any]]:
    return judge_batch(batch, llm_config, prepared=prepared, config=config, store=run_dir)


@task(name="audit-finalize", cache_policy=NO_CACHE)
def finalize_task(prepared: list[PreparedBenchmark], judges: list, rows: list[dict[str, Any]], config: AuditConfig,
                  run_dir: str, human_ratings: str | None) -> AuditResult:
    return finalize(prepared, judges, rows, config, RunStore(run_dir), human_ratings=human_ratings)


@flow(name="mtr-audit", flow_run_name="audit-{run_name}", log_prints=False, validate_parameters=False)
def audit_flow(specs: list[dict[str, Any]], judges: Sequence[str] | None, run_dir: str, llm_config: str | None,
               config: AuditConfig, human_ratings: str | None = None, run_name: str = "",
               llm_digest: str | None = None) -> AuditResult:
    """Prepare every benchmark, judge every batch (concurrently), finalize, publish Markdown.

    ``llm_config`` is the LLM config's file and ``llm_digest`` the digest of its redacted form
    (:func:`flows.prefect_env.llm_flow_params`): the run's parameters never hold the config."""
    llm = llm_from_flow_params(llm_config, llm_digest)
    specs_j = resolve_judges(judges, llm)
    cfg = judge_config(llm, specs_j, config.metrics)
    cache_dir = config.embedding_cache or str(Path(run_dir) / "cache" / "embeddings")
    prepared = [prepare_task(s, config, cache_dir, run_dir) for s in specs]
    by_name = {p.name: p for p in prepared}
    futures = [judge_task.submit(b, cfg, by_name[b.benchmark], config, run_dir, b.label)
               for b in plan_batches(prepared, specs_j)]
    rows = [r for f in futures for r in f.result()]
    res = finalize_task(prepared, specs_j, rows, config, run_dir, human_ratings)
    publish_markdown(f"audit-{slug(Path(run_dir).name)}", res.markdown, "MTR-Eval audit summary")
    return res


def run_audit_flow(specs: list[dict[str, Any]], judges: Sequence[str] | None, *, out: str | Path,
                   llm_config: LLMConfig | None = None, config: AuditConfig | None = None,
                   human_ratings: str | Path | None = None) -> AuditResult:
    """Run :func:`audit_flow` (ephemeral Prefect unless ``PREFECT_API_URL`` is set)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    store = RunStore(str(out)).ensure()
    resolve_judges(judges, llm_config)          # fail before Prefect starts
    params = llm_flow_params(llm_config)
    with prefect_run_settings():
        return audit_flow(specs, list(judges) if judges else None, store.path, params["llm_config"],
                          config or AuditConfig(), str(human_ratings) if human_ratings is not None else None,
                          run_name=store.run_id, llm_digest=params["llm_digest"])
