from agents.synth import text as T
from agents.synth.answerer import Answerer
from agents.synth.humanizer import Humanizer, humanizer_guard
from agents.synth.questioner import Questioner
from agents.synth.uniqueness import UniquenessJudge
from agents.synth.verifier import Verifier

P1 = {"doc_id": "p1", "title": "Berlin Wall",
      "text": "The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989. "
              "It was built by East Germany. Its fall in November 1989 was a pivotal event."}
P2 = {"doc_id": "p2", "title": "Guinea pig",
      "text": "Guinea pigs are large rodents of the genus Cavia. They originated in the Andes of South America."}


def test_question_rules():
    assert T.question_from_sentence("The Berlin Wall was a guarded concrete barrier.", "Berlin Wall")[0] == \
        "What was the Berlin Wall?"
    assert T.question_from_sentence("In 1961, East Germany began building the wall overnight.", "")[0] == \
        "What happened in 1961 regarding East Germany?"
    assert T.sentences("# Title\n\nOne sentence here. Two follows.") == ["One sentence here.", "Two follows."]


def test_offline_questioner_prefers_unused_passages_and_avoids_repeats():
    no_yesno = {"yesno": 0.0}           # the ranking of wh-questions (yes/no ones are drawn with their share)
    q = Questioner().run_offline({"passages": [P1, P2], "previous_questions": [], "used_gold": ["p1"],
                                  "discourse": no_yesno})
    # the unused passage's place question ("They originated in the Andes ..." with "They" resolved)
    assert (q.doc_index, q.question) == (2, "Where did Guinea pigs originate?")
    q2 = Questioner().run_offline({"passages": [P1, P2], "previous_questions": [q.question], "used_gold": ["p1"],
                                   "discourse": no_yesno})
    assert (q2.doc_index, q2.question) == (1, "Who built the Berlin Wall?")
    # unanswerable: the same clause asked for a slot the passage does not fill (no reason is given)
    u = Questioner().run_offline({"passages": [P1], "unanswerable": True})
    assert (u.doc_index, u.question) == (0, "Why was the Berlin Wall built?")


def test_offline_answer_is_extractive_and_verifier_checks():
    a = Answerer().run_offline({"question": "What was the Berlin Wall?", "passage": P1}).answer
    # the answer span first, then its sentence and the next one from the passage
    assert T.sentences(a)[0] == "A guarded concrete barrier."
    assert all(s in P1["text"] for s in T.sentences(a)[1:]) and len(T.sentences(a)) == 3
    v = Verifier().run_offline({"question": "What was the Berlin Wall?", "standalone_question": "What was the Berlin Wall?",
                                "answer": a, "passage": P1, "previous_questions": []})
    assert v.answerable and v.faithful and v.novel
    bad = Verifier().run_offline({"question": "What was the Berlin Wall?", "standalone_question": "What was the Berlin Wall?",
                                  "answer": "It was painted pink by penguins.", "passage": P1,
                                  "previous_questions": ["What was the Berlin Wall?"]})
    assert not bad.faithful and not bad.novel and "repeats" in bad.reason
    off = Verifier().run_offline({"question": "Where do guinea pigs come from?",
                                  "standalone_question": "Where do guinea pigs come from originally?",
                                  "answer": a, "passage": P1, "previous_questions": []})
    assert not off.answerable


def test_offline_uniqueness_judge():
    ans = Answerer().run_offline({"question": "What was the Berlin Wall?", "passage": P1}).answer
    dup = {"doc_id": "d", "text": "Intro. " + P1["text"]}
    assert UniquenessJudge().run_offline({"question": "What was the Berlin Wall?", "answer": ans, "candidate": dup}).answers
    assert not UniquenessJudge().run_offline({"question": "What was the Berlin Wall?", "answer": ans,
                                              "candidate": P2}).answers


def test_offline_humanizer_and_guards():
    # offline follow-ups are already phrased by the questioner's discourse rules; the text is kept
    h = Humanizer().run_offline({"question": "What was its purpose?", "history": [["user", "x"]],
                                 "antecedent": "Berlin Wall"})
    assert h.text == "What was its purpose?"
    assert humanizer_guard("What is X?", "sure, x?") == ("What is X?", "contains a banned phrase")
    assert humanizer_guard("What is X?", "what is x and y and z and more?")[1] == "longer than 1.3x the original"
    assert humanizer_guard("What is X?", "x?") == ("What is X?", "too short")
    assert humanizer_guard("What is X?", "whats x?") == ("whats x?", None)
