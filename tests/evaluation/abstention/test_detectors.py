"""Step 6 scores: first-token P(ANSWERABLE) from logprobs, the offline stand-in, top-1 scores."""
import math

import pytest

from agents.results import StepResult, TokenLogprob
from evaluation.abstention.contexts import Context
from evaluation.abstention.detectors import (heuristic_p_answerable, p_answerable, p_answerable_from_logprobs,
                                             top1_scores)


def tok(token, p, alts):
    return TokenLogprob(token, math.log(p), tuple((t, math.log(q)) for t, q in alts))


def test_p_answerable_from_first_token_alternatives():
    # ANSWER 0.6, UN 0.3, "The" 0.1 -> 0.6 / 0.9
    lp = [tok("ANSWER", 0.6, [("ANSWER", 0.6), ("UN", 0.3), ("The", 0.1)]), tok("ABLE", 0.99, [])]
    assert p_answerable_from_logprobs(lp) == pytest.approx(0.6 / 0.9)
    # a Markdown token first is skipped; case and spaces do not matter; prefixes count
    lp = [tok("**", 0.9, [("**", 0.9)]),
          tok(" Unans", 0.5, [(" Unans", 0.5), (" answerable", 0.25), ("UNANSWERABLE", 0.25)])]
    assert p_answerable_from_logprobs(lp) == pytest.approx(0.25 / 1.0)
    # the sampled token counts even when missing from top_logprobs
    assert p_answerable_from_logprobs([tok("UN", 0.8, [])]) == 0.0
    assert p_answerable_from_logprobs([tok("Sure", 0.9, [("Sure", 0.9), ("Yes", 0.1)])]) is None
    assert p_answerable_from_logprobs(None) is None and p_answerable_from_logprobs([]) is None


def test_offline_stand_in_and_result_dispatch():
    x = {"question": "When did the Eiffel Tower open?", "history": [],
         "passages": [{"text": "The Eiffel Tower is in Paris."}, {"text": "It did open to visitors in 1889."}]}
    # question content tokens: eiffel, tower, open -> passage 1 has 2 of 3, passage 2 has 1 of 3
    assert heuristic_p_answerable(x) == pytest.approx(2 / 3)
    short = {"question": "Why?", "history": [["user", "Tell me about the Eiffel Tower"], ["assistant", "ok"]],
             "passages": [{"text": "Eiffel tower facts"}]}
    assert heuristic_p_answerable(short) == 1.0            # the previous user turn fills in
    assert heuristic_p_answerable({**x, "passages": []}) == 0.0
    base = dict(step="s", role="r", prompt_version="v", model=None, endpoint=None, raw_prompt=(), raw_output="x",
                output=object())
    assert p_answerable(StepResult(backend="offline", **base), x) == pytest.approx(2 / 3)
    online = StepResult(backend="openai", logprobs=(tok("ANSWER", 0.5, [("UN", 0.5)]),), **base)
    assert p_answerable(online, x) == pytest.approx(0.5)


def test_top1_scores_negated_with_empty_contexts_last():
    cs = [Context("r", "a", "c", 1, ("d1",), (12.0,), frozenset()),
          Context("r", "b", "c", 2, (), (), frozenset()),
          Context("r", "c", "c", 3, ("d2",), (3.0,), frozenset())]
    assert top1_scores(cs) == [-12.0, -2.0, -3.0]          # empty: min top-1 (3.0) minus 1, negated
