"""Offline answerer, verifier and uniqueness judge: typed answer spans, the verifier's type,
constraint and fit checks (the Guinea-Pigs case), span matching for extra positives, and the
novelty check of unanswerable turns."""
import asyncio

from agents.synth import verifier
from agents.synth.answerer import Answerer
from agents.synth.config import SynthConfig
from agents.synth.state import GraphContext
from agents.synth.uniqueness import UniquenessJudge
from agents.synth.verifier import Verifier

WALL = {"doc_id": "w", "title": "Berlin Wall",
        "text": "The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989. "
                "It was built by East Germany in 1961. About 5,000 people escaped over the wall."}
PIGS = {"doc_id": "g", "title": "The Guinea Pigs",
        "text": "The Guinea Pigs is a novel by the Czech writer Ludvík Vaculík, published in 1970. "
                "In 1933, the publisher Melantrich released a collection of essays about rural life by another author."}


def _verify(q, answer, passage, prev=(), standalone=None):
    return Verifier().run_offline({"question": q, "standalone_question": standalone or q, "answer": answer,
                                   "passage": passage, "previous_questions": list(prev)})


def test_answer_is_the_span_then_its_context():
    a = Answerer().run_offline({"question": "When was it built?", "standalone_question":
                                "When was the Berlin Wall built by East Germany?", "passage": WALL}).answer
    assert a == "1961. It was built by East Germany in 1961. About 5,000 people escaped over the wall."
    v = _verify("When was it built?", a, WALL, standalone="When was the Berlin Wall built by East Germany?")
    assert v.answerable and v.faithful and v.novel, v.reason


SKILLS = {"doc_id": "s", "title": "",
          "text": "Renaming a skill\n\nYou can change the name of a skill after you create it. To rename a skill, "
                  "follow these steps:\n\n1. Open the skill.\n2. Click the name and type a new one.\n3. Click Save."
                  "\n\nDeleting a skill\n\nDeleted skills cannot be restored by support."}


def test_an_answer_brings_the_list_its_sentence_announces_and_no_heading_after_it():
    from agents.synth.offline.answering import supporting_context
    a = Answerer().run_offline({"question": "How do I rename a skill?", "standalone_question":
                                "How do I rename a skill?", "passage": SKILLS}).answer
    assert a == ("You can change the name of a skill after you create it. To rename a skill, follow these steps: "
                 "Open the skill. Click the name and type a new one. Click Save."), a     # not ending at the colon
    v = _verify("How do I rename a skill?", a, SKILLS)
    assert v.answerable and v.faithful, v.reason
    sents = ["Click Save.", "Deleting a skill", "Deleted skills cannot be restored."]
    assert supporting_context(sents, 0) == "Click Save."       # the next section's heading is no part of it
    assert supporting_context(["A b c.", "D e f.", "G h i."], 0) == "A b c. D e f."


def test_verifier_rejects_an_answer_of_the_wrong_type():
    a = "East Germany. It was built by East Germany in 1961."
    v = _verify("When was the Berlin Wall built?", a, WALL)
    assert not v.answerable and "not a when answer" in v.reason


def test_verifier_rejects_the_guinea_pigs_case():
    # the old offline pipeline answered this 1970 question with the 1933 sentence about another book
    q = "What happened in 1970 regarding The Guinea Pigs?"
    a = ("In 1933, the publisher Melantrich released a collection of essays about rural life by another author.")
    v = _verify(q, a, PIGS)
    assert not v.answerable and "1970" in v.reason


def test_verifier_rejects_a_span_that_is_not_in_the_passage_and_repeats():
    v = _verify("Who built the Berlin Wall?", "The Soviet Union. It was built by East Germany in 1961.", WALL,
                prev=["Who built the Berlin Wall?"])
    assert not v.answerable and not v.novel and "not in the passage" in v.reason


def test_uniqueness_finds_the_same_answer_in_a_planted_paraphrase():
    ans = "1961. It was built by East Germany in 1961."
    para = {"doc_id": "p", "text": "Construction of the Berlin Wall was started by East Germany in 1961, "
                                   "sealing off West Berlin."}
    other_year = {"doc_id": "o", "text": "The Berlin Wall was opened in 1989 after weeks of civil unrest."}
    off_topic = {"doc_id": "x", "text": "In 1961 the first man flew into space aboard Vostok 1."}
    judge = UniquenessJudge()
    q = "When was the Berlin Wall built by East Germany?"
    assert judge.run_offline({"question": q, "answer": ans, "candidate": para}).answers
    assert not judge.run_offline({"question": q, "answer": ans, "candidate": other_year}).answers
    assert not judge.run_offline({"question": q, "answer": ans, "candidate": off_topic}).answers


