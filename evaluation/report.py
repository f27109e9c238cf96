"""Evaluation reports: metric tables (Parquet + Markdown), PNG plots and one HTML file.

Input is ``{retriever_name: EvalResult}`` (one :func:`evaluation.metrics.evaluate` result per
retriever, same qrels). :func:`write_report` writes everything into one folder:

* ``metrics.parquet`` / ``metrics.md``: mean of every measure per retriever with bootstrap CIs;
* ``per_turn.parquet`` and ``per_turn_<measure>.png`` (when query ids carry turns);
* ``switch_position.parquet`` and ``switch_position_<measure>.png`` (when positions are given);
* ``comparison_<measure>.png``: bars with CI error bars;
* ``significance.parquet`` (each retriever against the baseline) and the discrimination
  figure (spread of Recall@20 means) when there are two or more retrievers;
* ``report.html``: self-contained (images embedded as base64).

Every table and report states the missing-query policy the results were computed with.
Plots use matplotlib's object API (``Figure`` + Agg canvas), so no global backend is changed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from evaluation.bootstrap import bootstrap_ci
from evaluation.breakdown import Breakdown, per_switch_position, per_turn, parse_turn
from evaluation.discrimination import DEFAULT_MEASURE, Discrimination, discrimination
from evaluation.html import escape, html_table, page_start, png_data_uri, write_page
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


# --------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------
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


def _fmt(x: float, digits: int) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _wide(summary: pa.Table) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
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
    retrievers, measures, cells = _wide(summary)
    head = "| retriever | queries | " + " | ".join(measure_label(m) for m in measures) + " |"
    sep = "|---|---:|" + "---:|" * len(measures)
    lines = [head, sep]
    for r in retrievers:
        first = cells[(r, measures[0])]
        vals = " | ".join(_fmt(cells[(r, m)]["mean"], digits) for m in measures)
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


# --------------------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------------------
def _figure(width: float = 7.0, height: float = 4.0):
    from matplotlib.figure import Figure  # the Agg canvas is attached automatically
    fig = Figure(figsize=(width, height), dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def plot_breakdown(breakdowns: Mapping[str, Breakdown], measure: str, path: str | Path,
                   xlabel: str = "turn", title: str | None = None) -> Path:
    """Line plot of a breakdown (e.g. per-turn means), one line per retriever.

    Args:
        breakdowns: ``{retriever: Breakdown}`` (same grouping for all).
        measure: the measure to plot.
        path: PNG path.
        xlabel: x-axis label.
        title: plot title (default: the measure label).

    Returns:
        The PNG path.
    """
    fig, ax = _figure()
    labels: list[str] = []
    for name, bd in breakdowns.items():
        xs, ys = bd.curve(measure)
        for x in xs:
            if x not in labels:
                labels.append(x)
    order = {lab: i for i, lab in enumerate(labels)}
    for name, bd in breakdowns.items():
        xs, ys = bd.curve(measure)
        ax.plot([order[x] for x in xs], ys, marker="o", label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(measure_label(measure))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or f"{measure_label(measure)} by {xlabel}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out


def plot_comparison(summary: pa.Table, measure: str, path: str | Path, title: str | None = None) -> Path:
    """Bar chart of one measure's mean per retriever with CI error bars.

    Args:
        summary: the table from :func:`summary_table`.
        measure: which measure.
        path: PNG path.
        title: plot title.

    Returns:
        The PNG path.

    Raises:
        KeyError: ``measure`` is not in the summary.
    """
    rows = [r for r in summary.to_pylist() if r["measure"] == measure]
    if not rows:
        raise KeyError(f"measure {measure!r} is not in the summary table")
    names = [r["retriever"] for r in rows]
    means = [r["mean"] for r in rows]
    err = [[max(0.0, r["mean"] - r["ci_low"]) for r in rows], [max(0.0, r["ci_high"] - r["mean"]) for r in rows]]
    fig, ax = _figure(max(4.0, 1.2 * len(rows) + 2), 4.0)
    ax.bar(range(len(rows)), means, yerr=err, capsize=4, color="#4c72b0")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(names, rotation=20 if len(rows) > 4 else 0)
    ax.set_ylabel(measure_label(measure))
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    conf = rows[0]["confidence"]
    ax.set_title(title or f"{measure_label(measure)} (error bars: {conf:.0%} bootstrap CI)")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out


# --------------------------------------------------------------------------------------
# significance and discrimination tables
# --------------------------------------------------------------------------------------
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


def _fmt_p(p: float) -> str:
    if p is None or math.isnan(p):
        return "n/a"
    return "<1e-4" if p < 1e-4 else f"{p:.4g}"


def _significance_markdown(table: pa.Table) -> str:
    if table.num_rows == 0:
        return ""
    lines = ["| retriever | vs | measure | mean diff | p (randomisation) | p (t-test) | queries |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in table.to_pylist():
        lines.append(f"| {r['retriever']} | {r['baseline']} | {measure_label(r['measure'])} | "
                     f"{r['mean_diff']:+.4f} | {_fmt_p(r['p_randomization'])} | {_fmt_p(r['p_t_test'])} | {r['n']} |")
    return "\n".join(lines) + "\n"


def _discrimination_markdown(d: Discrimination) -> str:
    return (f"Discrimination ({measure_label(d.measure)} across {len(d.means)} retrievers): "
            f"spread (max - min) {d.spread:.4f}, std {d.std:.4f}; best {d.best}, worst {d.worst}.\n")


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------
def _html_summary(summary: pa.Table, digits: int = 4) -> str:
    retrievers, measures, cells = _wide(summary)
    head = "".join(f"<th>{escape(measure_label(m))}</th>" for m in measures)
    body = []
    for r in retrievers:
        tds = []
        for m in measures:
            c = cells[(r, m)]
            tds.append(f"<td title=\"CI {_fmt(c['ci_low'], digits)}–{_fmt(c['ci_high'], digits)}\">"
                       f"{_fmt(c['mean'], digits)}<br><small>[{_fmt(c['ci_low'], 3)}, {_fmt(c['ci_high'], 3)}]"
                       f"</small></td>")
        body.append(f"<tr><th>{escape(r)}</th><td>{cells[(r, measures[0])]['n_queries']}</td>{''.join(tds)}</tr>")
    return (f"<table class=\"metrics\"><thead><tr><th>retriever</th><th>queries</th>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _html_arrow(data: pa.Table, digits: int = 4) -> str:
    def cell(_: int, v) -> str:
        return f"<td>{_fmt(v, digits) if isinstance(v, float) else escape(str(v))}</td>"
    return html_table(data.column_names, [list(row.values()) for row in data.to_pylist()], cell)


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:75em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
thead th{background:#f0f0f0}tbody th{text-align:left}small{color:#666}.policy{background:#fff8e1;padding:.6em;border-left:4px solid #f0b400}
img{max-width:100%;margin:.5em 0}"""


