"""Human ratings: import a CSV and correlate each judge and the ensemble with people.

CSV format (header row, case-insensitive names, one row per rated item and annotator):

* ``sample_id`` (required) — the benchmark's turn id, as in ``audit_scores``;
* ``benchmark`` (optional) — needed only when several audited benchmarks share ids;
* ``doc_id`` (optional) — rates one gold passage for alignment; without it an alignment
  rating is compared with the mean over the turn's gold passages;
* one or more metric columns: ``alignment`` (aliases ``answerable``, ``answerable_score``,
  ``query_evidence_alignment``), ``distinguishability`` (``document_correctness``,
  ``tag_score``, ``tag``), ``faithfulness`` (``faithful``, ``faithful_score``), ``quality``
  (``quality_score``). Empty cells are skipped; several annotators of the same item are
  averaged.

Distinguishability is compared on the forward pass of the first candidate source audited
(``retrieved`` unless only ``benchmark`` ran). Pearson and Spearman need at least three
paired items with variation on both sides; otherwise they are NaN.
"""
from __future__ import annotations

import csv
import math
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from evaluation.audit.aggregate import ENSEMBLE

ALIASES = {
    "alignment": ("alignment", "answerable", "answerable_score", "query_evidence_alignment"),
    "distinguishability": ("distinguishability", "document_correctness", "tag_score", "tag"),
    "faithfulness": ("faithfulness", "faithful", "faithful_score"),
    "quality": ("quality", "quality_score"),
}


class HumanRatingsError(ValueError):
    """The human ratings file is malformed (one sentence)."""


@contextmanager
def csv_with_header(p: Path, error: type[Exception], what: str = "") -> Iterator[tuple[dict[str, str], csv.DictReader]]:
    """An annotators' CSV (UTF-8, BOM tolerated): ``({lower-cased column: column}, reader)``;
    an unreadable file raises ``error`` with one sentence."""
    try:
        f = p.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise error(f"cannot read {what}{p}: {exc.strerror or exc}") from None
    with f:
        reader = csv.DictReader(f)
        yield {c.strip().lower(): c for c in (reader.fieldnames or [])}, reader


def load_human_ratings(path: str | Path) -> list[dict[str, Any]]:
    """Rows ``{"benchmark", "sample_id", "doc_id", "metric", "value"}`` from the CSV."""
    p = Path(path)
    with csv_with_header(p, HumanRatingsError, "human ratings ") as (cols, reader):
        if "sample_id" not in cols:
            raise HumanRatingsError(f"{p}: the header needs a sample_id column")
        metric_cols = {m: cols[a] for m, names in ALIASES.items() for a in names if a in cols}
        if not metric_cols:
            raise HumanRatingsError(f"{p}: no metric column (alignment, distinguishability, faithfulness, quality)")
        out = []
        for lineno, row in enumerate(reader, start=2):
            for m, c in metric_cols.items():
                cell = (row.get(c) or "").strip()
                if not cell:
                    continue
                try:
                    v = float(cell)
                except ValueError:
                    raise HumanRatingsError(f"{p}, line {lineno}: {c} = {cell!r} is not a number") from None
                out.append({"benchmark": (row.get(cols["benchmark"]) or "").strip() or None
                            if "benchmark" in cols else None,
                            "sample_id": row[cols["sample_id"]].strip(),
                            "doc_id": (row.get(cols["doc_id"]) or "").strip() or None if "doc_id" in cols else None,
                            "metric": m, "value": v})
    return out


def _corr(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    from scipy.stats import pearsonr, spearmanr   # costly: scipy
    nan = float("nan")
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return {"pearson": nan, "pearson_p": nan, "spearman": nan, "spearman_p": nan}
    p = pearsonr(x, y)
    s = spearmanr(x, y)
    return {"pearson": float(p.statistic), "pearson_p": float(p.pvalue),
            "spearman": float(s.statistic), "spearman_p": float(s.pvalue)}


def human_agreement(scores: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]],
                    ratings: Sequence[Mapping[str, Any]], judges: Sequence[str]) -> list[dict[str, Any]]:
    """Pearson / Spearman of every judge and the ensemble against the mean human rating, per
    metric (see module docstring)."""
    dist_variants = [v for v in ("retrieved", "benchmark")
                     if any(r["metric"] == "distinguishability" and r["variant"] == v for r in scores)]
    primary = {"distinguishability": dist_variants[0] if dist_variants else "retrieved"}

    def keep(metric: str, variant: str) -> bool:
        return variant == primary.get(metric, "")

    human: dict[tuple, list[float]] = defaultdict(list)
    for r in ratings:
        human[(r["metric"], r["benchmark"], r["sample_id"], r["doc_id"])].append(r["value"])
    # machine values: unit level and turn level (alignment averaged over gold passages)
    machine: dict[str, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in scores:
        if r["status"] == "ok" and keep(r["metric"], r["variant"]):
            machine[r["judge"]][(r["metric"], r["benchmark"], r["sample_id"], r.get("doc_id"))].append(r["score"])
    for it in items:
        if it["ensemble"] is not None and keep(it["metric"], it["variant"]):
            machine[ENSEMBLE][(it["metric"], it["benchmark"], it["sample_id"], it.get("doc_id"))].append(it["ensemble"])

    def lookup(vals: Mapping[tuple, list[float]], metric: str, bench: str | None, sid: str,
               doc: str | None) -> float | None:
        hits = [v for (m, b, s, d), vs in vals.items() if m == metric and s == sid
                and (bench is None or b == bench) and (doc is None or d == doc) for v in vs]
        return sum(hits) / len(hits) if hits else None

    out = []
    metrics = sorted({k[0] for k in human}, key=lambda m: list(ALIASES).index(m))
    for metric in metrics:
        keys = [k for k in human if k[0] == metric]
        for rater in [*judges, ENSEMBLE]:
            index = _index(machine.get(rater, {}))
            xs, ys = [], []
            for k in keys:
                m = lookup(index.get((metric, k[2]), {}), metric, k[1], k[2], k[3])
                if m is None or math.isnan(m):
                    continue
                xs.append(m)
                ys.append(sum(human[k]) / len(human[k]))
            out.append({"metric": metric, "rater": rater, "n": len(xs), **_corr(xs, ys)})
    return out


def _index(vals: Mapping[tuple, list[float]]) -> dict[tuple, dict[tuple, list[float]]]:
    """Group machine values by (metric, sample_id) so lookups stay linear."""
    out: dict[tuple, dict[tuple, list[float]]] = defaultdict(dict)
    for k, v in vals.items():
        out[(k[0], k[2])][k] = v
    return out
