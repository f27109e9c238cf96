"""The self-audit: MTR-Eval on a benchmark the synthesis has just written, before anyone relies on it.

:func:`run_self_audit` loads the synthesis run as an ``ours`` benchmark and audits it with :func:`run_audit`
into ``<run>/audit`` (a run directory of its own: tables, ``report.html``, ``llm_calls``, so the audit's cost stays
apart from the synthesis's): the four metrics, distinguishability against hard negatives retrieved from the corpus,
the heuristic judges always (offline stand-ins, named as such) and, with an LLM config, each of its endpoints as an
LLM judge. A judge never rates a turn its own model wrote (self-preference exclusion, :class:`JudgeSpec.is_self`):
those judgments are kept as ``excluded_self`` and counted. The ensemble's summary is written into the synthesis run
as the table ``self_audit`` (schema ``audit_summary``) and the manifest's ``self_audit`` section; the dataset card
shows it (:func:`evaluation.card_quality.audit_section`).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from agents.config import LLMConfig
from evaluation.audit import schemas
from evaluation.audit.base import JudgeSpec
from evaluation.audit.config import AuditConfig, variant_name
from evaluation.audit.judges import heuristic_judges, resolve_judges
from evaluation.audit.run import run_audit
from storage.benchmark import load_benchmark
from storage.run_files import location, push_dir
from storage.store import RunStore

AUDIT_DIR = "audit"             # <run>/audit: the self-audit's own run directory


def self_audit_judges(llm_config: LLMConfig | None, names: Sequence[str] | None = None,
                      llm_judges: bool = True) -> list[JudgeSpec]:
    """``names`` resolved (:func:`resolve_judges`), else the heuristic judges plus, when ``llm_judges`` and the LLM
    config has endpoints, one LLM judge per endpoint (its default model)."""
    if names:
        return resolve_judges(names, llm_config)
    specs = heuristic_judges()
    online = llm_config is not None and llm_config.backend != "offline" and bool(llm_config.endpoints)
    if llm_judges and online:
        specs += resolve_judges(None, llm_config)
    return specs


def _calls_cost(store: RunStore) -> dict[str, float]:
    """LLM calls, cache hits, tokens and cost (USD) of a run's ``llm_calls`` (unique call ids)."""
    out = {"calls": 0, "cache_hits": 0, "tokens": 0, "cost_usd": 0.0}
    if not store.has_table("llm_calls"):
        return out
    seen: set[str] = set()
    for r in store.read_table("llm_calls").to_pylist():
        if r["call_id"] in seen:
            continue
        seen.add(r["call_id"])
        out["calls"] += 1
        out["cache_hits"] += bool(r.get("cache_hit"))
        out["tokens"] += (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)
        out["cost_usd"] += r.get("cost_usd") or 0.0
    out["cost_usd"] = round(out["cost_usd"], 6)
    return out


def run_self_audit(run_dir: str | Path, llm_config: LLMConfig | None = None, *, judges: Sequence[str] | None = None,
                   llm_judges: bool = True, config: AuditConfig | None = None) -> dict[str, Any]:
    """Audit the synthesis run ``run_dir`` (see module docstring); returns what the card and the run record: the
    judges, the ensemble's and each judge's summary rows, the self exclusions, the audit's cost beside the
    synthesis's, its wall time and where its report is. A run without an accepted turn is not audited
    (``skipped`` says why)."""
    store = RunStore(str(run_dir))
    bench = load_benchmark(store.path, "ours")
    specs = self_audit_judges(llm_config, judges, llm_judges)
    work = str(store.local_dir(AUDIT_DIR))   # <run>/audit; an object-store run's is local, pushed to the store at the end
    base = {"judges": [j.to_dict() for j in specs], "out_dir": location(store, AUDIT_DIR),
            "synthesis_cost": _calls_cost(store), "turns": len(bench.turns)}
    if not bench.turns:
        result = {**base, "skipped": "no accepted turn to audit", "summary": [], "cost": _calls_cost(RunStore(work))}
        store.write_manifest(self_audit={k: v for k, v in result.items() if k != "summary"})
        return result
    t0 = time.perf_counter()
    res = run_audit(bench, specs, out=work, llm_config=llm_config, config=config or AuditConfig())
    wall = round(time.perf_counter() - t0, 2)
    rows = [dict(r, benchmark=bench.name) for r in res.summary]
    store.write_table("self_audit", schemas.table("audit_summary", rows), schemas.AUDIT_SUMMARY)
    excluded = sum(r["status"] == "excluded_self" for r in res.scores)
    ensemble = {variant_name(r["metric"], r["variant"]): {k: r[k] for k in ("mean", "ci_low", "ci_high", "n")}
                for r in rows if r["judge"] == "ensemble"}
    result = {**base, "skipped": None, "summary": rows, "ensemble": ensemble, "excluded_self": excluded,
              "offline_judges": [j.name for j in specs if j.heuristic], "cost": _calls_cost(RunStore(work)),
              "wall_s": wall, "report": str(res.files.get("html") or ""),
              "config": res.config.model_dump(mode="json")}
    push_dir(store, AUDIT_DIR)
    store.write_manifest(self_audit={k: v for k, v in result.items() if k != "summary"})
    return result


def self_audit_or_reason(run_dir: str | Path, llm_config: LLMConfig | None = None, *,
                         judges: Sequence[str] | None = None, llm_judges: bool = True,
                         options: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`run_self_audit` (``options``: :class:`AuditConfig` fields). An audit that fails does not lose the
    benchmark: the result is then ``{"skipped": "the audit failed: <why>"}``, also in the manifest, for the card
    to say (:func:`evaluation.card_quality.audit_section`)."""
    try:
        return run_self_audit(run_dir, llm_config, judges=judges, llm_judges=llm_judges,
                              config=AuditConfig(**(options or {})))
    except Exception as exc:  # noqa: BLE001 - the synthesized benchmark stays; the card and manifest say why
        result = {"skipped": f"the audit failed: {type(exc).__name__}: {exc}", "summary": []}
        RunStore(str(run_dir)).write_manifest(self_audit={"skipped": result["skipped"]})
        return result
