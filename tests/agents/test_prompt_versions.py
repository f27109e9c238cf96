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
                                  {"history": HISTORY, "question": "<question>", "passage": P1, "min_chars": 500},
                                  {"history": [], "question": "<question>", "passage": P1, "also": [P2],
                                   "min_chars": 0}]),
        "verifier": (Verifier(), [{"question": "<question>", "standalone_question": "<standalone question>",
                                   "answer": "<answer>", "passage": P1, "previous_questions": p} for p in ([], PREV)]
                     + [{"question": "<question>", "standalone_question": "<standalone question>",
                         "answer": "<answer>", "passage": P1, "also": [P2], "previous_questions": PREV}]),
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
    'questioner': ('questioner-v3',
                  '529a668b33aa021dbe308a785c98eab54c4f719759cc54fe7b8667715dd690e6'),
    'answerer': ('answerer-v3',
                '3faaa97ee95c5a20831e71eaac6f8e0a9ff44eabafb49c113e55fec7665bb15f'),
    'verifier': ('verifier-v3',
                '27d4a2bdfb15128a93f40d26bbf881d47f30368b41b422ab11e2a6146e242738'),
    'uniqueness': ('uniqueness-v2',
                  '2eb3b43b9f13d8b61cae7af9c93dcdba8629cc3846270e47f9f0613adaade357'),
    'humanizer': ('humanizer-v2',
                 'b55347434f74fafa934762455a042855b42d558f88928486cd656aa7dd26bdd0'),
    'query_rewriter': ('query-rewriter-v2',
                      '447ef42fe9241c9bc82f847e13581d6736e404d33e8191c467a9fcf2b6231c83'),
    'audit_alignment': ('mtr-eval-alignment-v2',
                       'e1198862348fbd79738fd4a90de1e68e651e0fca3822c16055f1006697c457b9'),
    'audit_distinguishability': ('mtr-eval-distinguishability-v2',
                                '69370035d7a3fac32c99f365c0f2859b64f1352317f038440629f5c15fae6a0f'),
    'audit_faithfulness': ('mtr-eval-faithfulness-v2',
                          '4e652d4fb87a3af282993bd724c2ad0db22695df3abfc05cf3177b4e2e4fb3bc'),
    'audit_quality': ('mtr-eval-quality-v2',
                     '8244b817b568ca2083032123631850aafed3824272d93b83dbf6e16d5d12830d'),
    'abstention_probe': ('abstention-probe-v2',
                        '9d3aad0f8e8ebd786d28454ed3f33919343e35fb47f41fb83db8c7a8a28bc396'),
    'abstention_expand': ('abstention-expand-v2',
                         'f929adf2a44b4215281ada46ac4f8bf22d19ecc93adb2900e9465adac132ee90'),
    'abstention_judge': ('abstention-judge-v2',
                        '3126d6ed40035e0089884126facda2f2a2e04c4cd4b22b6a7eda2641f6fc8895'),
    'abstention_answer': ('abstention-answer-v2',
                         '1da74c5912aa8711ae42fba7a03b16968e621235dc212b17e50251d54995fa35'),
    'abstention_correct': ('abstention-correct-v2',
                          '9acaccea0b8f2a878afe5f6aa8e1b6b6164a606998bd932d62f2dcb7ec5cb4e4'),
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
    step.prompt_version = "verifier-v4"
    with pytest.raises(pytest.fail.Exception, match=r"prompt_version is bumped to 'verifier-v4': pin it"):
        _check("verifier", step, inputs)