def write_html_report(path: str | Path, title: str, summary: pa.Table, policy: str,
                      images: Sequence[tuple[str, Path]] = (), tables: Sequence[tuple[str, pa.Table]] = (),
                      notes: Sequence[str] = ()) -> Path:
    """Write one self-contained HTML page (CSS inline, PNGs embedded as base64).

    Args:
        path: output ``.html``.
        title: page title.
        summary: the table from :func:`summary_table`.
        policy: the missing-query policy sentence (shown prominently).
        images: ``(caption, png_path)`` pairs.
        tables: ``(caption, table)`` pairs shown under the images.
        notes: extra paragraphs (plain text).

    Returns:
        The HTML path.
    """
    parts = [page_start(title, _CSS) + f"<h1>{escape(title)}</h1>",
             f"<p class=\"policy\">{escape(policy)}</p>", "<h2>Metrics</h2>", _html_summary(summary)]
    conf = summary.column("confidence").to_pylist()
    if conf:
        parts.append(f"<p><small>Cells: mean, [{conf[0]:.0%} bootstrap confidence interval].</small></p>")
    parts.extend(f"<p>{escape(n)}</p>" for n in notes)
    for caption, img in images:
        parts.append(f"<h2>{escape(caption)}</h2><img alt=\"{escape(caption)}\" src=\"{png_data_uri(img)}\">")
    for caption, data in tables:
        parts.append(f"<h2>{escape(caption)}</h2>{_html_arrow(data)}")
    parts.append("</body></html>")
    return write_page(path, parts)


# --------------------------------------------------------------------------------------
# everything
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportFiles:
    """Paths written by :func:`write_report` and the Markdown summary (e.g. for a Prefect artifact)."""

    out_dir: Path
    metrics_parquet: Path
    metrics_markdown: Path
    html: Path
    markdown: str
    images: tuple[Path, ...] = ()
    tables: dict[str, Path] = field(default_factory=dict)
    discrimination: Discrimination | None = None


def _safe(measure: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in measure)


