"""The metric tables of an evaluation report: the long summary of means with bootstrap CIs
(Parquet, :data:`SUMMARY_SCHEMA`) and its wide Markdown form, the missing-query policy sentence
every table states, and the paired significance tests against a baseline
(:data:`SIGNIFICANCE_SCHEMA`) and the discrimination line in Markdown.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from evaluation.bootstrap import bootstrap_ci
from evaluation.discrimination import Discrimination
from evaluation.metrics import EvalResult, measure_label
from evaluation.significance import paired_randomization_test, paired_t_test

SUMMARY_SCHEMA = pa.schema([
    ("retriever", pa.string()),
    ("measure", pa.string()),
    ("label", pa.string()),
    ("mean", pa.float64()),
    ("ci_low", pa.float64()),
    ("ci_high", pa.float64()),
    ("confidence", pa.float64()),
    ("n_queries", pa.int64()),
    ("n_missing", pa.int64()),
    ("missing_policy", pa.string()),
])

SIGNIFICANCE_SCHEMA = pa.schema([
    ("measure", pa.string()),
    ("baseline", pa.string()),
    ("retriever", pa.string()),
    ("mean_diff", pa.float64()),
    ("p_randomization", pa.float64()),
    ("p_t_test", pa.float64()),
    ("n", pa.int64()),
    ("n_resamples", pa.int64()),
])

_MISSING_TEXT = {
    "zero": "qrels queries absent from a run were scored 0 and included in the means (missing=\"zero\")",
    "skip": "qrels queries absent from a run were left out of the means (missing=\"skip\")",
}


def policy_statement(results: Mapping[str, EvalResult]) -> str:
    """One sentence stating the missing-query policy (and per-retriever missing counts).

    Raises:
        ValueError: no results.
    """
    if not results:
        raise ValueError("no results to report")
    policies = {r.missing for r in results.values()}
    counts = ", ".join(f"{name} {len(r.missing_qids)}" for name, r in results.items())
    if len(policies) == 1:
        text = f"Missing-query policy: {_MISSING_TEXT[policies.pop()]}. Missing queries per retriever: {counts}."
    else:
        per = "; ".join(f"{name}: missing=\"{r.missing}\"" for name, r in results.items())
        text = f"Missing-query policy differs between retrievers ({per}), so means are not comparable. " \
               f"Missing queries per retriever: {counts}."
    norel = {name: (len(r.no_relevant_qids), r.no_relevant) for name, r in results.items() if r.no_relevant_qids}
    if norel:
        name, (n, how) = next(iter(norel.items()))
        text += (f" {n} qrels queries have no relevant document; they were "
                 f"{'scored 0' if how == 'score' else 'left out'} (no_relevant=\"{how}\").")
    return text


def summary_table(results: Mapping[str, EvalResult], measures: Sequence[str] | None = None,
                  confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> pa.Table:
    """Long table of means with bootstrap CIs: one row per (retriever, measure).

    Args:
        results: ``{retriever: EvalResult}``.
        measures: measures to include (default: those of the first result).
        confidence: CI coverage.
        n_resamples: bootstrap resamples per cell.
        seed: RNG seed.

    Returns:
        A table with :data:`SUMMARY_SCHEMA`.
    """
    if not results:
        raise ValueError("no results to report")
    chosen = tuple(measures) if measures is not None else next(iter(results.values())).measures
    rows: dict[str, list] = {name: [] for name in SUMMARY_SCHEMA.names}
    for name, res in results.items():
        for m in chosen:
            col = res.column(m)
            if len(col):
                ci = bootstrap_ci(col, confidence=confidence, n_resamples=n_resamples, seed=seed)
                mean, low, high = ci.mean, ci.low, ci.high
            else:
                mean = low = high = math.nan
            for key, value in (("retriever", name), ("measure", m), ("label", measure_label(m)),
                               ("mean", mean), ("ci_low", low), ("ci_high", high),
                               ("confidence", confidence), ("n_queries", res.n_queries),
                               ("n_missing", len(res.missing_qids)), ("missing_policy", res.missing)):
                rows[key].append(value)
    return pa.table(rows, schema=SUMMARY_SCHEMA)


def fmt_value(x: float, digits: int) -> str:
    """``x`` with ``digits`` decimals; "n/a" for None or NaN."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def wide_cells(summary: pa.Table) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    """(retrievers, measures, {(retriever, measure): summary row}) of the long summary table."""
    retrievers: list[str] = []
    measures: list[str] = []
    cells: dict[tuple[str, str], dict] = {}
    for row in summary.to_pylist():
        if row["retriever"] not in retrievers:
            retrievers.append(row["retriever"])
        if row["measure"] not in measures:
            measures.append(row["measure"])
        cells[(row["retriever"], row["measure"])] = row
    return retrievers, measures, cells


def markdown_table(summary: pa.Table, policy: str | None = None, digits: int = 4) -> str:
    """Markdown table (retrievers × measures, means) from :func:`summary_table`.

    Args:
        summary: the long summary table.
        policy: sentence appended under the table (see :func:`policy_statement`); when
            ``None`` the policy column of the table is stated.
        digits: decimals shown.

    Returns:
        Markdown text ending with a newline.
    """
    retrievers, measures, cells = wide_cells(summary)
    head = "| retriever | queries | " + " | ".join(measure_label(m) for m in measures) + " |"
    sep = "|---|---:|" + "---:|" * len(measures)
    lines = [head, sep]
    for r in retrievers:
        first = cells[(r, measures[0])]
        vals = " | ".join(fmt_value(cells[(r, m)]["mean"], digits) for m in measures)
        lines.append(f"| {r} | {first['n_queries']} | {vals} |")
    if policy is None:
        policies = sorted(set(summary.column("missing_policy").to_pylist()))
        policy = "Missing-query policy: " + "; ".join(_MISSING_TEXT.get(p, p) for p in policies) + "."
    conf = summary.column("confidence").to_pylist()
    ci_note = f" Bootstrap {conf[0]:.0%} confidence intervals are in the Parquet table." if conf else ""
    return "\n".join(lines) + f"\n\n{policy}{ci_note}\n"


def write_metric_tables(results: Mapping[str, EvalResult], out_dir: str | Path, name: str = "metrics",
                        measures: Sequence[str] | None = None, confidence: float = 0.95,
                        n_resamples: int = 2000, seed: int = 0) -> tuple[Path, Path]:
    """Write ``<name>.parquet`` (long, with CIs) and ``<name>.md`` (wide means + policy).

    Returns:
        ``(parquet_path, markdown_path)``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = summary_table(results, measures, confidence, n_resamples, seed)
    table = table.replace_schema_metadata({"missing_policy": policy_statement(results)})
    pq_path, md_path = out / f"{name}.parquet", out / f"{name}.md"
    pq.write_table(table, pq_path)
    md_path.write_text(markdown_table(table, policy_statement(results)), encoding="utf-8")
    return pq_path, md_path


