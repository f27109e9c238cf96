"""Aggregation of judgments: the per-unit ensemble, the per-benchmark table, agreement,
position bias and the candidate missing positives.

Rules:

* A judgment counts when its status is ``ok``. Parse failures, other failures and
  self-preference exclusions never count as a score; they are counted in the table.
* Ensemble per unit: the **mean** of the judges' 1-5 ratings; for the 0/1 distinguishability
  score the **majority** vote (1 when more than half of the valid judges picked the gold
  passage, 0 when fewer than half, 0.5 on an exact tie).
* Per benchmark x metric variant x judge: mean, percentile-bootstrap CI, n (valid
  judgments), n_attempted (judgments asked for), n_parse_failures, n_failures,
  n_excluded_self and n_skipped (turns not judged for that metric, see
  :mod:`evaluation.audit.prepare`); the ``ensemble`` row averages the per-unit ensemble over
  units with at least one valid judgment and sums the failure counts of all judges.
"""
from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping, Sequence

from evaluation.audit.agreement import krippendorff_alpha, mean_pairwise_agreement, mean_pairwise_spearman
from evaluation.audit.base import JudgeSpec
from evaluation.audit.position import position_bias
from evaluation.bootstrap import bootstrap_ci

ENSEMBLE = "ensemble"
Key = tuple[str, str, str]   # (benchmark, metric, variant)


def _binary(metric: str) -> bool:
    return metric == "distinguishability"


def _groups(rows: Iterable[Mapping[str, Any]], *fields: str) -> dict[tuple, list[Mapping[str, Any]]]:
    out: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        out[tuple(r[f] for f in fields)].append(r)
    return out


def majority(votes: Sequence[float]) -> float | None:
    """1 if more than half of ``votes`` are 1, 0 if fewer than half, 0.5 on a tie; None if empty."""
    if not votes:
        return None
    s, n = sum(votes), len(votes)
    return 1.0 if 2 * s > n else 0.0 if 2 * s < n else 0.5


