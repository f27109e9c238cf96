"""Comparison questions across two passages: generation, the follow-up form, the two-passage
answer, the verifier's part-by-part check, and two gold passages through the graph into qrels."""
import asyncio

from agents.config import LLMConfig
from agents.session import LLMSession
from agents.synth.config import SynthConfig
from agents.synth.graph import GraphContext, build_graph
from agents.synth.offline import compare
from agents.synth.offline.answering import check_compare, compare_answer
from agents.synth.offline.qgen import QA, well_formed
from agents.synth.questioner import QuestionOut, candidate
from agents.synth.run import ConvPlan, assemble
from agents.synth.verifier import Verifier
from storage.store import RunStore

SNAKE = {"doc_id": "snake", "title": "Snake River",
         "text": "The Snake River is a major river of the greater Pacific Northwest region in the United States. "
                 "It rises in western Wyoming and flows through Idaho."}
COLUMBIA = {"doc_id": "columbia", "title": "Columbia River",
            "text": "The Columbia River is the largest river in the Pacific Northwest region of North America. "
                    "It rises in the Rocky Mountains of British Columbia, Canada."}
BOISE = {"doc_id": "boise", "title": "Boise",
         "text": "Boise is the capital of Idaho. About 235,000 people lived there in 2020."}
PASSAGES = [SNAKE, COLUMBIA, BOISE]


def test_two_comparable_definitions_give_a_well_formed_comparison_in_both_orders():
    got = {(PASSAGES[i]["doc_id"], PASSAGES[j]["doc_id"], qa.question) for i, j, qa in compare.candidates(PASSAGES)}
    assert got == {("snake", "columbia", "What is the difference between the Snake River and the Columbia River?"),
                   ("columbia", "snake", "What is the difference between the Columbia River and the Snake River?")}
    assert all(well_formed(q) is None for *_, q in got)


def test_not_comparable_same_thing_contained_or_unrelated():
    river = QA(question="What is the Snake River?", qtype="define", answer="a major river",
               sentence="The Snake River is a major river.", topic="the Snake River")
    same = QA(question="What is the Snake River?", qtype="define", answer="a long river",
              sentence="The Snake River is a long river.", topic="Snake River")
    part = QA(question="What is the Snake River Plain?", qtype="define", answer="a plain",
              sentence="The Snake River Plain is a plain.", topic="the Snake River Plain")
    tax = QA(question="What is a value added tax?", qtype="define", answer="a consumption tax",
             sentence="A value added tax is a consumption tax levied on goods.", topic="a value added tax")
    assert not compare.comparable(river, same)
    assert not compare.comparable(river, part)
    assert not compare.comparable(river, tax)
    # one definition names the other thing: two names of one war (defined differently enough for MiniLM)
    ww2 = QA(question="What was World War II?", qtype="define", answer="a global war",
             sentence="World War II, also known as the Second World War, was a global war that lasted from 1939 to 1945.",
             topic="World War II")
    second = QA(question="What was the Second World War?", qtype="define", answer="a global military conflict",
                sentence="The Second World War was a global military conflict that took place in 1939-1945.",
                topic="The Second World War")
    assert compare._same_thing(ww2, second) and not compare.comparable(ww2, second)
    # ... and no pair of two passages whose opening names the other thing, whatever definitions they give
    ps = [{"doc_id": "a", "title": "World War II", "text": "World War II, also known as the Second World War, was a "
           "global war that lasted from 1939 to 1945. World War II was the deadliest conflict in human history."},
          {"doc_id": "b", "title": "Modern history", "text": "The Second World War was a global military conflict "
           "that took place in 1939-1945. It was the largest and deadliest war in history."}]
    assert compare.candidates(ps) == []
    # people are not compared by definition
    assert compare.definitions({"doc_id": "p", "title": "",
                                "text": "Barack Obama is an American politician who served as president."}) == []


