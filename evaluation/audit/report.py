"""Audit reports: the judge x benchmark heatmap (like the paper's Figure 2a), one
self-contained HTML page and the Markdown summary (Prefect artifact, CLI).

When any judge is an offline heuristic stand-in, the HTML page, the Markdown and the
heatmap's title all say so (:data:`OFFLINE_NOTE`).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from evaluation.audit.aggregate import ENSEMBLE
from evaluation.audit.config import LABELS, variant_name
from evaluation.html import escape, html_table, page_start, png_data_uri, write_page

OFFLINE_NOTE = ("Offline heuristic judges ({names}) stand in for LLM judges in this audit: their scores are "
                "lexical-overlap, sentence-support and BM25-retrieval signals, not judgments of meaning. "
                "Use them to test the pipeline or as weak baselines, not as MTR-Eval results.")


def offline_note(judges: Sequence[Mapping[str, Any]]) -> str | None:
    names = [j["name"] for j in judges if j["kind"] == "heuristic"]
    return OFFLINE_NOTE.format(names=", ".join(names)) if names else None


def headline_keys(summary: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(metric, variant) pairs shown in the heatmap: every 1-5 metric and the forward pass of
    each distinguishability source."""
    seen: list[tuple[str, str]] = []
    for r in summary:
        k = (r["metric"], r["variant"])
        if k not in seen and not r["variant"].endswith("reversed"):
            seen.append(k)
    return seen


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


# --------------------------------------------------------------------------------------
# heatmap
# --------------------------------------------------------------------------------------
def plot_heatmap(summary: Sequence[Mapping[str, Any]], path: str | Path, note: str | None = None) -> Path:
    """One panel per headline metric; rows = judges (+ ensemble), columns = benchmarks, cells =
    means (colour scale 1-5, or 0-1 for distinguishability)."""
    from matplotlib.figure import Figure   # costly: matplotlib

    keys = headline_keys(summary)
    benches = list(dict.fromkeys(r["benchmark"] for r in summary))
    judges = list(dict.fromkeys(r["judge"] for r in summary if r["judge"] != ENSEMBLE)) + [ENSEMBLE]
    cell = {(r["metric"], r["variant"], r["judge"], r["benchmark"]): r["mean"] for r in summary}
    width = max(3.2, 1.1 * len(benches) + 1.8)
    fig = Figure(figsize=(width * len(keys), 0.5 * len(judges) + 2.2), dpi=100)
    for i, (metric, variant) in enumerate(keys):
        ax = fig.add_subplot(1, len(keys), i + 1)
        vmin, vmax = (0.0, 1.0) if metric == "distinguishability" else (1.0, 5.0)
        m = np.array([[cell.get((metric, variant, j, b)) if cell.get((metric, variant, j, b)) is not None else np.nan
                       for b in benches] for j in judges], dtype=float)
        ax.imshow(np.ma.masked_invalid(m), cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto")
        for (r, c), v in np.ndenumerate(m):
            ax.text(c, r, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if not np.isnan(v) and v < (vmin + vmax) / 2 else "black")
        ax.set_xticks(range(len(benches)), benches, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(judges)), judges if i == 0 else [""] * len(judges), fontsize=8)
        label = LABELS[metric] if not variant else f"{LABELS[metric]}\n[{variant}]"
        ax.set_title(f"{label}\n({'0-1' if metric == 'distinguishability' else '1-5'})", fontsize=9)
    fig.suptitle("MTR-Eval: judge x benchmark" + ("\nOFFLINE HEURISTIC JUDGES - not LLM judgments" if note else ""),
                 fontsize=10, color="darkred" if note else "black")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out


# --------------------------------------------------------------------------------------
# markdown
# --------------------------------------------------------------------------------------
def _cell(r: Mapping[str, Any]) -> str:
    if r["mean"] is None:
        return f"– (n=0, pf={r['n_parse_failures']})"
    return (f"{r['mean']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}] n={r['n']}"
            + (f" pf={r['n_parse_failures']}" if r["n_parse_failures"] else "")
            + (f" fail={r['n_failures']}" if r["n_failures"] else "")
            + (f" self={r['n_excluded_self']}" if r["n_excluded_self"] else ""))


def _wide(summary: Sequence[Mapping[str, Any]], bench: str) -> tuple[list[str], list[tuple[str, str]],
                                                                     dict[tuple, Mapping[str, Any]]]:
    rows = [r for r in summary if r["benchmark"] == bench]
    judges = list(dict.fromkeys(r["judge"] for r in rows))
    keys = list(dict.fromkeys((r["metric"], r["variant"]) for r in rows))
    return judges, keys, {(r["metric"], r["variant"], r["judge"]): r for r in rows}


