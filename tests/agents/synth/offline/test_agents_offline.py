"""The synthesis agents on the offline backend: questioner, answerer, verifier and uniqueness judge, on passages
written here (an encyclopedia article and a manual page)."""
from agents.synth import text as T
from agents.synth.answerer import Answerer
from agents.synth.humanizer import Humanizer, humanizer_guard
from agents.synth.offline.checks import also_answers, read_question
from agents.synth.offline.errors import NothingToAsk
from agents.synth.questioner import Questioner
from agents.synth.uniqueness import UniquenessJudge
from agents.synth.verifier import Verifier

P1 = {"doc_id": "p1", "title": "Berlin Wall",
      "text": "The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989. "
              "It was built by East Germany. Its fall in November 1989 was a pivotal event."}
P2 = {"doc_id": "p2", "title": "Guinea pig",
      "text": "Guinea pigs are large rodents of the genus Cavia. They originated in the Andes of South America."}
P3 = {"doc_id": "p3", "title": "",
      "text": "To create a bucket, open the console and click Create bucket. A bucket costs $0.02 per gigabyte "
              "each month. Deleting a bucket takes a few minutes."}


def _turn(x: dict):
    q = Questioner().run_offline(x)
    p = x["passages"][q.doc_index - 1]
    a = Answerer().run_offline({"question": q.question, "standalone_question": q.standalone_question,
                                "passage": p}).answer
    return q, p, a


def test_the_questioner_prefers_unused_passages_and_never_repeats():
    q, p, _ = _turn({"passages": [P1, P2], "previous_questions": [], "used_gold": ["p1"]})
    assert p["doc_id"] == "p2" and q.question.endswith("?")
    q2, _, _ = _turn({"passages": [P1, P2], "previous_questions": [q.question], "used_gold": ["p1"]})
    assert q2.question != q.question and T.jaccard_words(q2.question, q.question) < 0.6


def test_an_answer_is_the_offered_sentence_and_the_verifier_accepts_it():
    q, p, a = _turn({"passages": [P3], "previous_questions": []})
    assert all(s in p["text"] for s in T.sentences(a))
    v = Verifier().run_offline({"question": q.question, "standalone_question": q.standalone_question, "answer": a,
                                "passage": p, "previous_questions": []})
    assert v.answerable and v.faithful and v.novel, v.reason


def test_the_verifier_refuses_an_unsupported_answer_an_unrelated_passage_and_a_repeat():
    q = "How much does a bucket cost?"
    a = Answerer().run_offline({"question": q, "standalone_question": q, "passage": P3}).answer
    assert "$0.02" in a
    bad = Verifier().run_offline({"question": q, "standalone_question": q, "answer": "It is painted pink by penguins.",
                                  "passage": P3, "previous_questions": [q]})
    assert not bad.faithful and not bad.novel and "repeats" in bad.reason
    off = Verifier().run_offline({"question": q, "standalone_question": q, "answer": a, "passage": P2,
                                  "previous_questions": []})
    assert not off.answerable


def test_the_uniqueness_judge_finds_a_passage_that_offers_the_same_answer():
    q = "How much does a bucket cost?"
    assert read_question(q) == "cost"
    a = Answerer().run_offline({"question": q, "standalone_question": q, "passage": P3}).answer
    dup = {"doc_id": "d", "text": "Pricing overview. " + P3["text"]}
    assert UniquenessJudge().run_offline({"question": q, "answer": a, "candidate": dup}).answers
    assert not UniquenessJudge().run_offline({"question": q, "answer": a, "candidate": P2}).answers
    # an unanswerable question: any passage that offers the intent about the concept answers it
    assert also_answers("How much does a bucket cost?", "", P3["text"])[0]
    assert not also_answers("How long do guinea pigs last?", "", P2["text"])[0]


def test_an_unanswerable_question_asks_what_no_shown_passage_offers():
    u = Questioner().run_offline({"passages": [P3], "unanswerable": True})
    assert u.doc_index == 0 and u.question.endswith("?")
    assert not also_answers(u.standalone_question, "", P3["text"])[0]


def test_offline_humanizer_and_guards():
    h = Humanizer().run_offline({"question": "What was its purpose?", "history": [["user", "x"]],
                                 "antecedent": "Berlin Wall"})
    assert h.text == "What was its purpose?"
    assert humanizer_guard("What is X?", "sure, x?") == ("What is X?", "contains a banned phrase")
    assert humanizer_guard("What is X?", "what is x and y and z and more?")[1] == "longer than 1.3x the original"
    assert humanizer_guard("What is X?", "x?") == ("What is X?", "too short")
    assert humanizer_guard("What is X?", "whats x?") == ("whats x?", None)


def test_an_unanswerable_question_about_a_named_place_does_not_price_or_time_it():
    """A river is described, located or dated, not priced or timed, even when no passage answers: while an intent a
    place can have is left, the unanswerable turn about "the Nile" asks one of those (here: examples or purpose,
    not cost, limit or duration)."""
    nile = {"doc_id": "n", "title": "", "text": "The Nile is a major river in Africa. It flows north into the "
                                                "Mediterranean Sea. Egypt depends on the Nile for water."}
    asked = set()
    for attempt in range(6):
        try:
            asked.add(Questioner().run_offline({"passages": [nile], "unanswerable": True,
                                                "attempt": attempt}).standalone_question)
        except NothingToAsk:    # every intent a place can have is offered
            pass
    assert not any(w in q.lower() for q in asked for w in ("cost", "how long", "limit")), asked


def test_an_unanswerable_question_asks_first_what_such_pages_answer():
    """The unanswerable turn asks first an intent the shown passages offer about another concept: beside a page of
    advice on files, advice on the archive tier (which no page gives), not its price; beside a pricing page, a price
    may be asked."""
    archive = {"doc_id": "a", "title": "", "text": "The archive tier keeps objects for years. You should compress "
                                                   "files before you upload them."}
    pricing = {"doc_id": "b", "title": "", "text": "A bucket costs $0.02 per gigabyte each month."}
    asked = {"advice": set(), "pricing": set()}
    for attempt in range(8):
        for key, shown in (("advice", [archive]), ("pricing", [archive, pricing])):
            try:
                asked[key].add(Questioner().run_offline({"passages": shown, "unanswerable": True,
                                                         "attempt": attempt}).standalone_question)
            except NothingToAsk:
                pass
    assert asked["advice"] and not any("cost" in q for q in asked["advice"]), asked
    assert any("cost" in q for q in asked["pricing"]), asked
