"""Prefect flows for the corpus spine: curate -> chunk -> embed -> cluster.

Orchestration only: every task calls a plain stage function (``corpus.stages``,
``embedding.stage``, ``clustering.stages``). Tasks are cached on (stage, run dir, the stage's config, the
content hash of its input table, the stage code version), never on the flow-run id, and
results persist under ``<run>/cache/prefect``, so re-running an unchanged stage is a cache
hit. Flows need no server (ephemeral mode) and appear in the UI when PREFECT_API_URL is set.

Scale-out (``scale.runner = "dask"``, ``mtr build --runner dask``): the flow runs on a
prefect-dask ``DaskTaskRunner`` (a temporary LocalCluster, or ``scale.dask_address``; ``--runner ray``:
prefect-ray's ``RayTaskRunner``, a local Ray instance or ``scale.ray_address``) and,
when the embed stage is going to run, first encodes the chunks missing from the embedding
cache as parallel ``embed-batch`` tasks; the flow adds each batch to the cache, then the
unchanged embed stage gathers every vector from it and writes the same ``embeddings`` table
as a single-process run. Stage cache keys do not depend on the runner.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.results import get_result_store
from prefect.runtime import task_run
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

import clustering.greedy
import clustering.knn
import clustering.knn.exact
import clustering.knn.gpu
import clustering.knn.ivf
import clustering.stages as cstages
import clustering.topics
import corpus.chunk
import corpus.clean
import corpus.dedup
import corpus.load
import corpus.stages as stages
import embedding.encoder
import embedding.index
import embedding.stage as estages
import embedding.store
import embedding.vectors
from agents.secrets import public
from flows.config import MTRConfig
from flows.prefect_env import prefect_run_settings, publish_markdown, slug
from flows.progress import report
from storage.locks import run_lock
from storage.store import RunStore

STAGES = ("curate", "chunk", "embed", "cluster")
_CODE = {
    "curate": (corpus.load, corpus.clean, corpus.dedup, stages),
    "chunk": (corpus.chunk, corpus.dedup, stages),
    "embed": (embedding.encoder, embedding.index, embedding.store, estages),
    "cluster": (clustering.knn, clustering.knn.exact, clustering.knn.ivf, clustering.knn.gpu, clustering.greedy, clustering.topics, cstages, embedding.vectors),
}
_SECTIONS = {"curate": ("load", "clean", "dedup"), "chunk": ("chunk", "chunk_dedup", "dedup"),
             "embed": ("embed",), "cluster": ("cluster", "topics")}
_INPUT = {"curate": None, "chunk": "documents", "embed": "chunks", "cluster": "embeddings"}
_OUTPUT = {"curate": "documents", "chunk": "chunks", "embed": "embeddings", "cluster": "clusters"}


def code_version(stage: str) -> str:
    h = hashlib.sha256()
    for mod in _CODE[stage]:
        h.update(inspect.getsource(mod).encode())
    return h.hexdigest()[:16]


def _input_fingerprint(store: RunStore, stage: str, input_path: str | None) -> str:
    if stage == "curate":
        p = Path(input_path or "")
        h = hashlib.sha256(str(p.resolve()).encode())
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        for f in files:
            if f.is_file():
                st = f.stat()
                h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
        return h.hexdigest()
    if not store.has_table(_INPUT[stage]):
        return "missing"
    return store.table_stats(_INPUT[stage])["sha256"]


def stage_cache_key(stage: str, run_dir: str, config: dict, input_path: str | None = None) -> str:
    """Cache key of one stage (a missing output table forces a refresh, see ``spine_flow``)."""
    store = RunStore(run_dir)
    cfg = MTRConfig.model_validate(config)
    parts = [stage, store.path, cfg.stage_hash(*_SECTIONS[stage]), _input_fingerprint(store, stage, input_path),
             code_version(stage)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _key_fn(stage: str):
    def fn(context, parameters: dict[str, Any]) -> str:
        return stage_cache_key(stage, parameters["run_dir"], parameters["config"], parameters.get("input_path"))
    return fn


def _run_stage(stage: str, run_dir: str, config: dict, input_path: str | None = None, batched_new: int = 0) -> dict:
    store = RunStore(run_dir).ensure()
    cfg = MTRConfig.model_validate(config)
    logger = get_run_logger()
    if stage == "curate":
        summary = stages.curate(store, input_path, cfg, progress=report)
    elif stage == "chunk":
        summary = stages.chunk(store, cfg, progress=report)
    elif stage == "embed":
        summary = estages.embed(store, cfg, progress=report)
        if batched_new:  # vectors encoded by this run's embed-batch tasks, gathered here from the cache
            summary["newly_embedded"] += batched_new
            summary["from_cache"] -= batched_new
    else:
        summary = cstages.cluster(store, cfg, progress=report)
    store.write_manifest(stages={stage: {"summary": summary, "code_version": code_version(stage)}})
    logger.info("%s done: %s", stage, json.dumps(summary, default=str))
    return summary


def _name(stage: str):
    def fn():
        p = task_run.parameters
        return f"{stage}[{Path(p['run_dir']).name}]"
    return fn


curate_task = task(name="curate", cache_key_fn=_key_fn("curate"), persist_result=True, task_run_name=_name("curate"),
                   tags=["mtr", "stage:curate"])(lambda run_dir, config, input_path=None:
                                                  _run_stage("curate", run_dir, config, input_path))
chunk_task = task(name="chunk", cache_key_fn=_key_fn("chunk"), persist_result=True, task_run_name=_name("chunk"),
                  tags=["mtr", "stage:chunk"])(lambda run_dir, config: _run_stage("chunk", run_dir, config))
embed_task = task(name="embed", cache_key_fn=_key_fn("embed"), persist_result=True, task_run_name=_name("embed"),
                  tags=["mtr", "stage:embed"])(lambda run_dir, config, batched_new=0:
                                               _run_stage("embed", run_dir, config, batched_new=batched_new))
cluster_task = task(name="cluster", cache_key_fn=_key_fn("cluster"), persist_result=True,
                    task_run_name=_name("cluster"), tags=["mtr", "stage:cluster"])(
    lambda run_dir, config: _run_stage("cluster", run_dir, config))
TASKS = {"curate": curate_task, "chunk": chunk_task, "embed": embed_task, "cluster": cluster_task}


def _batch_name() -> str:
    p = task_run.parameters
    return f"embed-batch-{p['index']}[{Path(p['run_dir']).name}]"


@task(name="embed-batch", cache_policy=NO_CACHE, retries=1, task_run_name=_batch_name, tags=["mtr", "stage:embed"])
def embed_batch_task(run_dir: str, config: dict, texts: list[str], index: int):
    """Encode one batch of texts on whichever worker runs it; the vectors come back to the flow."""
    return estages.embed_batch(texts, MTRConfig.model_validate(config))


def task_runner_for(cfg: MTRConfig):
    """The flow's task runner for ``scale.runner``: None (Prefect's default), a DaskTaskRunner or a RayTaskRunner."""
    s = cfg.scale
    if s.runner == "default":
        return None
    if s.runner == "ray":
        return _ray_runner(s.ray_address, s.ray_workers)
    try:
        from prefect_dask import DaskTaskRunner   # costly: dask (scale.runner = dask only)
    except ImportError as exc:  # pragma: no cover - prefect-dask is a pinned dependency
        raise ValueError("the dask runner needs prefect-dask (pip install prefect-dask)") from exc
    if s.dask_address:
        return DaskTaskRunner(address=s.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": s.dask_workers, "threads_per_worker": s.dask_threads_per_worker,
                                          "processes": True, "host": "127.0.0.1"})


def _ray_runner(address: str | None, workers: int):
    """prefect-ray's RayTaskRunner: on ``address``, else on a local Ray instance of ``workers`` CPUs that
    the flow starts and stops (no dashboard, no usage stats); an instance this process already started
    (``ray.init``) is used as it is."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")    # before ray is imported: nothing calls home
    try:
        from prefect_ray import RayTaskRunner     # costly: ray (scale.runner = ray only)
    except ImportError:
        raise ValueError("the ray runner needs prefect-ray (pip install 'mtr-suite[ray]')") from None
    if address:
        return RayTaskRunner(address=address)
    return RayTaskRunner(init_kwargs={"num_cpus": workers, "include_dashboard": False})


