"""Outputs of ``mtr abstention``: the per-retriever CSV, the ladder plot (false-miss rate and
Youden's J along the ladder), the Markdown summary (also the Prefect artifact) and one
self-contained HTML report (CSS inline, plot embedded). Every output of a run with offline
stand-ins opens with the demonstration notice.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Sequence

from evaluation.abstention.provenance import CLASSES
from evaluation.abstention.result import AbstentionResult
from evaluation.html import escape, html_table, page_start, png_data_uri, write_page

MAIN_COLUMNS = [  # (key, header, kind)
    ("retriever", "retriever", "s"), ("ndcg", "nDCG@{k}", "f"), ("n_contexts", "contexts", "i"),
    ("rule_unanswerable", "rule-unans. n", "i"), ("content_unanswerable", "content-unans. n", "i"),
    ("false_miss_yes", "false-miss % (yes)", "%"), ("false_miss_yes_partial", "false-miss % (yes+partial)", "%"),
    ("precision", "precision", "f"), ("precision_partial_answerable", "precision (partial=ans.)", "f"),
    ("youden_j", "Youden's J", "f"), ("youden_j_partial_answerable", "J (partial=ans.)", "f"),
    ("near_dup_floor", "near-dup floor %", "%"), ("abstention_rule", "abstain % (rule)", "%"),
    ("abstention_content", "abstain % (content)", "%"),
]


def fmt_value(v: Any, kind: str) -> str:
    """A table cell: ``%`` (percent, 1 decimal), ``f`` (3 decimals), else str; NaN/None -> "–"."""
    if v is None:
        return "–"
    if isinstance(v, float) and math.isnan(v):
        return "–"
    if kind == "%":
        return f"{100 * v:.1f}"
    if kind == "f":
        return f"{v:.3f}"
    return str(v)


def _auroc_header(col: str) -> str:
    rest = col[len("auroc:"):]
    det, _, lab = rest.rpartition(":")
    return f"AUROC {det} vs {lab}"


def main_table(res: AbstentionResult) -> tuple[list[str], list[list[str]]]:
    k = res.config.eval_k
    headers = [h.format(k=k) for _, h, _ in MAIN_COLUMNS] + [_auroc_header(c) for c in res.auroc_columns]
    rows = []
    for r in res.per_retriever:
        rows.append([fmt_value(r.get(key), kind) for key, _, kind in MAIN_COLUMNS] +
                    [fmt_value(r.get(c), "f") for c in res.auroc_columns])
    return headers, rows


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def sections(res: AbstentionResult) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, headers, rows, text) of every report section after the main table."""
    out = []
    lad = res.ladder
    out.append(("Retriever ladder", ["#", "retriever", f"nDCG@{res.config.eval_k}", f"R@{res.config.context_k}",
                                     "what"],
                [[str(i + 1), r, fmt_value(lad.ndcg[r], "f"), fmt_value(lad.recall[r], "f"), lad.descriptions[r]]
                 for i, r in enumerate(lad.runs)],
                f"{lad.n_queries} turns with qrels scored (trec_eval semantics)."))
    if res.agreements:
        out.append(("Judge agreement", ["contexts", "judge A", "judge B", "n", "raw agreement", "Cohen's kappa",
                                        "kappa (yes vs rest)"],
                    [[r, a.judge_a, a.judge_b, str(a.n), fmt_value(a.raw_agreement, "f"), fmt_value(a.kappa, "f"),
                      fmt_value(a.kappa_yes_vs_rest, "f")] for r, a in res.agreements],
                    "Contexts judged by both judges (empty contexts and benchmark-unanswerable turns excluded)."))
    else:
        out.append(("Judge agreement", [], [], "Only one judge: no agreement (the method asks for two families)."))
    if res.negative_control:
        out.append(("Negative control", ["judge", "n", "yes-rate %", "yes+partial %", "ceiling %", "verdict"],
                    [[j, str(r.n), fmt_value(r.yes_rate, "%"), fmt_value(r.yes_partial_rate, "%"),
                      fmt_value(r.ceiling, "%"),
                      "UNFIT" if r.unfit else "fit"] for j, r in res.negative_control.items()],
                    f"Each turn judged against the top-{res.config.context_k} of another conversation "
                    f"(retriever {res.config.nc_retriever})."))
    out.append(("Detectors", ["detector", "available", "note"],
                [[d.name, "yes" if d.available else "SKIPPED", d.message] for d in res.detectors],
                "AUROC per retriever against rule and content labels is in the main table (positive: unanswerable)."))
    sup, allp = res.provenance_shares["supporting"], res.provenance_shares["all_passages"]
    prow = []
    for key in list(res.ladder.runs) + ["all"]:
        if key in sup:
            prow.append([key, str(int(sup[key]["n"]))] + [fmt_value(sup[key][c], "%") for c in CLASSES] +
                        [fmt_value(allp[key][c], "%") for c in CLASSES])
    out.append(("Where false-miss answers come from", ["retriever", "supporting passages"] +
                [f"{c} %" for c in CLASSES] + [f"{c} % (all passages)" for c in CLASSES], prow,
                "Supporting passages of false-miss contexts (primary judge), first matching class; the last "
                "columns give the same classes over all passages of those contexts."))
    out.append(("Comparison flips", ["labellings", "comparisons", "changed", "direction reversed",
                                     "significance changed", "reversed & significant under both"],
                [[f"{s.labelling_a} → {s.labelling_b}", str(s.n_comparisons), str(s.n_changed), str(s.n_direction),
                  str(s.n_significance), str(s.n_reversed_significant)] for s in res.flip_summaries],
                f"Comparisons a study would report (AUROC > 0.5, AUROC and abstention accuracy between retrievers "
                f"and between detectors / answer models, answerable-vs-unanswerable abstention gap), at "
                f"alpha={res.config.alpha}, no multiple-testing correction."))
    if res.answer_check is not None:
        out.append(("Answer check", ["group", "n", "correct", "accuracy %", "failed"],
                    [[g.group, str(g.n), str(g.n_correct), fmt_value(g.accuracy, "%"), str(g.n_failed)]
                     for g in res.answer_check],
                    "Answers from false-miss contexts vs truly unanswerable contexts vs no context."))
    n_all = sum(s.all_judges_yes for s in res.suggestions)
    n_hn = sum(s.hard_negative for s in res.suggestions)
    out.append(("Relabel suggestions", [], [],
                f"{len(res.suggestions)} candidate qrels additions ({n_all} supported by every judge, {n_hn} benchmark "
                f"hard negatives) in {res.files.get('relabel_csv', 'relabel_suggestions.csv')}; the qrels were not "
                "edited."))
    out.append(("Human review export", [], [],
                f"Rule-unanswerable contexts with their passages for review: {res.files.get('review_csv', '')} "
                f"(judge labels, for after a blind review: {res.files.get('review_key', '')})."))
    return out


