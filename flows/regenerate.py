"""Scheduled benchmark regeneration, versioned; plus the evaluate-retrievers flow.

``regenerate_benchmark`` (deployment ``regenerate-benchmark``): each run builds a benchmark
*version* named ``<date>-<config hash>-<corpus hash>`` under ``output_root``:

* every cached stage is reused: the spine's stage caches (same version dir), the shared
  embedding cache (``<output_root>/.cache/embeddings``) and the shared LLM call cache
  (``<output_root>/.cache/llm``), so an unchanged corpus re-embeds nothing and re-asks the
  LLM nothing even on a new date;
* the version is published only when everything succeeded: ``_SUCCESS`` marker, then
  ``LATEST`` is replaced atomically. A failed run leaves its partial version without a
  marker and ``LATEST`` still names the last good version;
* a diff against the previous good version is written (``diff.json``, ``diff.md``): documents
  added/removed, conversations regenerated, metric drift of the evaluated retrievers;
* ``output_root`` may be a bucket (``s3://bucket/prefix``): the version is built in a local staging
  root, then published there through ``pyarrow.fs`` (:mod:`flows.version_bucket`), and the flow run
  gets a link artifact (``benchmark-version``) to the version in the bucket.

Parameters hold no secrets: the LLM endpoint is given by *name* (its key comes from the
environment variable named in the LLM config, or a Prefect Secret block resolved on the worker).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from agents.config import LLMConfig
from evaluation.audit.config import AuditConfig
from evaluation.benchmark_eval import evaluate_and_report, summary_rows
from flows.audit_flow import audit_flow
from flows.config import MTRConfig, load_config
from flows.pipeline import run_spine_in_flow
from flows.prefect_env import llm_flow_params, publish_markdown
from flows.synthesis import synthesize_flow
from flows.version_bucket import (LATEST, SUCCESS, good_versions_of, latest_of, publish_link, publish_version,
                                  root_fs, staging_root)
from storage.filesystems import is_remote
from storage.store import RunStore


def corpus_hash(path: str | Path) -> str:
    """Content hash of a corpus file or directory (file names + bytes), independent of mtimes."""
    p = Path(path)
    h = hashlib.sha256()
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def config_hash(cfg: MTRConfig) -> str:
    data = cfg.model_dump(mode="json")
    for run_setting in ("runs_root", "scale", "llm_cache_dir"):   # where/how it runs, not what it builds
        data.pop(run_setting, None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def version_id(cfg: MTRConfig, corpus: str | Path, date: str | None = None) -> str:
    date = date or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d")
    return f"{date}-{config_hash(cfg)[:8]}-{corpus_hash(corpus)[:8]}"


def good_versions(root: str | Path) -> list[str]:
    """Published versions under a local or ``s3://`` output root."""
    return good_versions_of(root)


def latest(root: str | Path) -> str | None:
    """The version ``LATEST`` names under a local or ``s3://`` output root."""
    return latest_of(root)


def publish(root: str | Path, version: str) -> None:
    """Mark a version good and point LATEST at it (atomic replace)."""
    root = Path(root)
    (root / version / SUCCESS).write_text(_dt.datetime.now(_dt.timezone.utc).isoformat())
    tmp = root / f".{LATEST}.tmp"
    tmp.write_text(version + "\n")
    os.replace(tmp, root / LATEST)


def resolve_benchmark(path: str | Path) -> Path:
    """A benchmark directory, or an output root whose LATEST names the current good version."""
    p = Path(path)
    if (p / LATEST).exists():
        return p / (p / LATEST).read_text().strip()
    return p


