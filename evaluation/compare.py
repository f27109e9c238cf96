"""Cross-benchmark comparison (the paper's Figure 2): the same retrievers and query modes on
several benchmarks, how well each benchmark separates them, and the audit's scores per
benchmark.

Verb: :func:`compare_benchmarks` runs :func:`evaluation.benchmark_eval.evaluate_benchmark` on
every benchmark (any format :func:`storage.benchmark.load_benchmark` reads) and returns

* ``scores``: Recall@20 and nDCG@5 (and any other ``measures``) per benchmark x retriever x
  query mode (Figure 2(b));
* ``discrimination``: per benchmark x query mode x measure, the spread (max - min) and the
  population std of the retrievers' means (:func:`evaluation.discrimination.discrimination`)
  and how many retriever pairs differ significantly under the paired randomisation test
  (:func:`evaluation.discrimination.significant_pairs`);
* ``audit``: with audit runs (``mtr audit --out RUN``), the ensemble means of the four
  metrics per benchmark (Figure 2(a)), matched by benchmark name.

:func:`write_comparison` writes CSV/JSON tables, ``comparison.md`` and the two figures.
"""
from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from evaluation.benchmark_eval import evaluate_benchmark
from evaluation.discrimination import discrimination, significant_pairs
from storage.benchmark import Benchmark
from storage.store import RunStore, StoreError

MEASURES = ("recall_20", "ndcg_cut_5")
LABELS = {"recall_20": "Recall@20", "ndcg_cut_5": "nDCG@5", "recall_5": "Recall@5", "recip_rank_10": "MRR@10"}
AUDIT_METRICS = (("alignment", ""), ("distinguishability", "retrieved"), ("faithfulness", ""), ("quality", ""))


@dataclass
class Comparison:
    """Result of :func:`compare_benchmarks` (tables as lists of row dicts)."""

    benchmarks: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    discrimination: list[dict[str, Any]]
    audit: list[dict[str, Any]] = field(default_factory=list)
    audit_offline_judges: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


def subsample_conversations(bench: Benchmark, n: int, seed: int = 0) -> Benchmark:
    """The benchmark with a seeded sample of ``n`` whole conversations (benchmark order kept;
    the corpus is unchanged). ``n`` >= the number of conversations returns ``bench``."""
    convs = list(dict.fromkeys(t.conv_id for t in bench.turns))
    if n >= len(convs):
        return bench
    keep = set(random.Random(seed).sample(convs, n))
    return replace(bench, turns=[t for t in bench.turns if t.conv_id in keep])


def compare_benchmarks(benches: Sequence[Benchmark], retrievers: Sequence[str], modes: Sequence[str], *,
                       measures: Sequence[str] = MEASURES, depth: int = 20, work_dir: str | Path | None = None,
                       alpha: float = 0.05, correction: str = "none", n_resamples: int = 10_000, seed: int = 0,
                       audit_runs: Sequence[str | Path] = (), notes: Mapping[str, str] | None = None,
                       progress: Callable[[str], None] | None = None,
                       evaluate_fn: Callable[..., Any] | None = None) -> Comparison:
    """Evaluate ``retrievers`` x ``modes`` on every benchmark and compare (see module docstring).

    Args:
        benches: loaded benchmarks (distinct names).
        retrievers: retriever names (``retrieval.registry``), at least two for discrimination.
        modes: query modes (``retrieval.queries``).
        measures: per-query measures reported (first = the discrimination headline).
        depth: retrieval depth.
        work_dir: where BM25 indexes and the (shared) embedding cache go.
        alpha / correction / n_resamples / seed: of the significance counts.
        audit_runs: audit run directories whose ensemble means are shown per benchmark.
        notes: ``{benchmark: note}`` shown with the benchmark (e.g. "12 of 29 conversations").
        progress: called with a line per finished evaluation.
        evaluate_fn: stand-in for :func:`evaluation.benchmark_eval.evaluate_benchmark` (tests).
    """
    names = [b.name for b in benches]
    if len(set(names)) != len(names):
        raise ValueError(f"benchmark names must be distinct, got {names}")
    evaluate_fn = evaluate_fn or evaluate_benchmark
    work = Path(work_dir) if work_dir is not None else None
    ks = sorted({int(m.rsplit("_", 1)[1]) for m in measures if m.rsplit("_", 1)[-1].isdigit()} | {20})
    bench_rows, scores, disc = [], [], []
    for b in benches:
        ev = evaluate_fn(b, list(retrievers), list(modes), depth=depth,
                         index_dir=work / "bm25" / b.name if work else None,
                         cache_dir=work / "embeddings" if work else None, ks=ks)
        bench_rows.append({"name": b.name, "format": b.format, "n_turns": len(b.turns),
                           "n_conversations": len({t.conv_id for t in b.turns}), "n_queries": ev.n_queries,
                           "note": (notes or {}).get(b.name, "")})
        for mode in modes:
            by_retr = {r: ev.results[f"{r}/{mode}"] for r in retrievers}
            for r, res in by_retr.items():
                m = res.means()
                scores.append({"benchmark": b.name, "retriever": r, "mode": mode, "n": res.n_queries,
                               **{x: m.get(x, math.nan) for x in measures}})
            if len(by_retr) >= 2:
                for x in measures:
                    d = discrimination(by_retr, x)
                    pc = significant_pairs(by_retr, x, alpha=alpha, n_resamples=n_resamples, seed=seed,
                                           correction=correction)
                    disc.append({"benchmark": b.name, "mode": mode, "measure": x, "spread": d.spread, "std": d.std,
                                 "best": d.best, "worst": d.worst, "n_pairs": pc.n_pairs,
                                 "n_significant": pc.n_significant, "alpha": alpha, "correction": correction,
                                 "p_values": {f"{a} vs {c}": p for (a, c), p in pc.pairs.items()}})
        if progress:
            progress(f"{b.name}: {ev.n_queries} queries evaluated")
    audit, offline = audit_means(audit_runs, names)
    return Comparison(benchmarks=bench_rows, scores=scores, discrimination=disc, audit=audit,
                      audit_offline_judges=offline,
                      settings={"retrievers": list(retrievers), "modes": list(modes), "measures": list(measures),
                                "depth": depth, "alpha": alpha, "correction": correction,
                                "n_resamples": n_resamples, "seed": seed,
                                "audit_runs": [str(a) for a in audit_runs]})