def test_a_follow_up_about_the_focus_leans_on_the_history():
    from agents.synth.offline.questioning import THREAD_LOOKS, ask
    seg = [{"question": "What is the Snake River?", "standalone_question": "What is the Snake River?",
            "answer": "A major river. The Snake River is a major river of the greater Pacific Northwest region.",
            "title": "Snake River", "gold_text": SNAKE["text"]}]
    doc, asked, standalone, others = ask({"passages": PASSAGES, "segment": seg, "used_gold": ["snake"],
                                          "previous_standalone": ["What is the Snake River?"],
                                          "previous_questions": ["What is the Snake River?"],
                                          "discourse": {"pronoun": 0.5, "short": 0.5, "ellipsis": 0.0}})
    assert (doc, others) == (1, [2])
    assert asked == "How is it different from the Columbia River?"
    assert standalone == "What is the difference between the Snake River and the Columbia River?"
    # only one comparison per conversation
    again = ask({"passages": PASSAGES, "segment": seg, "used_gold": ["snake"],
                 "previous_standalone": ["What is the Snake River?", standalone], "previous_questions": [asked],
                 "thread_looks": THREAD_LOOKS})
    assert again[3] == []


def test_the_answer_gives_each_definition_and_the_verifier_checks_each_part():
    q = "What is the difference between the Snake River and the Columbia River?"
    ans = compare_answer(q, [SNAKE, COLUMBIA])
    assert ans.startswith("The Snake River is a major river") and "The Columbia River is the largest river" in ans
    x = {"question": q, "standalone_question": q, "answer": ans, "passage": SNAKE, "also": [COLUMBIA],
         "previous_questions": []}
    c = check_compare(x)
    assert c["span_ok"] and c["type_ok"] and c["supported"] and c["fit_ok"], c["reasons"]
    v = Verifier().offline(x)
    assert v.answerable and v.faithful and v.novel
    # an answer that adds an unsupported claim, or leaves a part out, is not faithful
    assert not Verifier().offline({**x, "answer": ans + " Boise is the capital of Idaho."}).faithful
    half = ans.split(" The Columbia")[0]
    assert not Verifier().offline({**x, "answer": half}).faithful
    # passages in the wrong order (the second does not define the second thing) are not a comparison
    assert not Verifier().offline({**x, "passage": COLUMBIA, "also": [SNAKE]}).answerable


def test_candidate_takes_the_other_passages_and_rejects_bad_indexes():
    shown = ["snake", "columbia", "boise"]
    out = QuestionOut(doc_index=1, question="How is it different from the Columbia River?",
                      standalone_question="What is the difference between the Snake River and the Columbia River?",
                      other_doc_indexes=[2])
    assert candidate(out, shown, False)["cand"]["also_gold"] == ["columbia"]
    for bad in ([1], [4], [2, 2]):
        upd = candidate(out.model_copy(update={"other_doc_indexes": bad}), shown, False)
        assert upd["cand"] is None and "other_doc_indexes" in upd["feedback"]
    plain = candidate(out.model_copy(update={"other_doc_indexes": []}), shown, False)["cand"]
    assert "also_gold" not in plain


def test_a_comparison_turn_has_two_gold_passages_in_turns_and_qrels(tmp_path):
    corpus = {p["doc_id"]: p for p in PASSAGES}
    plan = ConvPlan(conv_id="c1", seed=0, n_turns=2, cluster_id=0, topic_id=0, pool=("snake", "columbia"),
                    switch_turn=None, switch_cluster_id=None, switch_topic_id=None, switch_pool=(),
                    unanswerable_turns=())
    cfg = SynthConfig(turns=2, offline_pronoun_share=0.5, offline_short_share=0.5, offline_ellipsis_share=0.0)

    async def main():
        async with LLMSession(LLMConfig(backend="offline"), store=None, write_manifest=False) as llm:
            g = build_graph(GraphContext(corpus=corpus, llm=llm, search=lambda q, k: ["snake", "columbia", "boise"],
                                         cfg=cfg))
            return await g.ainvoke(plan.initial_state(), {"recursion_limit": 1000})
    state = asyncio.run(main())
    t1, t2 = state["turns"]
    assert t1["status"] == "ok" and t2["status"] == "ok", (t1.get("failure_reason"), t2.get("failure_reason"))
    assert t2["standalone_question"].startswith(compare.OPENING)
    assert sorted(t2["gold_doc_ids"]) == ["columbia", "snake"]
    assert t2["question_original"].startswith("How is it different from")
    store = RunStore(str(tmp_path / "r"))
    assemble(store, [plan], {"c1": state}, cfg)
    qrels = {(q["sample_id"], q["doc_id"], q["provenance"]) for q in store.read_table("qrels").to_pylist()}
    assert {("c1:2", "snake", "gold"), ("c1:2", "columbia", "gold")} <= qrels
