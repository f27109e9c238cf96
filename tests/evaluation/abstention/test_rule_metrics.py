"""Step 5 on a constructed case; every expected value is computed by hand in the comments."""
import math

import pytest

from evaluation.abstention.rule_metrics import rule_metrics

# ten contexts: six rule-unanswerable, four rule-answerable
RULE = [True, True, True, True, True, True, False, False, False, False]
CONTENT = ["yes", "yes", "partial", "no", "no", "no", "yes", "yes", "no", "yes"]
# rule-unanswerable: yes 2, partial 1, no 3 (6); rule-answerable: yes 3, no 1
# content: yes 5, partial 1, no 4


def test_false_miss_precision_youden_and_abstention_rates():
    m = rule_metrics(RULE, CONTENT)
    assert (m.n_contexts, m.n_judged, m.rule_unanswerable, m.rule_unanswerable_judged) == (10, 10, 6, 6)
    assert (m.content_unanswerable, m.content_partial) == (4, 1)
    assert m.false_miss_yes == pytest.approx(2 / 6)            # yes among rule-unanswerable
    assert m.false_miss_yes_partial == pytest.approx(3 / 6)    # yes + partial
    assert m.precision == pytest.approx(3 / 5)                 # no / (no + yes), partial excluded
    assert m.precision_partial_answerable == pytest.approx(3 / 6)
    assert m.recall == pytest.approx(3 / 4)                    # rule-unans among the 4 "no"
    assert m.false_positive_rate == pytest.approx(2 / 5)       # rule-unans among the 5 "yes"
    assert m.youden_j == pytest.approx(3 / 4 - 2 / 5)          # 0.35
    # partial counted as answerable: negatives = 5 yes + 1 partial, 3 of them rule-unanswerable
    assert m.youden_j_partial_answerable == pytest.approx(3 / 4 - 3 / 6)   # 0.25
    assert m.abstention_rule == pytest.approx(6 / 10)
    assert m.abstention_content == pytest.approx(4 / 10)


def test_unjudged_contexts_are_left_out_of_content_statistics():
    m = rule_metrics(RULE + [True], CONTENT + [None])
    assert m.n_contexts == 11 and m.n_judged == 10 and m.rule_unanswerable == 7
    assert m.false_miss_yes == pytest.approx(2 / 6)


def test_undefined_cases_are_nan_not_errors():
    m = rule_metrics([True, True], ["yes", "yes"])      # no "no" label: recall undefined
    assert m.false_miss_yes == 1.0 and m.precision == 0.0
    assert math.isnan(m.recall) and math.isnan(m.youden_j)
    m = rule_metrics([False], ["no"])                   # no rule-unanswerable context
    assert math.isnan(m.false_miss_yes) and math.isnan(m.precision)
    with pytest.raises(ValueError, match="unknown content labels"):
        rule_metrics([True], ["maybe"])