def _pval(p: Any) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def summary_markdown(result: Mapping[str, Any]) -> str:
    """Markdown of an audit (``result`` = :meth:`AuditResult.report_data`)."""
    summary = result["summary"]
    lines = [f"# MTR-Eval audit `{result['run_id']}`", ""]
    note = offline_note(result["judges"])
    if note:
        lines += [f"> **{note}**", ""]
    lines += ["Judges: " + ", ".join(f"`{j['name']}` ({j['kind']}{', ' + j['model'] if j.get('model') else ''})"
                                     for j in result["judges"]),
              f"Seed {result['config']['seed']}; candidates: {result['config']['candidates']} "
              f"({result['config']['n_negatives']} negatives, {result['config']['negatives']}); "
              f"gold positions: {result['config'].get('positions', 'shuffled')}; "
              f"reversed pass: {'yes' if result['config']['reverse_pass'] else 'no'}.", ""]
    for b in result["benchmarks"]:
        judges, keys, cells = _wide(summary, b["name"])
        lines += [f"## {b['name']} ({b['format']}: {b['turns']} turns, {b['selected']} selected, "
                  f"{b.get('scored', b['selected'])} audited: scored by a judge)", "",
                  "Cells: mean [95% CI] n = valid judgments; pf = parse failures; fail = other failures; "
                  "self = self-preference exclusions.", "",
                  "| metric | skipped | " + " | ".join(judges) + " |", "|---|---|" + "---|" * len(judges)]
        for k in keys:
            skipped = cells[(*k, judges[0])]["n_skipped"]
            lines.append(f"| {variant_name(*k)} | {skipped} | "
                         + " | ".join(_cell(cells[(*k, j)]) for j in judges) + " |")
        lines.append("")
    agr = result["agreement"]
    if agr and any(a["alpha"] is not None for a in agr):
        lines += ["## Inter-judge agreement", "",
                  "| benchmark | metric | units | Krippendorff's alpha | mean pairwise Spearman | raw agreement |",
                  "|---|---|---|---|---|---|"]
        for a in agr:
            lines.append(f"| {a['benchmark']} | {variant_name(a['metric'], a['variant'])} | {a['n_units']} | "
                         f"{_fmt(a['alpha'])} ({a['alpha_level']}) | {_fmt(a['mean_pairwise_spearman'])} | "
                         f"{_fmt(a['mean_pairwise_agreement'])} |")
        lines.append("")
    if result.get("position"):
        lines += ["## Position bias (distinguishability, forward pass)", "",
                  "Chi-square: chosen positions against the gold positions' distribution (df = slots - 1); "
                  "by-slot: accuracy independent of the gold slot (2 x slots table).", "",
                  "| benchmark | source | judge | n | accuracy by gold slot | picks at [1] | picks at last | "
                  "chi-square (p) | by-slot chi-square (p) |", "|---|---|---|---|---|---|---|---|---|"]
        for p in result["position"]:
            lines.append(f"| {p['benchmark']} | {p['source']} | {p['judge']} | {p.get('n_tested')} | "
                         f"{' '.join(_fmt(a, 2) for a in p.get('accuracy_by_gold_position') or [])} | "
                         f"{_fmt(p['first_position_rate'])} | {_fmt(p['last_position_rate'])} | "
                         f"{_fmt(p.get('position_chi2'), 1)} ({_pval(p.get('position_p'))}) | "
                         f"{_fmt(p.get('slot_accuracy_chi2'), 1)} ({_pval(p.get('slot_accuracy_p'))}) |")
        lines.append("")
    gj = result.get("generator_judge") or []
    if gj and (len({r["generator"] for r in gj}) > 1 or any(r["self"] for r in gj)):
        lines += ["## Generator x judge", "",
                  "Agreement with the other judges (leave-one-out: majority for 0/1 = share equal; mean for 1-5 = "
                  "mean absolute difference) and with people where rated; self = the judge's own model wrote "
                  "these turns (withheld).", "",
                  "| metric | generator | judge | n | self | vs ensemble | vs human (n) |", "|---|---|---|---|---|---|---|"]
        for r in gj:
            binary = r["metric"] == "distinguishability"
            ens = _fmt(r["ensemble_agreement"] if binary else r["ensemble_mad"])
            hum = _fmt(r["human_agreement"] if binary else r["human_mad"])
            lines.append(f"| {variant_name(r['metric'], r['variant'])} | {r['generator']} | {r['judge']} | {r['n']} | "
                         f"{'self (' + str(r['n_self']) + ')' if r['self'] else ''} | "
                         f"{ens} {'agree' if binary else 'MAD'} | {hum} ({r['n_vs_human']}) |")
        lines.append("")
    if result.get("human"):
        lines += ["## Agreement with human ratings", "", "| metric | rater | n | Pearson | Spearman |",
                  "|---|---|---|---|---|"]
        for h in result["human"]:
            lines.append(f"| {h['metric']} | {h['rater']} | {h['n']} | {_fmt(h['pearson'])} | {_fmt(h['spearman'])} |")
        lines.append("")
    if result.get("stopped_reason"):
        lines += [f"> **The LLM budget stopped the audit early ({result['stopped_reason']}); unstarted judgments "
                  "are counted as failures.**", ""]
    lines += [f"Candidate missing positives: {result['n_missing_positives']} (turn, passage) pairs "
              f"in `missing_positives.csv`.", f"Outputs: `{result['out_dir']}`"]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:90em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.85em}th,td{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}
