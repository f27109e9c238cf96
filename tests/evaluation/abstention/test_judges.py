"""The offline judges on constructed passages (counts worked out in the comments), and the
mapping of a judge's passage numbers to doc ids."""
from agents.results import LLMFailure, StepResult
from evaluation.abstention.judges import (ContextJudgment, heuristic_overlap, heuristic_support, judge_messages,
                                          to_judgment)

REF = "The tower opened in 1889. It was built by Gustave Eiffel for the World Fair."
# sentence 1 content tokens: tower, opened, 1889 (3); sentence 2: built, gustave, eiffel, world, fair (5)


def x(*passages):
    return {"question": "When did it open?", "history": [["user", "Tell me about the Eiffel Tower"]],
            "reference_answer": REF, "passages": [{"doc_id": f"d{i}", "title": "", "text": p}
                                                  for i, p in enumerate(passages)]}


def test_support_judge_labels():
    full = x("Unrelated text about rivers.", "The tower opened in 1889 to the public.",
             "Gustave Eiffel built it for the World Fair of 1889.")
    j = heuristic_support(full)
    assert j.label == "yes" and j.supporting_passages == [2, 3]     # core (3/3) and sentence 2 (5/5)
    core_only = heuristic_support(x("The tower opened in 1889."))
    assert core_only.label == "yes"                                  # 1 of 2 sentences, the core: half
    second_only = heuristic_support(x("Gustave Eiffel built it for the World Fair."))
    assert second_only.label == "partial"                           # the core is not supported
    assert heuristic_support(x("Rivers and lakes.")).label == "no"
    assert heuristic_support(x()).label == "no"
    assert heuristic_support({**x("anything"), "reference_answer": "Thanks!"}).label == "no"


def test_overlap_judge_labels():
    # answer content tokens: tower opened 1889 built gustave eiffel world fair (8) -> 7 bigrams
    same = heuristic_overlap(x(REF))
    assert same.label == "yes" and same.supporting_passages == [1]
    # "built gustave", "gustave eiffel", "eiffel world", "world fair": 4 of 7 bigrams >= 0.3
    assert heuristic_overlap(x("Built Gustave Eiffel: World Fair.")).label == "yes"
    # one bigram of 7 (0.14) -> partial
    assert heuristic_overlap(x("The world fair was big.")).label == "partial"
    assert heuristic_overlap(x("Rivers and lakes.")).label == "no"


def test_prompt_and_verdict_mapping():
    text = "\n".join(m["content"] for m in judge_messages(x("p one", "p two")))
    assert f"Reference answer: <answer>{REF}</answer>" in text and "<passage id=\"2\">\np two\n</passage>" in text
    assert '<turn role="user">Tell me' in text
    base = dict(step="abstention_judge", role="r", backend="openai", prompt_version="v", model="m", endpoint="e",
                raw_prompt=(), raw_output="{}")
    ok = StepResult(output=ContextJudgment(label="yes", supporting_passages=[2, 2, 9, 0]), **base)
    j = to_judgment("A", ok, ("d0", "d1", "d2"))
    assert j.label == "yes" and j.supporting == ("d1",) and j.failure is None
    bad = StepResult(failure=LLMFailure("invalid_output", "no JSON"), **base)
    j = to_judgment("A", bad, ("d0",))
    assert j.label is None and j.failure == "invalid_output"