def significance_table(results: Mapping[str, EvalResult], measure: str, baseline: str | None = None,
                       n_resamples: int = 10_000, seed: int = 0) -> pa.Table:
    """Paired randomisation and t-test p-values of every retriever against ``baseline``.

    Args:
        results: ``{retriever: EvalResult}`` over the same queries.
        measure: which measure's per-query values to compare.
        baseline: reference retriever (default: the first).
        n_resamples: randomisation-test resamples.
        seed: RNG seed.

    Returns:
        A table with :data:`SIGNIFICANCE_SCHEMA` (empty with fewer than two retrievers).
    """
    names = list(results)
    base = baseline if baseline is not None else (names[0] if names else None)
    if base is not None and base not in results:
        raise KeyError(f"baseline {base!r} is not one of {names}")
    rows: dict[str, list] = {n: [] for n in SIGNIFICANCE_SCHEMA.names}
    for name in names:
        if name == base:
            continue
        a, b = results[name].series(measure), results[base].series(measure)
        rnd = paired_randomization_test(a, b, n_resamples=n_resamples, seed=seed)
        tt = paired_t_test(a, b) if len(a) >= 2 else None
        for key, value in (("measure", measure), ("baseline", base), ("retriever", name),
                           ("mean_diff", rnd.mean_diff), ("p_randomization", rnd.p_value),
                           ("p_t_test", tt.p_value if tt else math.nan), ("n", rnd.n),
                           ("n_resamples", rnd.n_resamples)):
            rows[key].append(value)
    return pa.table(rows, schema=SIGNIFICANCE_SCHEMA)


def fmt_p(p: float) -> str:
    if p is None or math.isnan(p):
        return "n/a"
    return "<1e-4" if p < 1e-4 else f"{p:.4g}"


def significance_markdown(table: pa.Table) -> str:
    if table.num_rows == 0:
        return ""
    lines = ["| retriever | vs | measure | mean diff | p (randomisation) | p (t-test) | queries |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in table.to_pylist():
        lines.append(f"| {r['retriever']} | {r['baseline']} | {measure_label(r['measure'])} | "
                     f"{r['mean_diff']:+.4f} | {fmt_p(r['p_randomization'])} | {fmt_p(r['p_t_test'])} | {r['n']} |")
    return "\n".join(lines) + "\n"


def discrimination_markdown(d: Discrimination) -> str:
    return (f"Discrimination ({measure_label(d.measure)} across {len(d.means)} retrievers): "
            f"spread (max - min) {d.spread:.4f}, std {d.std:.4f}; best {d.best}, worst {d.worst}.\n")
