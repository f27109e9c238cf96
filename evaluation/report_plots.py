"""The PNG plots of an evaluation report, drawn with matplotlib's object API (``Figure`` + Agg
canvas, so no global backend is changed): a breakdown's curve per retriever
(:func:`plot_breakdown`) and one measure's means with CI error bars (:func:`plot_comparison`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pyarrow as pa

from evaluation.breakdown import Breakdown
from evaluation.metrics import measure_label


def _figure(width: float = 7.0, height: float = 4.0):
    from matplotlib.figure import Figure   # costly: matplotlib; the Agg canvas is attached automatically
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