def markdown(res: AbstentionResult) -> str:
    parts = [f"# Abstention evaluation: {res.benchmark}", ""]
    if res.offline_demo:
        parts += [f"> **{res.notes[0]}**", ""]
    judges = ", ".join(j for j in res.judgments)
    parts += [f"Top-{res.config.context_k} contexts of {len({c.sample_id for c in res.contexts})} turns; "
              f"content judges: {judges} (primary first); rule label: no qrels passage in the top "
              f"{res.config.context_k}.", "", f"## Per retriever (content labels: {next(iter(res.judgments))})", ""]
    h, rows = main_table(res)
    parts += [_md_table(h, rows), ""]
    for title, headers, rows, text in sections(res):
        parts += [f"## {title}", ""]
        if headers:
            parts += [_md_table(headers, rows), ""]
        parts += [text, ""]
    rest = res.notes[1:] if res.offline_demo else res.notes
    if rest:
        parts += ["## Notes", ""] + [f"- {n}" for n in rest] + [""]
    return "\n".join(parts)


def plot_ladder(res: AbstentionResult, path: str | Path) -> Path:
    """False-miss rate (yes; yes+partial) and Youden's J along the ladder (matplotlib Agg)."""
    from matplotlib.figure import Figure   # costly: matplotlib
    rows = res.per_retriever
    x = list(range(len(rows)))
    fig = Figure(figsize=(max(6.0, 1.6 * len(rows) + 2), 4.2), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(x, [r["false_miss_yes"] for r in rows], "o-", label="false-miss rate (yes)")
    ax.plot(x, [r["false_miss_yes_partial"] for r in rows], "o--", label="false-miss rate (yes+partial)")
    ax.plot(x, [r["youden_j"] for r in rows], "s-", label="Youden's J of the rule")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['retriever']}\nnDCG@{res.config.eval_k} {fmt_value(r['ndcg'], 'f')}" for r in rows],
                       fontsize=8)
    ax.axhline(0, color="#999", lw=0.5)
    ax.set_ylabel("rate / J")
    title = f"Rule label along the retriever ladder ({res.benchmark})"
    if res.offline_demo:
        title += "\nDEMONSTRATION: offline stand-in judges"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    return out


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:90em;color:#222}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.3em .5em;text-align:right}thead th{background:#f0f0f0}
td:first-child{text-align:left}
.demo{background:#fdecea;border-left:5px solid #d93025;padding:.7em;font-weight:bold}
.note{color:#555}img{max-width:100%}"""


def write_html(res: AbstentionResult, path: str | Path, plot: Path | None) -> Path:
    title = f"Abstention evaluation: {res.benchmark}"
    p = [page_start(title, _CSS) + f"<h1>{escape(title)}</h1>"]
    if res.offline_demo:
        p.append(f"<p class=\"demo\">{escape(res.notes[0])}</p>")
    h, rows = main_table(res)
    p.append(f"<h2>Per retriever (content labels: {escape(next(iter(res.judgments)))})</h2>"
             + html_table(h, rows))
    if plot is not None:
        p.append(f"<img alt=\"false-miss rate and Youden's J along the ladder\" src=\"{png_data_uri(plot)}\">")
    for t, headers, rws, text in sections(res):
        p.append(f"<h2>{escape(t)}</h2>")
        if headers:
            p.append(html_table(headers, rws))
        p.append(f"<p class=\"note\">{escape(text)}</p>")
    rest = res.notes[1:] if res.offline_demo else res.notes
    if rest:
        p.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in rest) + "</ul>")
    p.append("</body></html>")
    return write_page(path, p)


def write_outputs(res: AbstentionResult) -> None:
    """per_retriever.csv, ladder.png, summary.md and report.html into ``res.out_dir``."""
    out = res.out_dir
    csv_path = out / "per_retriever.csv"
    cols = [k for k, _, _ in MAIN_COLUMNS] + ["judge", "model_abstention", "abstention_accuracy_rule",
                                              "abstention_accuracy_content"] + res.auroc_columns
    if res.offline_demo:
        cols.append("note")
    with csv_path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows([r | ({"note": res.notes[0]} if res.offline_demo else {}) for r in res.per_retriever])
    plot = plot_ladder(res, out / "ladder.png")
    res.files.update({"per_retriever_csv": csv_path, "plot": plot})
    res.markdown = markdown(res)
    md = out / "summary.md"
    md.write_text(res.markdown, encoding="utf-8")
    res.files["markdown"] = md
    res.files["html"] = write_html(res, out / "report.html", plot)


__all__ = ["fmt_value", "main_table", "markdown", "plot_ladder", "sections", "write_html", "write_outputs"]