def _parallel(cfg: MTRConfig) -> bool:
    """Batch the embed stage: ``scale.runner`` asks for it, or the flow was given a non-default
    task runner (e.g. prefect-ray's RayTaskRunner through ``run_spine(..., task_runner=...)``)."""
    if cfg.scale.runner != "default":
        return True
    ctx = FlowRunContext.get()
    return ctx is not None and ctx.task_runner is not None and not isinstance(ctx.task_runner, ThreadPoolTaskRunner)


def _stage_cached(stage: str, run_dir: str, config: dict, input_path: str | None = None) -> bool:
    """Whether the stage task would be a cache hit (its persisted result exists)."""
    try:
        key = stage_cache_key(stage, run_dir, config, input_path)
        return get_result_store().update_for_task(TASKS[stage]).exists(key)
    except Exception:  # noqa: BLE001 - unknown means "not cached": the batches then only warm the cache
        return False


@contextmanager
def _api_for_workers():
    """Point the workers at this flow's API (the submitted tasks carry the settings context).

    Without a server (ephemeral mode) PREFECT_API_URL is unset and each Dask worker would
    otherwise start a temporary server of its own on the same database.
    """
    ctx = FlowRunContext.get()
    url = getattr(getattr(ctx, "client", None), "api_url", None)
    if PREFECT_API_URL.value() or not url:
        yield
        return
    with temporary_settings(updates={PREFECT_API_URL: str(url).rstrip("/")}):
        yield