def audit_means(runs: Sequence[str | Path], benchmarks: Sequence[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Ensemble means of the four audit metrics (forward distinguishability on retrieved
    negatives) per benchmark named in ``benchmarks``, from audit run directories; and the
    offline heuristic judges any of them used. A benchmark audited in several runs takes the
    last run's values."""
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    offline: list[str] = []
    for run in runs:
        store = RunStore(str(run))
        if not store.has_table("audit_summary"):
            raise StoreError(f"{run} is not an audit run (no audit_summary table)")
        man = store.read_manifest().get("audit", {})
        offline += [j for j in man.get("offline_heuristic_judges", []) if j not in offline]
        for r in store.read_table("audit_summary").to_pylist():
            if r["judge"] == "ensemble" and (r["metric"], r["variant"]) in AUDIT_METRICS and r["benchmark"] in benchmarks:
                cells[(r["benchmark"], r["metric"], r["variant"])] = {
                    "benchmark": r["benchmark"], "metric": r["metric"], "variant": r["variant"], "mean": r["mean"],
                    "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": r["n"], "run": str(run)}
    order = {b: i for i, b in enumerate(benchmarks)}
    mo = {m: i for i, m in enumerate(AUDIT_METRICS)}
    rows = sorted(cells.values(), key=lambda r: (order[r["benchmark"]], mo[(r["metric"], r["variant"])]))
    return rows, offline


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------
def _f(x: Any, d: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{d}f}" if isinstance(x, float) else str(x)


def comparison_markdown(c: Comparison) -> str:
    """The tables as Markdown: scores (retrievers x benchmarks per mode and measure),
    discrimination, audit means."""
    meas = c.settings["measures"]
    benches = [b["name"] for b in c.benchmarks]
    cell = {(r["benchmark"], r["retriever"], r["mode"]): r for r in c.scores}
    lines = ["| benchmark | format | conversations | turns with qrels | note |", "|---|---|---|---|---|"]
    lines += [f"| {b['name']} | {b['format']} | {b['n_conversations']} | {b['n_queries']} | {b['note']} |"
              for b in c.benchmarks]
    lines.append("")
    for mode in c.settings["modes"]:
        lines += [f"Query mode `{mode}`: " + " / ".join(LABELS.get(m, m) for m in meas), "",
                  "| retriever | " + " | ".join(benches) + " |", "|---|" + "---|" * len(benches)]
        for r in c.settings["retrievers"]:
            lines.append(f"| {r} | " + " | ".join(" / ".join(_f(cell[(b, r, mode)][m]) for m in meas)
                                                   for b in benches) + " |")
        lines.append("")
    if c.discrimination:
        lines += [f"Discrimination: spread (max - min) and std of the retrievers' means; significant = retriever "
                  f"pairs with p < {c.settings['alpha']} (paired randomisation test, "
                  f"{c.settings['n_resamples']} sign flips, correction: {c.settings['correction']}).", "",
                  "| benchmark | mode | measure | spread | std | significant pairs | best | worst |",
                  "|---|---|---|---|---|---|---|---|"]
        for d in c.discrimination:
            lines.append(f"| {d['benchmark']} | {d['mode']} | {LABELS.get(d['measure'], d['measure'])} | "
                         f"{_f(d['spread'])} | {_f(d['std'])} | {d['n_significant']} of {d['n_pairs']} | "
                         f"{d['best']} | {d['worst']} |")
        lines.append("")
    if c.audit:
        if c.audit_offline_judges:
            lines += [f"> Audit scores from offline heuristic judges ({', '.join(c.audit_offline_judges)}): lexical "
                      "and retrieval signals, not judgments of meaning.", ""]
        acell = {(r["benchmark"], r["metric"]): r for r in c.audit}
        lines += ["| audit (ensemble mean) | " + " | ".join(benches) + " |", "|---|" + "---|" * len(benches)]
        for m, _ in AUDIT_METRICS:
            lines.append(f"| {m} | " + " | ".join(_f(acell.get((b, m), {}).get("mean")) for b in benches) + " |")
        lines.append("")
    return "\n".join(lines)


def plot_scores(c: Comparison, path: str | Path) -> Path:
    """Figure 2(b): one panel per measure (rows: query modes), grouped bars per benchmark, one
    bar per retriever."""
    from matplotlib.figure import Figure   # costly: matplotlib
    meas, modes, retr = c.settings["measures"], c.settings["modes"], c.settings["retrievers"]
    benches = [b["name"] for b in c.benchmarks]
    cell = {(r["benchmark"], r["retriever"], r["mode"]): r for r in c.scores}
    fig = Figure(figsize=(max(5.0, 1.6 * len(benches) + 1.5) * len(meas), 3.4 * len(modes)), dpi=100)
    axes = fig.subplots(len(modes), len(meas), squeeze=False)
    x = np.arange(len(benches))
    w = 0.8 / max(len(retr), 1)
    for i, mode in enumerate(modes):
        for j, m in enumerate(meas):
            ax = axes[i][j]
            for k, r in enumerate(retr):
                ax.bar(x + (k - (len(retr) - 1) / 2) * w, [cell[(b, r, mode)][m] for b in benches], w, label=r)
            ax.set_xticks(x, benches, rotation=20, ha="right", fontsize=8)
            ax.set_ylim(0, 1)
            ax.set_title(f"{LABELS.get(m, m)} ({mode})", fontsize=10)
            if i == 0 and j == 0:
                ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return Path(path)


def plot_audit(c: Comparison, path: str | Path) -> Path | None:
    """Figure 2(a): audit metrics x benchmarks, colour = mean on the metric's scale (1-5, or 0-1
    for distinguishability) mapped to 0-1, values written in the cells."""
    if not c.audit:
        return None
    from matplotlib.figure import Figure   # costly: matplotlib
    benches = [b["name"] for b in c.benchmarks]
    acell = {(r["benchmark"], r["metric"]): r["mean"] for r in c.audit}
    mat = np.full((len(AUDIT_METRICS), len(benches)), np.nan)
    raw = np.full_like(mat, np.nan)
    for i, (m, _) in enumerate(AUDIT_METRICS):
        for j, b in enumerate(benches):
            v = acell.get((b, m))
            if v is not None:
                raw[i, j] = v
                mat[i, j] = v if m == "distinguishability" else (v - 1) / 4
    fig = Figure(figsize=(1.5 * len(benches) + 3, 3.6), dpi=100)
    ax = fig.subplots()
    ax.imshow(mat, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i in range(mat.shape[0]):
        for j in range(mat.shape[1]):
            if not np.isnan(raw[i, j]):
                ax.text(j, i, f"{raw[i, j]:.2f}", ha="center", va="center",
                        color="white" if mat[i, j] < 0.6 else "black", fontsize=9)
    ax.set_xticks(range(len(benches)), benches, rotation=20, ha="right", fontsize=8)
    ax.set_yticks(range(len(AUDIT_METRICS)), [m for m, _ in AUDIT_METRICS], fontsize=9)
    title = "Audit ensemble means (1-5; distinguishability 0-1)"
    if c.audit_offline_judges:
        title += "\noffline heuristic judges: not judgments of meaning"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    return Path(path)


def write_comparison(c: Comparison, out: str | Path) -> Comparison:
    """Write ``scores.csv``, ``discrimination.csv``, ``audit.csv`` (with audits),
    ``comparison.json``, ``comparison.md``, ``figure2b.png`` and ``figure2a.png`` into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def dump(name: str, rows: Sequence[Mapping[str, Any]]) -> Path:
        p = out / name
        with p.open("w", newline="", encoding="utf-8") as f:
            fields = list(dict.fromkeys(k for r in rows for k in r))
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for r in rows:
                w.writerow({k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()})
        return p

    c.files["scores"] = dump("scores.csv", c.scores)
    if c.discrimination:
        c.files["discrimination"] = dump("discrimination.csv", c.discrimination)
    if c.audit:
        c.files["audit"] = dump("audit.csv", c.audit)
    (out / "comparison.json").write_text(json.dumps(
        {"benchmarks": c.benchmarks, "settings": c.settings, "scores": c.scores, "discrimination": c.discrimination,
         "audit": c.audit, "audit_offline_judges": c.audit_offline_judges}, indent=2, default=str), encoding="utf-8")
    c.files["json"] = out / "comparison.json"
    (out / "comparison.md").write_text(comparison_markdown(c), encoding="utf-8")
    c.files["markdown"] = out / "comparison.md"
    c.files["figure2b"] = plot_scores(c, out / "figure2b.png")
    fig_a = plot_audit(c, out / "figure2a.png")
    if fig_a is not None:
        c.files["figure2a"] = fig_a
    return c