def ensemble_items(scores: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (benchmark, metric, variant, unit) with the ensemble score (see module docstring)."""
    out = []
    for (bench, metric, variant, unit), rows in _groups(scores, "benchmark", "metric", "variant", "unit_id").items():
        ok = [r for r in rows if r["status"] == "ok"]
        vals = [float(r["score"]) for r in ok]
        first = rows[0]
        row: dict[str, Any] = {
            "benchmark": bench, "sample_id": first["sample_id"], "unit_id": unit, "doc_id": first.get("doc_id"),
            "metric": metric, "variant": variant, "n_judges": len(ok),
            "judge_scores_json": json.dumps({r["judge"]: (r["score"] if r["status"] == "ok" else r["status"])
                                             for r in rows}, sort_keys=True),
            "judge_min": min(vals) if vals else None, "judge_max": max(vals) if vals else None,
            "judge_std": statistics.pstdev(vals) if len(vals) > 1 else (0.0 if vals else None),
            "gold_position": first.get("gold_position"),
        }
        if _binary(metric):
            row["ensemble"] = majority(vals)
            row["n_votes_gold"] = int(sum(vals))
            picks = Counter(r["chosen_doc"] for r in ok)
            if picks:
                top = picks.most_common()
                row["majority_choice"] = top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else None
        else:
            row["ensemble"] = statistics.fmean(vals) if vals else None
        out.append(row)
    return out


def _ci(values: list[float], confidence: float, n_resamples: int, seed: int) -> tuple[float | None, float | None,
                                                                                        float | None]:
    if not values:
        return None, None, None
    ci = bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return ci.mean, ci.low, ci.high


def summary_rows(scores: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]],
                 skipped: Sequence[Mapping[str, Any]], judges: Sequence[JudgeSpec], keys: Sequence[Key],
                 confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """The per-benchmark table (see module docstring); ``keys`` = every (benchmark, metric,
    variant) audited, so a metric with no judgment at all still gets its (empty) rows."""
    by = _groups(scores, "benchmark", "metric", "variant", "judge")
    by_item = _groups(items, "benchmark", "metric", "variant")
    skips = Counter((s["benchmark"], s["metric"], s["variant"]) for s in skipped)
    out = []
    for key in keys:
        bench, metric, variant = key
        scale = "0-1" if _binary(metric) else "1-5"
        base = {"benchmark": bench, "metric": metric, "variant": variant, "scale": scale, "confidence": confidence,
                "n_skipped": skips.get(key, 0)}
        totals = Counter()
        for j in judges:
            rows = by.get((bench, metric, variant, j.name), [])
            st = Counter(r["status"] for r in rows)
            vals = [float(r["score"]) for r in rows if r["status"] == "ok"]
            mean, lo, hi = _ci(vals, confidence, n_resamples, seed)
            attempted = len(rows) - st["excluded_self"]
            totals.update(st)
            out.append({**base, "judge": j.name, "judge_kind": j.kind, "mean": mean, "ci_low": lo, "ci_high": hi,
                        "n": len(vals), "n_attempted": attempted, "n_parse_failures": st["parse_failure"],
                        "n_failures": st["failed"], "n_excluded_self": st["excluded_self"],
                        "parse_failure_rate": st["parse_failure"] / attempted if attempted else None})
        ens = [float(r["ensemble"]) for r in by_item.get(key, []) if r["ensemble"] is not None]
        mean, lo, hi = _ci(ens, confidence, n_resamples, seed)
        n_units = len(by_item.get(key, []))
        attempted = sum(totals.values()) - totals["excluded_self"]
        out.append({**base, "judge": ENSEMBLE, "judge_kind": "ensemble", "mean": mean, "ci_low": lo, "ci_high": hi,
                    "n": len(ens), "n_attempted": n_units, "n_parse_failures": totals["parse_failure"],
                    "n_failures": totals["failed"], "n_excluded_self": totals["excluded_self"],
                    "parse_failure_rate": totals["parse_failure"] / attempted if attempted else None})
    return out


def agreement_rows(scores: Sequence[Mapping[str, Any]], judges: Sequence[JudgeSpec],
                   keys: Sequence[Key]) -> list[dict[str, Any]]:
    """Inter-judge agreement per (benchmark, metric, variant): Krippendorff's alpha (interval
    for 1-5 ratings, nominal for 0/1), mean pairwise Spearman (1-5) and raw agreement; for
    distinguishability also the nominal alpha of *which* passage was chosen."""
    names = [j.name for j in judges]
    by = _groups(scores, "benchmark", "metric", "variant")
    out = []
    for key in keys:
        bench, metric, variant = key
        units: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
        for r in by.get(key, []):
            if r["status"] == "ok":
                units[r["unit_id"]][r["judge"]] = r
        mat = [[units[u][n]["score"] if n in units[u] else None for n in names] for u in sorted(units)]
        pairable = sum(1 for row in mat if sum(v is not None for v in row) >= 2)
        binary = _binary(metric)
        row = {"benchmark": bench, "metric": metric, "variant": variant, "n_judges": len(names), "n_units": pairable,
               "alpha_level": "nominal" if binary else "interval", "alpha": None, "mean_pairwise_spearman": None,
               "mean_pairwise_agreement": None, "choice_alpha": None}
        if len(names) >= 2 and mat:
            row["alpha"] = krippendorff_alpha(mat, "nominal" if binary else "interval")
            row["mean_pairwise_agreement"] = mean_pairwise_agreement(mat)
            if not binary:
                row["mean_pairwise_spearman"] = mean_pairwise_spearman(mat)
            else:
                choices = [[units[u][n]["chosen_doc"] if n in units[u] else None for n in names] for u in sorted(units)]
                row["choice_alpha"] = krippendorff_alpha(choices, "nominal")
        out.append(row)
    return out


def position_rows(scores: Sequence[Mapping[str, Any]], judges: Sequence[JudgeSpec]) -> list[dict[str, Any]]:
    """Position bias of the distinguishability test per (benchmark, source, judge): accuracy
    of the forward and reversed passes, consistency (same passage chosen in both passes),
    share of picks at the first / last position and the histograms of chosen and gold
    positions (forward pass, index 0 = position 1); accuracy by gold slot and the two
    chi-square tests of :mod:`evaluation.audit.position` over the valid forward judgments of
    full-length lists (``n_tested``)."""
    dist = [r for r in scores if r["metric"] == "distinguishability"]
    out = []
    for (bench, source), rows in _groups(dist, "benchmark", "candidate_source").items():
        for j in judges:
            fwd = {r["unit_id"]: r for r in rows if r["judge"] == j.name and r["pass"] == "forward"}
            rev = {r["unit_id"]: r for r in rows if r["judge"] == j.name and r["pass"] == "reversed"}
            if not fwd:
                continue
            f_ok = [r for r in fwd.values() if r["status"] == "ok"]
            r_ok = [r for r in rev.values() if r["status"] == "ok"]
            both = [u for u in fwd if fwd[u]["status"] == "ok" and u in rev and rev[u]["status"] == "ok"]
            width = max(len(r["candidates"]) for r in fwd.values())
            chosen = [0] * width
            gold = [0] * width
            for r in fwd.values():
                gold[r["gold_position"] - 1] += 1
            for r in f_ok:
                chosen[r["chosen_position"] - 1] += 1
            pb = position_bias([(r["gold_position"], r["chosen_position"]) for r in f_ok
                                if len(r["candidates"]) == width], width)
            out.append({
                "benchmark": bench, "source": source, "judge": j.name, "n_items": len(fwd),
                "accuracy_forward": statistics.fmean(r["score"] for r in f_ok) if f_ok else None,
                "accuracy_reversed": statistics.fmean(r["score"] for r in r_ok) if r_ok else None,
                "n_both": len(both),
                "consistency": (statistics.fmean(fwd[u]["chosen_doc"] == rev[u]["chosen_doc"] for u in both)
                                if both else None),
                "first_position_rate": statistics.fmean(r["chosen_position"] == 1 for r in f_ok) if f_ok else None,
                "last_position_rate": (statistics.fmean(r["chosen_position"] == len(r["candidates"]) for r in f_ok)
                                       if f_ok else None),
                "chosen_position_hist": chosen, "gold_position_hist": gold,
                "n_tested": pb.n, "accuracy_by_gold_position": pb.accuracy_by_slot,
                "position_chi2": pb.chi2, "position_df": pb.df, "position_p": pb.p,
                "slot_accuracy_chi2": pb.slot_chi2, "slot_accuracy_df": pb.slot_df, "slot_accuracy_p": pb.slot_p,
            })
    return out


def missing_positive_rows(scores: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]],
                          benchmarks: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Passages a judge chose instead of the gold one (any pass), grouped per (turn, source,
    passage): who picked it, out of how many valid judgments, and whether the ensemble of the
    forward pass flagged the turn (majority picked this same non-gold passage).

    ``benchmarks``: ``{name: Benchmark}`` (texts, questions)."""
    dist = [r for r in scores if r["metric"] == "distinguishability" and r["status"] == "ok"]
    n_judg = Counter((r["benchmark"], r["sample_id"], r["candidate_source"]) for r in dist)
    flagged = {(i["benchmark"], i["sample_id"], i["variant"]): i for i in items if i["metric"] == "distinguishability"}
    groups: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in dist:
        if r["chosen_doc"] != r["gold_doc"]:
            groups[(r["benchmark"], r["sample_id"], r["candidate_source"], r["chosen_doc"])].append(r)
    turns = {name: b.by_id() for name, b in benchmarks.items()}
    out = []
    for (bench, sid, source, doc), rows in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        b = benchmarks[bench]
        turn = turns[bench][sid]
        gold = rows[0]["gold_doc"]
        it = flagged.get((bench, sid, source))
        out.append({
            "benchmark": bench, "sample_id": sid, "conv_id": turn.conv_id, "turn": turn.turn, "source": source,
            "question": turn.question, "rewrite": turn.rewrite, "gold_doc": gold, "gold_text": b.corpus[gold].text,
            "candidate_doc": doc, "candidate_title": b.corpus[doc].title, "candidate_text": b.corpus[doc].text,
            "n_picks": len(rows), "n_judgments": n_judg[(bench, sid, source)],
            "picked_by": [f"{r['judge']}{' (reversed)' if r['pass'] == 'reversed' else ''}" for r in rows],
            "ensemble_flagged": bool(it is not None and it["ensemble"] == 0.0 and it.get("majority_choice") == doc),
            "rationales_json": json.dumps({f"{r['judge']}/{r['pass']}": r["rationale"] for r in rows},
                                          ensure_ascii=False),
        })
    return out
