import pytest

from agents.parsing import OutputInvalid
from evaluation.audit.base import JudgeSpec, normalize_model, parse_choice, parse_rating


def test_rating_from_json_text_and_digit():
    r = parse_rating('{"rationale": "fully supported", "rating": 5}')
    assert (r.rationale, r.rating) == ("fully supported", 5)
    r = parse_rating("Justification: the passage names the year but not the leader.\nRating: 3")
    assert r.rating == 3 and r.rationale == "the passage names the year but not the leader."
    assert parse_rating("Score: 2 ... on reflection, Rating: **4**").rating == 4      # last match wins
    assert parse_rating(" 4 ").rating == 4
    assert parse_rating('```json\n{"rationale": "x", "rating": 2}\n```').rating == 2


@pytest.mark.parametrize("bad", ["", None, "I cannot decide.", '{"rationale": "x", "rating": 7}', "Rating: 10",
                                 "Rating: 0"])
def test_rating_parse_failures(bad):
    with pytest.raises(OutputInvalid):
        parse_rating(bad)


def test_choice_from_json_and_reference_format():
    assert parse_choice('{"rationale": "only [2] names it", "choice": 2}', 8).choice == 2
    c = parse_choice("Passage 3 mentions the height explicitly, so the answer is [3]", 8)
    assert c.choice == 3 and c.rationale.startswith("Passage 3 mentions")
    assert parse_choice("Choice: 5", 8).choice == 5


@pytest.mark.parametrize("bad,n", [("[9]", 8), ('{"rationale": "x", "choice": 0}', 8), ("none of them", 8),
                                   ('{"rationale": "x", "choice": 4}', 3)])
def test_choice_parse_failures(bad, n):
    with pytest.raises(OutputInvalid):
        parse_choice(bad, n)


def test_self_preference_matching():
    j = JudgeSpec("qwen", endpoint="e", model="Qwen/Qwen2.5-72B-Instruct", aliases=("qwen2.5-72b",))
    assert normalize_model("Qwen/Qwen2.5-72B-Instruct") == "qwen2.5-72b-instruct"
    assert j.is_self("qwen2.5-72b-instruct") and j.is_self("QWEN2.5-72B") and not j.is_self("gemma-3-27b-it")
    assert not j.is_self(None)
    assert not JudgeSpec("overlap", kind="heuristic").is_self("overlap")
