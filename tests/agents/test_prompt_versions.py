"""Prompt versions are tied to the prompt text: every LLM step's prompt template, rendered on
fixed placeholder inputs (one rendering per branch of the builder), is pinned by its sha256
next to its ``prompt_version``. The version is part of the LLM cache key and of every
``llm_calls`` row, so a prompt edit without a bump would silently mix old and new answers.

After a deliberate prompt change: bump the step's ``prompt_version`` and put the new version
and the hash the failure prints in ``PINNED``.
"""
from __future__ import annotations

import hashlib
import json

import pytest

from agents.rewrite import QueryRewriter
from agents.synth.answerer import Answerer
from agents.synth.humanizer import Humanizer
from agents.synth.questioner import Questioner
from agents.synth.uniqueness import UniquenessJudge
from agents.synth.verifier import Verifier

P1 = {"doc_id": "d1", "title": "<title 1>", "text": "<passage 1>"}
P2 = {"doc_id": "d2", "title": "<title 2>", "text": "<passage 2>"}
LONG_ANSWER = "<answer 1 " + "x" * 320 + ">"      # longer than the humanizer's history cut
HISTORY = [["user", "<question 1>"], ["assistant", LONG_ANSWER]]
PREV = ["<question 1>"]

# every key any evaluation-side builder reads; each builder takes what it needs
EVAL_FULL = {"question": "<question>", "history": HISTORY, "rewrite": "<rewrite>", "query": "<query>",
             "answer": "<answer>", "reference_answer": "<reference answer>", "passage": P1,
             "passages": [P1, P2], "candidates": [P1, P2], "n": 3}
EVAL_BARE = {**EVAL_FULL, "history": [], "passages": [P1]}


def _synth_steps() -> dict[str, tuple]:
    q = {"passages": [P1, P2], "history": [], "previous_questions": [], "feedback": None, "attempt": 0,
         "standalone": True, "unanswerable": False, "used_gold": []}
    return {
        "questioner": (Questioner(), [q,
                                      {**q, "history": HISTORY, "previous_questions": PREV, "standalone": False,
                                       "feedback": "<feedback>"},
                                      {**q, "history": HISTORY, "previous_questions": PREV, "unanswerable": True}]),
        "answerer": (Answerer(), [{"history": [], "question": "<question>", "passage": P1, "min_chars": 0},
                                  {"history": HISTORY, "question": "<question>", "passage": P1, "min_chars": 500}]),
        "verifier": (Verifier(), [{"question": "<question>", "standalone_question": "<standalone question>",
                                   "answer": "<answer>", "passage": P1, "previous_questions": p} for p in ([], PREV)]),
        "uniqueness": (UniquenessJudge(), [{"question": "<question>", "answer": "<answer>", "candidate": P2}]),
        "humanizer": (Humanizer(), [{"question": "<question>", "history": [], "antecedent": None},
                                    {"question": "<question>", "history": HISTORY, "antecedent": "<phrase>"}]),
        "query_rewriter": (QueryRewriter(), [{"turns": [{"role": "user", "text": "<question>"}]},
                                             {"turns": [{"role": "user", "text": "<question 1>"},
                                                        {"role": "assistant", "text": LONG_ANSWER},
                                                        {"role": "user", "text": "<question 2>"}]}]),
    }


def _eval_steps() -> dict[str, tuple]:
    from evaluation.abstention.answer_check import AnswerQuestion, JudgeAnswer
    from evaluation.abstention.detectors import AnswerabilityProbe
    from evaluation.abstention.expansions import ExpandQuery
    from evaluation.abstention.judges import JudgeContext
    from evaluation.audit.alignment import AlignmentJudge
    from evaluation.audit.base import JudgeSpec
    from evaluation.audit.distinguishability import DistinguishabilityJudge
    from evaluation.audit.faithfulness import FaithfulnessJudge
    from evaluation.audit.quality import QualityJudge
    judge = JudgeSpec(name="j", endpoint="e", model="m")
    both = [EVAL_FULL, EVAL_BARE]
    return {
        "audit_alignment": (AlignmentJudge(judge), both),
        "audit_distinguishability": (DistinguishabilityJudge(judge), both),
        "audit_faithfulness": (FaithfulnessJudge(judge), both),
        "audit_quality": (QualityJudge(judge), both),
        "abstention_probe": (AnswerabilityProbe("a", "r", False), both),
        "abstention_expand": (ExpandQuery("r"), both),
        "abstention_judge": (JudgeContext("j", "r"), both),
        "abstention_answer": (AnswerQuestion("r", False), [EVAL_FULL, {**EVAL_BARE, "passages": []}]),
        "abstention_correct": (JudgeAnswer("r", False), both),
    }