def version_diff(old_dir: str | Path | None, new_dir: str | Path) -> dict[str, Any]:
    """Documents added/removed, conversations regenerated, metric drift (new - old); either version
    may be local or in a bucket (``s3://...``)."""
    new = RunStore(str(new_dir))
    out: dict[str, Any] = {"previous": RunStore(str(old_dir)).run_id if old_dir else None, "current": new.run_id}
    if not old_dir:
        out["note"] = "first version: nothing to compare with"
        return out
    old = RunStore(str(old_dir))

    def docs(s: RunStore) -> dict[str, str]:
        t = s.read_table("documents", columns=["doc_id", "content_hash"]).to_pylist()
        return {r["doc_id"]: r["content_hash"] for r in t}

    def convs(s: RunStore) -> dict[str, str]:
        h: dict[str, hashlib._Hash] = {}
        for r in sorted(s.read_table("turns").to_pylist(), key=lambda r: (r["conv_id"], r["turn"])):
            h.setdefault(r["conv_id"], hashlib.sha256()).update(
                json.dumps([r["question"], r["answer"], r["gold_doc_ids"]]).encode())
        return {k: v.hexdigest() for k, v in h.items()}

    def metrics(d: str | Path) -> dict[str, float]:
        fs, base = root_fs(d)
        if fs.get_file_info(f"{base}/eval/metrics.parquet").type != pafs.FileType.File:
            return {}
        rows = pq.read_table(f"{base}/eval/metrics.parquet", filesystem=fs).to_pylist()   # long format: retriever, measure, mean, ci...
        return {f"{r['retriever']}:{r['measure']}": float(r["mean"]) for r in rows
                if r.get("measure") in ("ndcg_cut_5", "recall_5", "recall_20") and r.get("mean") is not None}

    do, dn = docs(old), docs(new)
    out["documents_added"] = sorted(set(dn) - set(do))
    out["documents_removed"] = sorted(set(do) - set(dn))
    out["documents_changed"] = sorted(d for d in set(do) & set(dn) if do[d] != dn[d])
    co, cn = convs(old), convs(new)
    out["conversations_regenerated"] = sorted(c for c in cn if co.get(c) != cn[c])
    out["conversations_unchanged"] = sum(1 for c in cn if co.get(c) == cn[c])
    mo, mn = metrics(old_dir), metrics(new_dir)
    out["metric_drift"] = {k: round(mn[k] - mo[k], 6) for k in sorted(set(mo) & set(mn))}
    return out


def diff_markdown(d: dict[str, Any]) -> str:
    lines = [f"# Benchmark version `{d['current']}`", "", f"Previous good version: `{d['previous']}`", ""]
    if d.get("note"):
        return "\n".join(lines + [d["note"]])
    lines += [f"- documents added: {len(d['documents_added'])}, removed: {len(d['documents_removed'])}, "
              f"changed: {len(d['documents_changed'])}",
              f"- conversations regenerated: {len(d['conversations_regenerated'])}, "
              f"unchanged: {d['conversations_unchanged']}", "", "| metric | drift |", "|---|---|"]
    lines += [f"| {k} | {v:+.4f} |" for k, v in d["metric_drift"].items()]
    return "\n".join(lines)


@task(name="evaluate-retrievers", cache_policy=NO_CACHE, tags=["mtr", "stage:evaluate"])
def evaluate_task(benchmark: str, fmt: str, retrievers: list[str], modes: list[str], depth: int,
                  domain: str | None = None) -> dict:
    _, ev, files, out = evaluate_and_report(benchmark, fmt, retrievers, modes, depth, None, domain)
    return {"rows": summary_rows(ev), "markdown": files.markdown, "report": str(files.html), "out": str(out)}


@flow(name="evaluate-retrievers", flow_run_name="evaluate-{fmt}-{benchmark_name}")
def evaluate_retrievers(benchmark: str, fmt: str = "ours", retrievers: list[str] | None = None,
                        query_modes: list[str] | None = None, depth: int = 20, domain: str | None = None,
                        benchmark_name: str = "") -> dict:
    """Run retrievers on a benchmark and publish the table as a markdown artifact."""
    benchmark = str(resolve_benchmark(benchmark))
    res = evaluate_task(benchmark, fmt, retrievers or ["bm25", "dense", "hybrid"], query_modes or ["last_turn"],
                        depth, domain)
    publish_markdown("evaluation", lambda: res["markdown"] + f"\n\nReport: `{res['report']}`", "retrieval evaluation")
    return res


def _regen_name() -> str:
    p = flow_run.parameters
    day = p.get("date") or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d")
    return f"regenerate-{Path(p['corpus']).name}-{day}"