def test_uniqueness_for_an_unanswerable_question_needs_a_typed_answer():
    judge = UniquenessJudge()
    q = "Where was the Berlin Wall built by East Germany?"
    assert not judge.run_offline({"question": q, "answer": "", "candidate": WALL}).answers
    assert judge.run_offline({"question": q, "answer": "", "candidate": {
        "doc_id": "z", "text": "The Berlin Wall was built by East Germany along the border with West Germany."}}).answers


def test_a_repeated_unanswerable_question_is_rejected_by_the_novelty_check():
    ctx = GraphContext(corpus={}, llm=None, search=lambda q, k: [], cfg=SynthConfig())
    prev = {"turn": 2, "status": "ok", "question_original": "Why was the Berlin Wall built?"}
    state = {"conv_id": "c", "turn": 3, "turns": [prev], "cand": {
        "question": "Why was the Berlin Wall built?", "standalone_question": "Why was the Berlin Wall built?",
        "gold": None, "unanswerable": True}}
    upd = asyncio.run(verifier.node(ctx, state))
    assert upd["cand"] is None and "repeats" in upd["feedback"]
    fresh = {**state, "cand": {**state["cand"], "question": "How many guards did the wall have?",
                               "standalone_question": "How many guards did the Berlin Wall have?"}}
    assert asyncio.run(verifier.node(ctx, fresh)) == {"feedback": None}


DB = {"doc_id": "c", "title": "",
      "text": "IBM Cloudant is a database service. IBM Cloudant replicates data across zones. "
              "The dashboard does not support bulk deletes."}


def test_yes_no_question_from_a_clause_with_its_polarity():
    from agents.synth.offline.qgen import passage_questions
    yn = {q.question: q.answer for q in passage_questions(DB["text"], "") if q.qtype == "yesno"}
    assert yn["Does IBM Cloudant replicate data across zones?"] == "Yes"
    assert yn["Does the dashboard support bulk deletes?"] == "No"       # asked without its negation
    assert yn["Is IBM Cloudant a database service?"] == "Yes"


def test_verifier_checks_a_yes_no_answer_against_its_supporting_sentence():
    q = "Does it replicate data across zones?"
    sq = "Does IBM Cloudant replicate data across zones?"
    a = Answerer().run_offline({"question": q, "standalone_question": sq, "passage": DB}).answer
    assert a.startswith("Yes. IBM Cloudant replicates data across zones.")
    assert _verify(q, a, DB, standalone=sq).answerable
    v = _verify(sq, "No. IBM Cloudant replicates data across zones.", DB)        # the wrong polarity
    assert not v.answerable and "does not state" in v.reason
    v = _verify(sq, "Yes. IBM Cloudant is a database service.", DB)              # another clause
    assert not v.answerable
    no = Answerer().run_offline({"question": "Does the dashboard support bulk deletes?", "passage": DB}).answer
    assert no.startswith("No. The dashboard does not support bulk deletes.")
    assert _verify("Does the dashboard support bulk deletes?", no, DB).answerable


def test_uniqueness_of_a_yes_no_answer_needs_the_clause_with_the_same_polarity():
    judge = UniquenessJudge()
    q, ans = "Does IBM Cloudant replicate data across zones?", "Yes. IBM Cloudant replicates data across zones."
    same = {"doc_id": "s", "text": "Replication: IBM Cloudant replicates data across zones for durability."}
    opposite = {"doc_id": "o", "text": "IBM Cloudant Lite does not replicate data across zones."}
    other = {"doc_id": "x", "text": "IBM Cloudant stores JSON data in databases."}
    assert judge.run_offline({"question": q, "answer": ans, "candidate": same}).answers
    assert not judge.run_offline({"question": q, "answer": ans, "candidate": opposite}).answers
    assert not judge.run_offline({"question": q, "answer": ans, "candidate": other}).answers


def test_a_definition_question_needs_an_answer_that_defines_it():
    from agents.synth.offline.answering import answer, check
    q = "What is Red Hat OpenShift?"
    passing = {"text": "For more information about how to set up IBM Blockchain in Red Hat OpenShift on IBM Cloud, "
                       "see the tutorial. You can deploy apps."}
    defining = {"text": "Red Hat OpenShift on IBM Cloud is a managed offering to create your own cluster. It runs apps."}
    bad = check({"question": q, "answer": answer(q, q, passing), "passage": passing})
    assert not bad["type_ok"] and any("does not define" in r for r in bad["reasons"])
    good = check({"question": q, "answer": answer(q, q, defining), "passage": defining})
    assert good["type_ok"] and good["reasons"] == []


