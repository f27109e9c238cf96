"""The synthesis agents' graph-side rules (one module per agent) and the role-scripted fake
server's role selection by response schema name."""
from __future__ import annotations

import json

import pytest

from agents.synth.config import SynthConfig
from agents.synth.humanizer import inputs as humanizer_inputs
from agents.synth.questioner import QuestionOut, candidate
from agents.synth.uniqueness import AlsoAnswersOut, UniquenessJudge, decide
from agents.synth.verifier import VerdictOut, review
from agents.testing.fake_roles import RoleScriptedServer, role_of


# -- questioner: doc_index names the gold passage ----------------------------------------------
def test_questioner_candidate_takes_the_named_passage_as_gold():
    out = QuestionOut(doc_index=2, question=" Who built it? ", standalone_question="   ")
    assert candidate(out, ["a", "b"], unanswerable=False) == {
        "cand": {"question": "Who built it?", "standalone_question": "Who built it?", "gold": "b",
                 "unanswerable": False}}


def test_questioner_candidate_rejects_a_doc_index_outside_the_shown_passages():
    for idx in (0, 3):
        out = QuestionOut(doc_index=idx, question="Who built it?", standalone_question="Who built the wall?")
        assert candidate(out, ["a", "b"], unanswerable=False) == {
            "cand": None, "feedback": f"doc_index {idx} is not one of the shown passages"}
    out = QuestionOut(doc_index=0, question="Who will win?", standalone_question="Who will win in 2090?")
    assert candidate(out, ["a", "b"], unanswerable=True)["cand"]["gold"] is None


# -- verifier: all three checks or back to the questioner ---------------------------------------
def test_verifier_review():
    assert review(VerdictOut(reason="fine", answerable=True, faithful=True, novel=True)) == {"feedback": None}
    assert review(VerdictOut(reason="repeats turn 1", answerable=True, faithful=True, novel=False)) == {
        "cand": None, "feedback": "verifier: repeats turn 1"}


# -- uniqueness policy ------------------------------------------------------------------------------
YES = [{"doc_id": f"x{i}", "reason": "r"} for i in range(3)]


@pytest.mark.parametrize("policy,unans,n_yes,failed,judged,expected", [
    ("add_positives", False, 2, 0, 5, {"extra": YES[:2]}),                       # <= M=2: extra positives
    ("add_positives", False, 3, 1, 5, {"cand": None, "feedback": "uniqueness: 3 other passages also answer; the "
                                       "question is too ambiguous, ask something specific to one passage"}),
    ("regenerate", False, 1, 0, 5, {"cand": None, "feedback": "uniqueness: 1 other passages also answer; the "
                                    "question is too ambiguous, ask something specific to one passage"}),
    ("regenerate", False, 0, 4, 5, {"extra": []}),
    ("add_positives", True, 1, 0, 5, {"cand": None, "feedback": "uniqueness: 1 passages answer this question, so "
                                      "it is not unanswerable"}),
    ("add_positives", True, 0, 0, 5, {"extra": []}),
    ("add_positives", False, 0, 5, 5, {"turn_error": {"step": "uniqueness", "kind": "all_failed",
                                                      "message": "all 5 uniqueness judgements failed",
                                                      "raw_output": None}}),
])
def test_uniqueness_policy(policy, unans, n_yes, failed, judged, expected):
    cfg = SynthConfig(uniqueness_policy=policy, max_extra_positives=2)
    assert decide(cfg, unans, YES[:n_yes], failed, judged) == expected


# -- humanizer: no history (and no antecedent) right after a topic switch ----------------------------
def _state(turn: int, switch_turn: int | None) -> dict:
    done = [{"turn": 1, "status": "ok", "question": "what was the berlin wall", "answer": "A barrier.",
             "question_original": "What was the Berlin Wall?"},
            {"turn": 2, "status": "failed", "question": None, "answer": None, "question_original": None}]
    return {"turn": turn, "switch_turn": switch_turn, "turns": done, "cand": {"question": "Who built it?"}}


def test_humanizer_inputs_history_and_antecedent():
    assert humanizer_inputs(_state(3, None)) == {
        "question": "Who built it?", "antecedent": "Berlin Wall",
        "history": [["user", "what was the berlin wall"], ["assistant", "A barrier."]]}
    assert humanizer_inputs(_state(3, 3)) == {"question": "Who built it?", "history": [], "antecedent": None}


# -- the role server picks the role by the response schema name ---------------------------------------
def _body(system: str, user: str, schema_model=None, text_mode: bool = False) -> dict:
    body = {"model": "fake-model", "messages": [{"role": "system", "content": system},
                                                {"role": "user", "content": user}]}
    if schema_model is not None and text_mode:     # as the client does for a server without structured outputs
        body["messages"][1]["content"] += ("\n\nReply with only a JSON object that matches this JSON schema:\n"
                                           + json.dumps(schema_model.model_json_schema()))
    elif schema_model is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": schema_model.__name__, "schema": schema_model.model_json_schema(), "strict": False}}
    return body


def _content(srv: RoleScriptedServer, body: dict) -> dict:
    status, _, payload = srv.handle(body, {})
    assert status == 200
    return json.loads(payload["choices"][0]["message"]["content"])


def test_role_server_answers_by_schema_name_not_prompt_wording():
    srv = RoleScriptedServer()
    srv.verifier_accepts = False
    questioner_wording = "You write questions for a conversational search benchmark."
    # the verifier's schema wins over a questioner system prompt
    body = _body(questioner_wording, "Passage:\nSome text.", VerdictOut)
    assert role_of(body, "") == "verifier"
    assert _content(srv, body) == {"reason": "not supported by the passage", "answerable": False,
                                   "faithful": False, "novel": True}
    # text mode: the title of the schema embedded in the prompt
    body = _body("Be terse.", "Question: q", AlsoAnswersOut, text_mode=True)
    assert role_of(body, "\n".join(m["content"] for m in body["messages"])) == UniquenessJudge.name
    assert _content(srv, body) == {"reason": "scripted", "answers": False}


def test_role_server_falls_back_to_the_system_prompt_without_a_schema():
    srv = RoleScriptedServer()
    body = _body("You rewrite questions the way real users type them.",
                 "Conversation so far:\n(no earlier turns)\n\n"
                 "Last user question: <question>What is said about Berlin?</question>\n")
    assert _content(srv, body) == {"text": "whats up with berlin?"}
    # neither a known schema nor a known wording: the plain fake server's answer
    status, _, payload = srv.handle(_body("Hello.", "hi"), {})
    assert status == 200 and payload["choices"][0]["message"]["content"].startswith("fake answer")