td.num{text-align:right}thead th{background:#f0f0f0}small{color:#666}
.offline{background:#fdecea;padding:.8em;border-left:5px solid #c62828;font-weight:600}
.note{background:#fff8e1;padding:.6em;border-left:4px solid #f0b400}img{max-width:100%;margin:.5em 0}
td.text{max-width:40em;font-size:.9em}"""


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], text_cols: Sequence[int] = ()) -> str:
    def cell(i: int, v: Any) -> str:
        cls = "text" if i in text_cols else ("num" if isinstance(v, (int, float)) else "")
        return f"<td class=\"{cls}\">{escape(_fmt(v))}</td>"
    return html_table(head, rows, cell)


def _snip(text: str | None, n: int = 300) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[:n] + " …"


def write_html(result: Mapping[str, Any], path: str | Path, heatmap: Path | None = None) -> Path:
    """One self-contained page (CSS inline, heatmap embedded)."""
    note = offline_note(result["judges"])
    banner = f"<p class=\"offline\">{escape(note)}</p>" if note else ""
    cfg = result["config"]
    if result.get("stopped_reason"):
        banner += (f"<p class=\"offline\">The LLM budget stopped the audit early "
                   f"({escape(str(result['stopped_reason']))}); unstarted judgments are counted as failures.</p>")
    parts = [page_start(f"MTR-Eval audit {result['run_id']}", _CSS), banner,
             f"<h1>MTR-Eval audit <code>{escape(result['run_id'])}</code></h1>",
             "<h2>Setup</h2>",
             _table(["judge", "kind", "endpoint", "model"],
                    [[j["name"], j["kind"], j.get("endpoint"), j.get("model")] for j in result["judges"]]),
             _table(["benchmark", "format", "turns", "selected turns", "audited turns (scored by a judge)",
                     "units judged per judge", "skipped (reason: n)"],
                    [[b["name"], b["format"], b["turns"], b["selected"], b.get("scored", b["selected"]),
                      ", ".join(f"{k}: {v}" for k, v in b["units"].items()),
                      ", ".join(f"{k}: {v}" for k, v in b["skipped_by_reason"].items()) or "none"]
                     for b in result["benchmarks"]]),
             f"<p class=\"note\">Seed {cfg['seed']}; gold positions {cfg.get('positions', 'shuffled')} (negatives "
             f"shuffled with a seed derived from it and the sample id; positions and the design are stored in "
             f"<code>audit_candidates</code>). Candidates: {cfg['candidates']}; "
             f"{cfg['n_negatives']} hard negatives retrieved with {cfg['negatives']} from each benchmark's own corpus, "
             f"gold excluded. Reversed-order pass: {'yes' if cfg['reverse_pass'] else 'no'}. Each turn is judged as "
             "the current turn with its history. Turns whose gold passage is missing from the corpus are skipped "
             "and counted, never scored 0. Parse failures are counted per judge.</p>"]
    summary = result["summary"]
    for b in result["benchmarks"]:
        judges, keys, cells = _wide(summary, b["name"])
        parts.append(f"<h2>{escape(b['name'])}</h2>")
        rows = []
        for k in keys:
            rows.append([variant_name(*k), cells[(*k, judges[0])]["n_skipped"]]
                        + [_cell(cells[(*k, j)]) for j in judges])
        parts.append(_table(["metric", "skipped turns", *judges], rows))
    parts.append("<p><small>Cells: mean [95% bootstrap CI] n = valid judgments; pf = parse failures; fail = other "
                 "failures; self = excluded for self-preference. Ensemble: mean of 1-5 ratings, majority vote for "
                 "0/1, per item.</small></p>")
    if heatmap is not None and Path(heatmap).is_file():
        parts.append(f"<h2>Judge x benchmark</h2><img alt=\"heatmap\" src=\"{png_data_uri(heatmap)}\">")
    parts.append("<h2>Inter-judge agreement</h2>")
    parts.append(_table(["benchmark", "metric", "judges", "units", "Krippendorff's alpha", "level",
                         "mean pairwise Spearman", "raw agreement", "choice alpha"],
                        [[a["benchmark"], variant_name(a["metric"], a["variant"]), a["n_judges"], a["n_units"],
                          a["alpha"], a["alpha_level"], a["mean_pairwise_spearman"], a["mean_pairwise_agreement"],
                          a["choice_alpha"]] for a in result["agreement"]]))
    if result["position"]:
        parts.append("<h2>Position bias (distinguishability)</h2>")
        parts.append(_table(["benchmark", "source", "judge", "items", "accuracy", "accuracy reversed", "both passes",
                             "consistency", "picks at [1]", "picks at last", "chosen positions", "gold positions",
                             "accuracy by gold slot", "chi-square (df, p)", "by-slot chi-square (df, p)"],
                            [[p["benchmark"], p["source"], p["judge"], p["n_items"], p["accuracy_forward"],
                              p["accuracy_reversed"], p["n_both"], p["consistency"], p["first_position_rate"],
                              p["last_position_rate"], " ".join(map(str, p["chosen_position_hist"])),
                              " ".join(map(str, p["gold_position_hist"])),
                              " ".join(_fmt(a, 2) for a in p.get("accuracy_by_gold_position") or []),
                              f"{_fmt(p.get('position_chi2'), 1)} ({p.get('position_df')}, "
                              f"{_pval(p.get('position_p'))})",
                              f"{_fmt(p.get('slot_accuracy_chi2'), 1)} ({p.get('slot_accuracy_df')}, "
                              f"{_pval(p.get('slot_accuracy_p'))})"] for p in result["position"]]))
        parts.append("<p><small>Forward pass. Chi-square: chosen positions against the gold positions' "
                     "distribution (a judge without position preference follows it); by-slot: whether accuracy "
                     "depends on the gold slot. Gold positions are counterbalanced within each benchmark unless "
                     "the audit ran with <code>positions: shuffled</code>.</small></p>")
    fails = [r for r in summary if r["judge"] != ENSEMBLE and (r["n_parse_failures"] or r["n_failures"])]
    parts.append("<h2>Parse failures and other failures</h2>")
    parts.append(_table(["benchmark", "metric", "judge", "attempted", "parse failures", "rate", "other failures"],
                        [[r["benchmark"], variant_name(r["metric"], r["variant"]), r["judge"], r["n_attempted"],
                          r["n_parse_failures"], r["parse_failure_rate"], r["n_failures"]] for r in fails])
                 if fails else "<p>None.</p>")
    mp = result["missing_positives"]
    parts.append(f"<h2>Candidate missing positives ({len(mp)})</h2><p>Passages a judge chose over the gold one; "
                 "for human review (<code>missing_positives.csv</code>). First 25, most picked first.</p>")
    parts.append(_table(["benchmark", "sample", "question", "gold passage", "chosen passage", "picked by", "ensemble"],
                        [[m["benchmark"], m["sample_id"], m["rewrite"] or m["question"], _snip(m["gold_text"]),
                          _snip(m["candidate_text"]), ", ".join(m["picked_by"]) + f" ({m['n_picks']}/{m['n_judgments']})",
                          "flagged" if m["ensemble_flagged"] else ""] for m in mp[:25]], text_cols=(2, 3, 4)))
    if result.get("human"):
        parts.append("<h2>Agreement with human ratings</h2>")
        parts.append(_table(["metric", "rater", "n", "Pearson", "p", "Spearman", "p"],
                            [[h["metric"], h["rater"], h["n"], h["pearson"], h["pearson_p"], h["spearman"],
                              h["spearman_p"]] for h in result["human"]]))
    parts.append(f"<p><small>Outputs in <code>{escape(str(result['out_dir']))}</code>: audit_*.parquet tables, "
                 "heatmap.png, missing_positives.csv, report.md, manifest.json.</small></p>")
    if note:
        parts.append(banner)
    parts.append("</body></html>")
    return write_page(path, parts)