# step -> (prompt_version, sha256 of its rendered templates)
PINNED = {
    'questioner': ('questioner-v1',
                  '8c7ad38c08ea972f964899471abf9524b8de3a69f52a8998966393f8bf057c29'),
    'answerer': ('answerer-v1',
                '38ef4ba942f32cd413e3473ce76c6f0f8f0338af911fe2b67a3e5ddf7f033b1a'),
    'verifier': ('verifier-v1',
                'fef6ee57357f3c2839f342bfa0ab5111d99386f323bb65fdd4b5b6caf0381fb8'),
    'uniqueness': ('uniqueness-v1',
                  '81824a98bb0d56d8709b8ab504275a512678c39783ff047a66f58c32dfa2f733'),
    'humanizer': ('humanizer-v1',
                 'db085bf2d76bf36df8a27ce21b5e18bda81d8a97b88a3c664790bd23b4a79dd4'),
    'query_rewriter': ('query-rewriter-v1',
                      'da7f6cf58329bca08aa7c87674bd1135e93153e865e534c9e7a7e56f482d0303'),
    'audit_alignment': ('mtr-eval-alignment-v1',
                       '0848e2a3bbdb6f9351a7d02d39481325e26a7ce7b210698c2026d1cf9689b6df'),
    'audit_distinguishability': ('mtr-eval-distinguishability-v1',
                                'd5d9c01ab0cb461154097aad5a07aa9b2a046dbf2b793242f0e86d684ff1937d'),
    'audit_faithfulness': ('mtr-eval-faithfulness-v1',
                          '11d963d18fe37eca56f331c22392177e638266b9694277f462ddfcc62daf8d8c'),
    'audit_quality': ('mtr-eval-quality-v1',
                     'e0affb1239d6b551c835142300f5d8c9d0ef66a22f5382ead59e60436538ed56'),
    'abstention_probe': ('abstention-probe-v1',
                        '07a01e10b5fcc2e067ea7409380ecb72b878d3ce623d7cce51575e18f615cc2c'),
    'abstention_expand': ('abstention-expand-v1',
                         '957decf34c71665737fb5f2d23cb2a927e5cb7206d5fcefbffdecb5f05b7519b'),
    'abstention_judge': ('abstention-judge-v1',
                        '9018a16a988b7740a0f7d97324f549d3ba695eeb8f4a836d7618fd1ea9742d0b'),
    'abstention_answer': ('abstention-answer-v1',
                         'def8d57e3936af582970efbd20bfb88439a36a9c4115d08a4270099433482d11'),
    'abstention_correct': ('abstention-correct-v1',
                          '366a8ebeae1a127a736d971dab9b3f8881d8217de585964752b133057e1a40c0'),
}


def _template_hash(step, inputs: list[dict]) -> str:
    rendered = [step.messages(x) for x in inputs]
    return hashlib.sha256(json.dumps(rendered, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _check(key: str, step, inputs: list[dict]) -> None:
    version, digest = PINNED[key]
    now = _template_hash(step, inputs)
    if now != digest:
        hint = ("bump prompt_version" if step.prompt_version == version else
                f"prompt_version is bumped to {step.prompt_version!r}: pin it")
        pytest.fail(f"the prompt of {key} changed ({version!r}, sha256 {digest[:12]}... -> {now[:12]}...): {hint}, "
                    f"then set PINNED[{key!r}] = ({step.prompt_version!r}, {now!r})")
    assert step.prompt_version == version, (
        f"{key}: prompt_version {step.prompt_version!r} differs from the pinned {version!r} but the prompt text "
        f"did not change; restore {version!r}, or pin the new version if the change was meant")


@pytest.mark.parametrize("key", ["questioner", "answerer", "verifier", "uniqueness", "humanizer", "query_rewriter"])
def test_synthesis_prompt_versions_pin_the_prompt_text(key):
    step, inputs = _synth_steps()[key]
    _check(key, step, inputs)


@pytest.mark.parametrize("key", ["audit_alignment", "audit_distinguishability", "audit_faithfulness", "audit_quality",
                                 "abstention_probe", "abstention_expand", "abstention_judge", "abstention_answer",
                                 "abstention_correct"])
def test_judge_prompt_versions_pin_the_prompt_text(key):
    step, inputs = _eval_steps()[key]
    _check(key, step, inputs)


def test_an_edited_prompt_without_a_bump_fails_with_the_bump_hint():
    step, inputs = _synth_steps()["verifier"]
    original = step.build_messages
    step.build_messages = lambda x: [{**m, "content": m["content"] + " Be brief."} for m in original(x)]
    with pytest.raises(pytest.fail.Exception, match=r"the prompt of verifier changed .*: bump prompt_version"):
        _check("verifier", step, inputs)
    step.prompt_version = "verifier-v2"
    with pytest.raises(pytest.fail.Exception, match=r"prompt_version is bumped to 'verifier-v2': pin it"):
        _check("verifier", step, inputs)
