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
The tables are :mod:`evaluation.report_tables`, the plots :mod:`evaluation.report_plots`; this
module writes the HTML page and the folder.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from evaluation.breakdown import per_switch_position, per_turn, parse_turn
from evaluation.discrimination import DEFAULT_MEASURE, Discrimination, discrimination
from evaluation.html import escape, html_table, page_start, png_data_uri, write_page
from evaluation.metrics import EvalResult, measure_label
from evaluation.report_plots import plot_breakdown, plot_comparison
from evaluation.report_tables import (discrimination_markdown, fmt_value, markdown_table, policy_statement,
                                      significance_markdown, significance_table, summary_table, wide_cells)


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------
def _html_summary(summary: pa.Table, digits: int = 4) -> str:
    retrievers, measures, cells = wide_cells(summary)
    head = "".join(f"<th>{escape(measure_label(m))}</th>" for m in measures)
    body = []
    for r in retrievers:
        tds = []
        for m in measures:
            c = cells[(r, m)]
            tds.append(f"<td title=\"CI {fmt_value(c['ci_low'], digits)}–{fmt_value(c['ci_high'], digits)}\">"
                       f"{fmt_value(c['mean'], digits)}<br><small>[{fmt_value(c['ci_low'], 3)}, "
                       f"{fmt_value(c['ci_high'], 3)}]</small></td>")
        body.append(f"<tr><th>{escape(r)}</th><td>{cells[(r, measures[0])]['n_queries']}</td>{''.join(tds)}</tr>")
    return (f"<table class=\"metrics\"><thead><tr><th>retriever</th><th>queries</th>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _html_arrow(data: pa.Table, digits: int = 4) -> str:
    def cell(_: int, v) -> str:
        return f"<td>{fmt_value(v, digits) if isinstance(v, float) else escape(str(v))}</td>"
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
            md_parts.append("\n## Paired significance\n\n" + significance_markdown(sig))
            html_tables.append(("Paired significance tests", sig))
        if discrimination_measure in available:
            disc = discrimination(results, discrimination_measure)
            text = discrimination_markdown(disc)
            md_parts.append("\n## Discrimination\n\n" + text)
            notes.append(text.strip())

    markdown = "\n".join(md_parts)
    metrics_md.write_text(markdown, encoding="utf-8")
    html_path = write_html_report(out / "report.html", title, summary, policy, images, html_tables, notes)
    return ReportFiles(out_dir=out, metrics_parquet=metrics_pq, metrics_markdown=metrics_md, html=html_path,
                       markdown=markdown, images=tuple(p for _, p in images), tables=tables, discrimination=disc)
