"""Step 3: pairing with other conversations' contexts and the unfit flag."""
import math

from evaluation.abstention.contexts import Context
from evaluation.abstention.negative_control import control_result, pair_foreign, unfit_judges


def ctx(conv, turn, docs, gold=()):
    return Context("bm25", f"{conv}:{turn}", conv, turn, tuple(docs), tuple(1.0 for _ in docs), frozenset(gold))


def test_each_turn_borrows_the_next_conversations_context():
    cs = [ctx("b", 1, ["b1"]), ctx("a", 2, ["a2"], gold=["z"]), ctx("a", 1, ["a1"]),
          ctx("c", 1, ["c1"], gold=["a1"])]
    pairs, dropped = pair_foreign(cs)
    got = {(p.sample_id, p.foreign_sample_id, p.doc_ids) for p in pairs}
    # sorted conversations a, b, c: a borrows from b (turn j -> b's turn j mod 1), b from c, c from a
    # c:1 would borrow a:1's context, which holds c:1's own qrels passage a1 -> dropped
    assert got == {("a:1", "b:1", ("b1",)), ("a:2", "b:1", ("b1",)), ("b:1", "c:1", ("c1",))}
    assert dropped == 1
    assert pair_foreign([ctx("a", 1, ["x"]), ctx("a", 2, ["y"])]) == ([], 0)


def test_yes_rate_and_unfit_flag():
    r = control_result("lenient", ["yes", "yes", "no", "partial", None], ceiling=0.3)
    assert (r.n, r.n_yes, r.n_partial, r.n_no, r.n_failed) == (4, 2, 1, 1, 1)
    assert r.yes_rate == 0.5 and r.yes_partial_rate == 0.75 and r.unfit
    strict = control_result("strict", ["yes", "no", "no", "no", "no"], ceiling=0.2)
    assert strict.yes_rate == 0.2 and not strict.unfit          # at the ceiling is still fit
    assert unfit_judges({"lenient": r, "strict": strict}) == ["lenient"]
    empty = control_result("x", [None], ceiling=0.1)
    assert math.isnan(empty.yes_rate) and not empty.unfit