def write_report(results: Mapping[str, EvalResult], out_dir: str | Path, title: str = "Retrieval evaluation",
                 measures: Sequence[str] | None = None,
                 comparison_measures: Sequence[str] = ("ndcg_cut_5", "recall_5", "recall_20"),
                 turn_measures: Sequence[str] = ("ndcg_cut_5", "recall_5"), max_turn: int | None = None,
                 switch_positions: Mapping[str, int | None] | None = None, max_position: int | None = None,
                 baseline: str | None = None, significance_measure: str = "ndcg_cut_5",
                 discrimination_measure: str = DEFAULT_MEASURE, confidence: float = 0.95,
                 n_resamples: int = 2000, seed: int = 0) -> ReportFiles:
    """Write the full report folder for ``{retriever: EvalResult}``.

    Measures that were not computed are skipped in the plots and tests (e.g. no Recall@20 →
    no discrimination figure). Per-turn output is produced when every query id carries a
    turn (see :func:`evaluation.breakdown.parse_turn`).

    Args:
        results: ``{retriever: EvalResult}`` over the same qrels.
        out_dir: output folder (created).
        title: report title.
        measures: measures in the tables (default: all of the first result).
        comparison_measures: one bar chart each.
        turn_measures: one per-turn line plot each.
        max_turn: pool later turns into ``"<max_turn>+"``.
        switch_positions: ``{sample_id: turns_since_topic_switch}`` (``None`` values = no switch
            yet); when given, a breakdown by switch position is written too.
        max_position: pool later positions into ``"<max_position>+"``.
        baseline: reference retriever for significance tests (default: the first).
        significance_measure: measure compared by the paired tests.
        discrimination_measure: measure for the discrimination figure.
        confidence: CI coverage.
        n_resamples: bootstrap / randomisation resamples.
        seed: RNG seed.

    Returns:
        The :class:`ReportFiles`.
    """
    if not results:
        raise ValueError("no results to report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    first = next(iter(results.values()))
    available = set(first.measures)
    for res in results.values():
        available &= set(res.measures)
    chosen = tuple(m for m in (measures or first.measures) if m in available)
    policy = policy_statement(results)

    summary = summary_table(results, chosen, confidence, n_resamples, seed)
    summary = summary.replace_schema_metadata({"missing_policy": policy})
    metrics_pq, metrics_md = out / "metrics.parquet", out / "metrics.md"
    pq.write_table(summary, metrics_pq)
    md_parts = [f"# {title}\n", markdown_table(summary, policy)]
    tables: dict[str, Path] = {}
    images: list[tuple[str, Path]] = []
    html_tables: list[tuple[str, pa.Table]] = []
    notes: list[str] = []

    for m in comparison_measures:
        if m in available:
            images.append((f"{measure_label(m)} by retriever",
                           plot_comparison(summary, m, out / f"comparison_{_safe(m)}.png")))

    turn_ms = tuple(m for m in turn_measures if m in available)
    try:
        for res in results.values():
            for q in res.qids:
                parse_turn(q)
        has_turns = bool(turn_ms)
    except ValueError:
        has_turns = False
        notes.append("No per-turn breakdown: some query ids carry no turn number.")
    if has_turns:
        bds = {name: per_turn(res, turn_ms, max_turn=max_turn) for name, res in results.items()}
        tables["per_turn"] = out / "per_turn.parquet"
        pq.write_table(pa.concat_tables([bd.to_table(retriever=name) for name, bd in bds.items()]),
                       tables["per_turn"])
        for m in turn_ms:
            images.append((f"{measure_label(m)} per turn",
                           plot_breakdown(bds, m, out / f"per_turn_{_safe(m)}.png", xlabel="turn")))

    if switch_positions is not None and turn_ms:
        sbds = {name: per_switch_position(res, switch_positions, turn_ms, max_position=max_position)
                for name, res in results.items()}
        tables["switch_position"] = out / "switch_position.parquet"
        pq.write_table(pa.concat_tables([bd.to_table(retriever=name) for name, bd in sbds.items()]),
                       tables["switch_position"])
        for m in turn_ms:
            images.append((f"{measure_label(m)} by turns since topic switch",
                           plot_breakdown(sbds, m, out / f"switch_position_{_safe(m)}.png",
                                          xlabel="turns since topic switch")))

    disc = None
    if len(results) >= 2:
        if significance_measure in available:
            sig = significance_table(results, significance_measure, baseline, n_resamples=max(n_resamples, 1000),
                                     seed=seed)
            tables["significance"] = out / "significance.parquet"
            pq.write_table(sig, tables["significance"])
            md_parts.append("\n## Paired significance\n\n" + _significance_markdown(sig))
            html_tables.append(("Paired significance tests", sig))
        if discrimination_measure in available:
            disc = discrimination(results, discrimination_measure)
            text = _discrimination_markdown(disc)
            md_parts.append("\n## Discrimination\n\n" + text)
            notes.append(text.strip())

    markdown = "\n".join(md_parts)
    metrics_md.write_text(markdown, encoding="utf-8")
    html_path = write_html_report(out / "report.html", title, summary, policy, images, html_tables, notes)
    return ReportFiles(out_dir=out, metrics_parquet=metrics_pq, metrics_markdown=metrics_md, html=html_path,
                       markdown=markdown, images=tuple(p for _, p in images), tables=tables, discrimination=disc)