def test_a_span_ending_in_a_comma_loses_it():
    passage = {"doc_id": "s", "title": "Secrets", "text": "Rotate your secrets regularly, for example every 90 days, "
                                                          "to meet best practices around secrets management."}
    q = "How do I meet best practices around secrets management?"
    a = Answerer().run_offline({"question": q, "standalone_question": q, "passage": passage}).answer
    assert a.startswith("Rotate your secrets regularly, for example every 90 days. "), a    # not "days,."


def test_an_answer_from_a_flattened_infobox_is_rejected():
    # "What is the Western Roman Empire?" was answered with the page's infobox run into one "sentence"
    # ("Roman Empire Senatus Populusque Romanus ... Capital Mediolanum ... Government Autocracy ...")
    import gzip
    import json
    from pathlib import Path

    from agents.synth.offline.answering import answer, check
    path = Path(__file__).resolve().parents[1] / "data" / "mtrag" / "corpus" / "clapnq.jsonl.gz"
    with gzip.open(path, "rt") as f:
        box = next(d for d in map(json.loads, f) if d["doc_id"] == "843291759_172-2582-0-2410")
    q = "What is the Western Roman Empire?"
    bad = check({"question": q, "answer": answer(q, q, {"text": box["text"]}), "passage": {"text": box["text"]}})
    assert not bad["supported"] and any("infobox" in r for r in bad["reasons"]), bad
    prose = {"text": "The Western Roman Empire is the western division of the Roman Empire after 395. Its capital "
                     "moved to Ravenna in 402."}
    good = check({"question": q, "answer": answer(q, q, prose), "passage": prose})
    assert good["supported"] and good["reasons"] == [], good


JWT_SECTION = ("Generating a JWT\n"
               "To use web chat security, you must configure the web chat on your website to send a JSON Web Token (JWT) "
               "with each message to the assistant. The JWT is used to verify the origin of messages sent from your "
               "website.\n"
               "Do not hardcode a JWT in your website code.\n"
               "On your server, implement a function that generates and returns a JSON Web Token (JWT) that is signed "
               "with your private key. You will use this token to verify the origin of messages.")


def test_a_task_heading_is_answered_by_the_sentence_that_says_how():
    # c00050's "How do I generate it?" (rewrite "How do I generate a JWT?") was answered with the section's first
    # sentence, which says what the JWT is for
    from agents.synth.offline.qgen import passage_questions
    qa = {q.question: q for q in passage_questions(JWT_SECTION, "")}["How do I generate a JWT?"]
    assert qa.answer.startswith("On your server, implement a function that generates"), qa.answer
    # a section that opens with what the reader can do keeps its first sentence
    text = "Downloading a skill\nYou can export a dialog skill in JSON format. Implement the download in your app."
    got = {q.question: q.answer for q in passage_questions(text, "")}
    assert got["How do I download a skill?"] == "You can export a dialog skill in JSON format."


def test_the_verifier_rejects_a_how_do_i_answer_that_says_no_way_to_do_it():
    from agents.synth.offline.answering import check
    q = "How do I generate a JWT?"
    passage = {"text": JWT_SECTION}
    what_for = "The JWT is used to verify the origin of messages sent from your website."
    bad = check({"question": q, "answer": what_for, "passage": passage})
    assert not bad["type_ok"] and any("does not say how to generate" in r for r in bad["reasons"]), bad["reasons"]
    how = ("On your server, implement a function that generates and returns a JSON Web Token (JWT) that is signed with "
           "your private key. You will use this token to verify the origin of messages.")
    good = check({"question": q, "answer": how, "passage": passage})
    assert good["type_ok"] and good["reasons"] == [], good["reasons"]


def test_a_quotation_does_not_define_its_subject():
    # "What is the Carolina Panthers?" was answered with a governor's words about the team (and a passive: "The
    # Panthers are supported ...")
    from agents.synth.offline.answering import answer, check
    text = ('The Panthers are supported in both North Carolina and South Carolina; the Governor declared July 30, 2012, '
            '"Carolina Panthers Day" in her state, saying that "when it comes to professional teams, the Carolina '
            'Panthers are the team that South Carolina calls their own". The team plays in Charlotte.')
    q = "What is the Carolina Panthers?"
    bad = check({"question": q, "answer": text, "passage": {"text": text}})
    assert any("does not define" in r for r in bad["reasons"]), bad["reasons"]
    defining = {"text": "The Carolina Panthers are a professional American football team based in Charlotte. They "
                        "play in the NFL."}
    good = check({"question": q, "answer": answer(q, q, defining), "passage": defining})
    assert not any("does not define" in r for r in good["reasons"]), good["reasons"]