def embed_in_batches(run_dir: str, config: dict) -> int:
    """Encode the chunks missing from the embedding cache as parallel tasks; returns how many were encoded."""
    cfg = MTRConfig.model_validate(config)
    store = RunStore(run_dir)
    batches = estages.embed_plan(store, cfg, cfg.scale.embed_batch_chunks)
    if not batches:
        return 0
    total = sum(len(b["hashes"]) for b in batches)
    get_run_logger().info("embedding %d new chunks in %d parallel batches", total, len(batches))
    with _api_for_workers():
        futures = [embed_batch_task.submit(run_dir=run_dir, config=config, texts=b["texts"], index=i)
                   for i, b in enumerate(batches)]
    for b, fut in zip(batches, futures):
        estages.embed_store_batch(store, cfg, b["hashes"], fut.result())
        report("embed-batches", len(b["hashes"]), total)
    return total


@flow(name="mtr-spine", flow_run_name="spine-{run_name}", log_prints=False)
def spine_flow(run_dir: str, config: dict, stages_to_run: list[str], input_path: str | None = None,
               run_name: str = "") -> dict:
    """Run the requested spine stages in order on one run directory."""
    results: dict[str, Any] = {}
    parallel = _parallel(MTRConfig.model_validate(config))
    for stage in STAGES:
        if stage not in stages_to_run:
            continue
        store = RunStore(run_dir)
        # A stage whose output table is gone must run even when its key is cached.
        refresh = not store.has_table(_OUTPUT[stage])
        t = TASKS[stage].with_options(refresh_cache=refresh)
        if stage == "curate":
            state = t(run_dir=run_dir, config=config, input_path=input_path, return_state=True)
        elif stage == "embed" and parallel and (refresh or not _stage_cached(stage, run_dir, config)):
            state = t(run_dir=run_dir, config=config, batched_new=embed_in_batches(run_dir, config),
                      return_state=True)
        else:
            state = t(run_dir=run_dir, config=config, return_state=True)
        summary = state.result()
        results[stage] = {"summary": summary, "cached": state.name == "Cached"}
    publish_markdown(f"spine-{slug(Path(run_dir).name)}", lambda: summary_markdown(run_dir, results),
                     "MTR-Suite spine summary")
    return results


