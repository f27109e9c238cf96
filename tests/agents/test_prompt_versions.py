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
    'questioner': ('questioner-v4',
                  'cf8cadd7d2db0018dc93410dc0d9c7c51ad0ee7afacc48f8eca39759868e78ed'),
    'answerer': ('answerer-v4',
                'a85ff0c3e2322c024b2d06ba463a92f2aec49e911e549d3b78a9bf22e29b5c1c'),
    'verifier': ('verifier-v4',
                '9a93164a210fd76223d1c2c1c33c8d55dfeeeaefa957facaf28b5bd1e5227120'),
    'uniqueness': ('uniqueness-v3',
                  '04c952c31e6a43221280920eccefd43658e9c42be268be73e9d3d4c323623ad8'),
    'humanizer': ('humanizer-v3',
                 'dad8443101cc2b5cd6d405512c560d234bd85f32fa87edc50541b4c98b25a2d5'),
    'query_rewriter': ('query-rewriter-v3',
                      'e3ce30de38cf68c99dbd263abccc7df81a864bbc08c8c1dd0fb654d518d025f2'),
    'audit_alignment': ('mtr-eval-alignment-v3',
                       'dc6a410713690be326590e6e441ee8019826621c00f3148f8500622dd2488711'),
    'audit_distinguishability': ('mtr-eval-distinguishability-v3',
                                '9e4f6af1a5cc2b4e8edc4d9a5382b2bd8b2f67cf6ac5c4b4472e55f8c391c959'),
    'audit_faithfulness': ('mtr-eval-faithfulness-v3',
                          '3e41702ddb44425457536bca5673bace8f4a42d61974fbfd387be88ae8f8e79c'),
    'audit_quality': ('mtr-eval-quality-v3',
                     '1c01cdf93a56dd9311f608d2ca880f7c61438a6fc757812765818d30b241bf77'),
    'abstention_probe': ('abstention-probe-v3',
                        'af37e69d90d9468015d4b54b5f71d24dd03ae8bf14d56cb168ce88f44893a40f'),
    'abstention_expand': ('abstention-expand-v3',
                         '77d3f979fc460795bba890a86c15e15899bd0d047353763d83749115cfe1676b'),
    'abstention_judge': ('abstention-judge-v3',
                        '7e5ef9be9e20d5b4a604cf59452f5d23934338c2d7df3677cb710b35bcfab404'),
    'abstention_answer': ('abstention-answer-v3',
                         'd8cb00bcb349c00b58e82ee0032e4823f0953ef5e5383da39a0f03862e62725c'),
    'abstention_correct': ('abstention-correct-v3',
                          '6812a238dd93b1040e31efaf5a0cce3b08df7611ea55837755d6ce8292a2e3d3'),
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
    step.prompt_version = "verifier-v5"
    with pytest.raises(pytest.fail.Exception, match=r"prompt_version is bumped to 'verifier-v5': pin it"):
        _check("verifier", step, inputs)
