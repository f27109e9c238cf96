import math

import pytest

from evaluation.audit.agreement import krippendorff_alpha, mean_pairwise_agreement, mean_pairwise_spearman
from evaluation.audit.aggregate import agreement_rows, ensemble_items, majority, summary_rows
from evaluation.audit.base import JudgeSpec

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 coders x 12 units
KRIPP = list(zip([1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
                 [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
                 [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
                 [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N]))


@pytest.mark.parametrize("level,expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                            ("ratio", 0.797)])
def test_krippendorff_published_example(level, expected):
    assert krippendorff_alpha(KRIPP, level) == pytest.approx(expected, abs=5e-4)


def test_krippendorff_hand_computed_binary():
    # units: (1,1), (0,0), (1,0): o = [[2,1],[1,2]], n = 6, n0 = n1 = 3
    # alpha = 1 - (n-1) * (o01 + o10) / (2 * n0 * n1) = 1 - 5 * 2 / 18
    assert krippendorff_alpha([[1, 1], [0, 0], [1, 0]], "nominal") == pytest.approx(1 - 10 / 18)
    assert krippendorff_alpha([[3, 3], [3, 3]]) != krippendorff_alpha([[3, 3], [3, 3]])   # NaN: no variation
    assert math.isnan(krippendorff_alpha([[1, None], [None, 2]]))                           # nothing pairable
    assert krippendorff_alpha([[1, 1], [2, 2], [5, 5]]) == 1.0


def test_pairwise_spearman_and_agreement():
    data = [[1, 2, 5], [2, 3, 4], [3, 4, 3], [4, 5, 2]]
    # pairs: (a,b) rho 1, (a,c) rho -1, (b,c) rho -1 -> mean -1/3
    assert mean_pairwise_spearman(data) == pytest.approx(-1 / 3)
    assert mean_pairwise_agreement([[1, 1, 0], [0, 0, 0]]) == pytest.approx((1 + 0.5 + 0.5) / 3)


def _row(judge, unit, score, status="ok", metric="faithfulness", variant="", **kw):
    return {"benchmark": "b", "sample_id": unit, "unit_id": unit, "doc_id": None, "metric": metric,
            "variant": variant, "judge": judge, "status": status, "score": score if status == "ok" else None,
            "chosen_doc": kw.get("chosen"), "gold_position": kw.get("gold_position")}


def test_ensemble_and_summary_hand_checked():
    judges = [JudgeSpec("a"), JudgeSpec("b"), JudgeSpec("c")]
    rows = [_row("a", "u1", 5), _row("b", "u1", 3), _row("c", "u1", None, "parse_failure"),
            _row("a", "u2", 2), _row("b", "u2", 4), _row("c", "u2", 3),
            _row("a", "u3", None, "excluded_self"), _row("b", "u3", 1), _row("c", "u3", None, "failed"),
            # distinguishability: u1 majority 2/3 gold, u2 tie 1/2 (c self-excluded)
            _row("a", "u1", 1.0, metric="distinguishability", variant="retrieved", chosen="g"),
            _row("b", "u1", 1.0, metric="distinguishability", variant="retrieved", chosen="g"),
            _row("c", "u1", 0.0, metric="distinguishability", variant="retrieved", chosen="x"),
            _row("a", "u2", 1.0, metric="distinguishability", variant="retrieved", chosen="g"),
            _row("b", "u2", 0.0, metric="distinguishability", variant="retrieved", chosen="y"),
            _row("c", "u2", None, "excluded_self", metric="distinguishability", variant="retrieved")]
    items = {(i["metric"], i["unit_id"]): i for i in ensemble_items(rows)}
    assert items[("faithfulness", "u1")]["ensemble"] == 4.0 and items[("faithfulness", "u1")]["n_judges"] == 2
    assert items[("faithfulness", "u2")]["ensemble"] == 3.0 and items[("faithfulness", "u2")]["judge_std"] > 0
    assert items[("faithfulness", "u3")]["ensemble"] == 1.0 and items[("faithfulness", "u3")]["n_judges"] == 1
    assert items[("distinguishability", "u1")]["ensemble"] == 1.0
    assert items[("distinguishability", "u1")]["majority_choice"] == "g"
    assert items[("distinguishability", "u2")]["ensemble"] == 0.5
    assert items[("distinguishability", "u2")]["majority_choice"] is None          # 1-1 tie
    assert majority([]) is None and majority([0, 0, 1]) == 0.0

    skipped = [{"benchmark": "b", "sample_id": "u9", "metric": "faithfulness", "variant": "", "reason": "no_answer"}]
    keys = [("b", "faithfulness", ""), ("b", "distinguishability", "retrieved")]
    summ = {(r["metric"], r["judge"]): r for r in summary_rows(rows, list(items.values()), skipped, judges, keys,
                                                              n_resamples=200)}
    a, c, e = summ[("faithfulness", "a")], summ[("faithfulness", "c")], summ[("faithfulness", "ensemble")]
    assert (a["mean"], a["n"], a["n_attempted"], a["n_excluded_self"]) == (3.5, 2, 2, 1)
    assert (c["mean"], c["n"], c["n_parse_failures"], c["n_failures"], c["parse_failure_rate"]) == (3.0, 1, 1, 1, 1 / 3)
    assert e["mean"] == pytest.approx((4 + 3 + 1) / 3) and e["n"] == 3
    assert (e["n_parse_failures"], e["n_failures"], e["n_excluded_self"], e["n_skipped"]) == (1, 1, 1, 1)
    assert a["ci_low"] <= a["mean"] <= a["ci_high"]
    d = summ[("distinguishability", "ensemble")]
    assert d["mean"] == pytest.approx(0.75) and d["scale"] == "0-1"

    agr = {r["metric"]: r for r in agreement_rows(rows, judges, keys)}
    f = agr["faithfulness"]
    # pairable units: u1 (a=5, b=3), u2 (2, 4, 3)
    assert f["n_units"] == 2
    assert f["alpha"] == pytest.approx(krippendorff_alpha([[5, 3, None], [2, 4, 3]], "interval"))
    assert agr["distinguishability"]["choice_alpha"] == pytest.approx(
        krippendorff_alpha([["g", "g", "x"], ["g", "y", None]], "nominal"))
