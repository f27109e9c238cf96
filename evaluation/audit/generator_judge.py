"""Generator x judge table (model selection, the paper's way): for every model that wrote
turns (``generator``) and every judge, how the judge agrees with the other judges and with
people on that generator's turns, with self-judging marked.

Per (metric variant, generator, judge), over the units of turns written by ``generator``:

* ``n``: the judge's valid judgments there; ``n_self``: units withheld because the judge is
  the generator's own model (``excluded_self``); ``self`` is True when any was withheld;
* agreement with the **ensemble of the other judges** (leave-one-out, so a judge is not
  compared with itself): for 0/1 distinguishability the share of units where the judge's
  score equals the others' majority (units where the others tie or are absent are left
  out); for 1-5 metrics the mean absolute difference from the others' mean (0 = identical)
  and the share within one point;
* agreement with **human ratings** when given (``{(benchmark, sample_id, metric): mean
  rating}``): the same two figures against the human value.

Turns without a known generator are grouped under ``unknown``.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any, Mapping, Sequence

UNKNOWN = "unknown"


def _others(scores: Mapping[str, float], judge: str, binary: bool) -> float | None:
    vals = [v for j, v in scores.items() if j != judge]
    if not vals:
        return None
    if binary:
        s, n = sum(vals), len(vals)
        return None if 2 * s == n else float(2 * s > n)
    return statistics.fmean(vals)


def _agree(pairs: list[tuple[float, float]], binary: bool) -> dict[str, float]:
    if not pairs:
        return {"agreement": math.nan, "mad": math.nan, "within_1": math.nan}
    if binary:
        return {"agreement": statistics.fmean(a == round(b) for a, b in pairs), "mad": math.nan, "within_1": math.nan}
    return {"agreement": math.nan, "mad": statistics.fmean(abs(a - b) for a, b in pairs),
            "within_1": statistics.fmean(abs(a - b) <= 1 for a, b in pairs)}


def generator_judge_rows(scores: Sequence[Mapping[str, Any]],
                         human: Mapping[tuple[str, str, str], float] | None = None) -> list[dict[str, Any]]:
    """The table (see module docstring) from ``audit_scores`` rows; reversed passes left out."""
    units: dict[tuple[str, str, str, str], dict[str, float]] = defaultdict(dict)
    gen_of: dict[tuple[str, str, str, str], str] = {}
    self_n: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for r in scores:
        if r["variant"].endswith("reversed"):
            continue
        key = (r["benchmark"], r["metric"], r["variant"], r["unit_id"])
        gen = r.get("generator") or UNKNOWN
        gen_of[key] = gen
        if r["status"] == "ok":
            units[key][r["judge"]] = float(r["score"])
        elif r["status"] == "excluded_self":
            self_n[(r["metric"], r["variant"], gen, r["judge"])] += 1
    judges = list(dict.fromkeys(r["judge"] for r in scores))
    sample_of = {(r["benchmark"], r["metric"], r["variant"], r["unit_id"]): r["sample_id"] for r in scores}
    ens: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    hum: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    count: dict[tuple, int] = defaultdict(int)
    for key, js in units.items():
        bench, metric, variant, _ = key
        binary = metric == "distinguishability"
        for j, v in js.items():
            g = (metric, variant, gen_of[key], j)
            count[g] += 1
            o = _others(js, j, binary)
            if o is not None:
                ens[g].append((v, o))
            h = (human or {}).get((bench, sample_of[key], metric))
            if h is not None:
                hum[g].append((v, h))
    groups = sorted({(m, v, gen) for (m, v, gen, _) in [*count, *self_n]})
    out = []
    for metric, variant, gen in groups:
        binary = metric == "distinguishability"
        for j in judges:
            g = (metric, variant, gen, j)
            if g not in count and g not in self_n:
                continue
            e, h = _agree(ens.get(g, []), binary), _agree(hum.get(g, []), binary)
            out.append({"metric": metric, "variant": variant, "generator": gen, "judge": j, "n": count.get(g, 0),
                        "n_self": self_n.get(g, 0), "self": self_n.get(g, 0) > 0,
                        "n_vs_ensemble": len(ens.get(g, [])), "ensemble_agreement": e["agreement"],
                        "ensemble_mad": e["mad"], "ensemble_within_1": e["within_1"],
                        "n_vs_human": len(hum.get(g, [])), "human_agreement": h["agreement"],
                        "human_mad": h["mad"], "human_within_1": h["within_1"]})
    return out


def human_means(ratings: Sequence[Mapping[str, Any]], benchmarks: Sequence[str]) -> dict[tuple[str, str, str], float]:
    """``{(benchmark, sample_id, metric): mean rating}`` from :func:`evaluation.audit.human.load_human_ratings`
    rows (a row without a benchmark applies to every audited benchmark; alignment ratings of
    several passages are averaged per turn)."""
    acc: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in ratings:
        for b in ([r["benchmark"]] if r.get("benchmark") else benchmarks):
            acc[(b, r["sample_id"], r["metric"])].append(float(r["value"]))
    return {k: statistics.fmean(v) for k, v in acc.items()}