@flow(name="regenerate-benchmark", flow_run_name=_regen_name)
def regenerate_benchmark(corpus: str, output_root: str, config_file: str | None = None,
                         llm_endpoint: str | None = None, llm_config: str | None = None,
                         date: str | None = None) -> dict:
    """Build (or reuse) today's benchmark version, evaluate it, diff it, publish it."""
    logger = get_run_logger()
    remote = is_remote(output_root)
    if remote:
        root_fs(output_root)          # a bad bucket URI fails here, before any stage runs
    root = staging_root(output_root) if remote else Path(output_root).resolve()   # where the version is built
    root.mkdir(parents=True, exist_ok=True)
    home = output_root.rstrip("/") if remote else str(root)                      # where versions are published
    overrides: dict[str, Any] = {"runs_root": str(root), "embed.cache_dir": str(root / ".cache" / "embeddings"),
                                 "llm_cache_dir": str(root / ".cache" / "llm")}
    if llm_config:
        overrides["llm_config"] = llm_config
    cfg = load_config(config_file, overrides)
    if llm_endpoint:
        logger.info("LLM endpoint: %s (key from its configured environment variable)", llm_endpoint)
    version = version_id(cfg, corpus, date)
    vdir = root / version
    previous = latest(home)
    logger.info("version %s (previous good: %s)", version, previous)
    spine = run_spine_in_flow(str(vdir), cfg, ["curate", "chunk", "embed", "cluster"], str(Path(corpus).resolve()))
    synth = synthesize_flow(run_dir=str(vdir), config=cfg.model_dump(mode="json"), run_name=version)
    ev = evaluate_retrievers(str(vdir), "ours", cfg.eval.retrievers, cfg.eval.query_modes, cfg.eval.depth,
                             benchmark_name=version)
    diff = version_diff(_previous_version(home, previous, version), vdir)
    (vdir / "diff.json").write_text(json.dumps(diff, indent=2))
    (vdir / "diff.md").write_text(diff_markdown(diff))
    publish(root, version)
    uri, link = str(vdir), None
    if remote:
        uri = publish_version(vdir, output_root, version)
        link = publish_link(output_root, version)
        logger.info("version %s published to %s", version, uri)
    cached = {s: r["cached"] for s, r in spine.items()}
    md = (f"# Regenerated `{version}`\n\nSpine stages cached: {cached}\n\n" + diff_markdown(diff)
          + f"\n\nSynthesis: {synth['summary']}\n\nEvaluation report: `{ev['report']}`\n"
          + (f"\nPublished to the bucket: [{uri}]({link})\n" if link else ""))
    publish_markdown("regeneration", md, "benchmark regeneration")
    return {"version": version, "dir": str(vdir), "uri": uri, "link": link, "spine_cached": cached,
            "synth": synth["summary"], "diff": diff}


def _previous_version(home: str, previous: str | None, version: str) -> str | None:
    """The last good version before ``version`` under ``home`` (a local root or a bucket URI): the one
    ``LATEST`` names, or when that is ``version`` itself (a rerun) the good one before it."""
    good = [v for v in good_versions(home) if v != version]
    if previous == version:
        return f"{home}/{good[-1]}" if good else None
    return f"{home}/{previous}" if previous in good else None


@flow(name="audit-benchmark", flow_run_name="audit-{fmt}-{benchmark_name}")
def audit_benchmark(benchmark: str, fmt: str = "ours", domain: str | None = None, judges: list[str] | None = None,
                    llm_config: str | None = None, out: str | None = None, limit: int | None = None,
                    benchmark_name: str = "") -> dict:
    """Deployable audit: JSON parameters only (the LLM config is a *path*; keys stay in the environment)."""
    benchmark = str(resolve_benchmark(benchmark))
    cfg = AuditConfig(limit=limit) if limit else AuditConfig()
    llm = LLMConfig.from_file(llm_config) if llm_config else None
    out_dir = out or (str(Path(benchmark) / "audit") if fmt == "ours" else f"mtr-audit/{Path(benchmark).name}")
    RunStore(out_dir).ensure()
    specs = [{"path": benchmark, "format": fmt, "domain": domain, "split": "test"}]
    params = llm_flow_params(llm)     # the file and the digest of its redacted form, never the config
    res = audit_flow(specs, judges, str(Path(out_dir).resolve()), params["llm_config"], cfg, None,
                     run_name=Path(out_dir).name, llm_digest=params["llm_digest"])
    return {"out": out_dir, "markdown": getattr(res, "markdown", "")}