def summary_markdown(run_dir: str, results: dict) -> str:
    lines = [f"# MTR-Suite run `{Path(run_dir).name}`", "", f"Artifacts: `{run_dir}`", "",
             "| stage | cached | summary |", "|---|---|---|"]
    for stage, r in results.items():
        s = ", ".join(f"{k}={v}" for k, v in r["summary"].items() if not isinstance(v, dict))
        lines.append(f"| {stage} | {r['cached']} | {s} |")
    return "\n".join(lines)


def preflight(run_dir: str, stages_to_run: list[str], input_path: str | None) -> None:
    """Fail fast, before Prefect starts, when a stage's input cannot exist."""
    unknown = [s for s in stages_to_run if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; stages are {', '.join(STAGES)}")
    first = next(s for s in STAGES if s in stages_to_run)
    if first == "curate":
        if not input_path or not Path(input_path).exists():
            raise ValueError(f"corpus path {input_path} does not exist")
        return
    store = RunStore(run_dir)
    if not store.has_table(_INPUT[first]):
        earlier = STAGES[STAGES.index(first) - 1]
        raise ValueError(f"run {run_dir} has no {_INPUT[first]!r} table yet; run `mtr {earlier}` on it first")


def run_spine_in_flow(run_dir: str, cfg: MTRConfig, stages_to_run: list[str], input_path: str | None = None) -> dict:
    """The spine as a subflow of another flow (results go to the worker's result storage)."""
    preflight(run_dir, stages_to_run, input_path)
    with run_lock(run_dir):   # one process per run directory (re-entrant: callers may hold it already)
        store = RunStore(run_dir).ensure()
        store.write_manifest(config=public(cfg), **({"input": input_path} if input_path else {}))
        return _spine(cfg)(run_dir=store.path, config=public(cfg),
                           stages_to_run=list(stages_to_run), input_path=input_path, run_name=Path(store.path).name)


def _spine(cfg: MTRConfig, task_runner=None):
    runner = task_runner or task_runner_for(cfg)
    return spine_flow if runner is None else spine_flow.with_options(task_runner=runner)


def run_spine(run_dir: str, cfg: MTRConfig, stages_to_run: list[str], input_path: str | None = None,
              task_runner=None) -> dict:
    """Run the spine flow (ephemeral Prefect unless PREFECT_API_URL is set).

    ``task_runner`` overrides ``scale.runner`` with any Prefect task runner (e.g. prefect-ray's
    ``RayTaskRunner``); a non-default one gets the batched embed stage too.
    """
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    preflight(run_dir, stages_to_run, input_path)
    with run_lock(run_dir):   # one process per run directory (re-entrant: the CLI holds it already)
        return _run_spine_locked(run_dir, cfg, stages_to_run, input_path, task_runner)


def _run_spine_locked(run_dir: str, cfg: MTRConfig, stages_to_run: list[str], input_path: str | None,
                      task_runner) -> dict:
    store = RunStore(run_dir).ensure()
    store.write_manifest(config=public(cfg),
                         **({"input": str(Path(input_path).resolve())} if input_path else {}))
    with prefect_run_settings(store.path):
        return _spine(cfg, task_runner)(run_dir=store.path, config=public(cfg),
                                        stages_to_run=list(stages_to_run),
                                        input_path=str(Path(input_path).resolve()) if input_path else None,
                                        run_name=Path(store.path).name)
