"""The ChatRAG-Bench, CORAL and TopiOCQA adapters of storage/benchmark.py, each with a tiny
fixture, and the benchmark-candidate-list mode of the audit on them."""
import json

import pytest

from evaluation.audit import AuditConfig, run_audit
from storage.benchmark import iter_formats, load_benchmark
from storage.formats import FormatError
from storage.records import hash_doc_id
from tests.evaluation.audit.conftest import MTRAG

P = ["The Eiffel Tower is 330 metres tall.", "The Louvre is the world's most-visited museum.",
     "Notre-Dame is a medieval cathedral.", "The Seine flows through Paris.", "Montmartre is a hill in Paris."]


def _chatrag_rows():
    return [
        {"id": "qrecc-1", "messages": [{"role": "user", "content": "How tall is the Eiffel Tower?"}],
         "answers": ["330 metres.", "About 330 m"], "ground_truth_ctx": {"index": 0, "ctx": P[0]},
         "ctxs": [{"title": "Eiffel", "ctx": p} for p in P[:4]], "document": "paris"},
        {"messages": [{"role": "user", "content": "How tall is the Eiffel Tower?"},
                      {"role": "assistant", "content": "330 metres."},
                      {"role": "user", "content": "And which museum is most visited?"}],
         "answers": ["The Louvre."], "ground_truth_ctx": [{"ctx": "  The Louvre is the world's   most-visited museum. "}],
         "ctxs": [{"title": "", "text": p} for p in P], "document": "paris"},
        {"messages": [{"role": "user", "content": "Who painted the Mona Lisa?"}], "answers": ["Leonardo."],
         "ground_truth_ctx": {"ctx": "Leonardo painted the Mona Lisa."}, "ctxs": [{"ctx": P[3]}, {"ctx": P[4]}]},
        {"messages": [{"role": "user", "content": "Tell me a joke"}], "answers": ["Sorry, I can't answer."],
         "ground_truth_ctx": None, "ctxs": [{"ctx": P[2]}]},
    ]


@pytest.fixture
def chatrag_file(tmp_path):
    f = tmp_path / "qrecc.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in _chatrag_rows()) + "\n")
    return f


def test_chatrag_adapter(chatrag_file, tmp_path):
    b = load_benchmark(chatrag_file, "chatrag")
    assert b.name == "qrecc" and b.format == "chatrag" and len(b.turns) == 4 and len(b.corpus) == 5
    t0, t1, t2, t3 = b.turns
    g0 = hash_doc_id(P[0])
    assert t0.sample_id == "qrecc-1" and t0.gold == {g0: 1} and t0.reference_answer == "330 metres."
    assert t0.candidates == tuple(hash_doc_id(p) for p in P[:4]) and b.corpus[g0].title == "Eiffel"
    assert t1.sample_id == "qrecc:1" and t1.turn == 2 and t1.question == "And which museum is most visited?"
    assert t1.history == (("user", "How tall is the Eiffel Tower?"), ("assistant", "330 metres."))
    assert t1.gold == {hash_doc_id(P[1]): 1}                     # located by whitespace-normalised text
    assert t1.conv_id == t0.conv_id                              # same document and first question
    assert list(t2.gold)[0] not in b.corpus                      # a gold that no ctxs list holds is missing
    assert t3.gold == {} and t3.answerability == "UNANSWERABLE"
    # a JSON array / folder with {split}.json works too, with a --domain name
    d = tmp_path / "quac"
    d.mkdir()
    (d / "test.json").write_text(json.dumps(_chatrag_rows()))
    b2 = load_benchmark(d, "chatrag", domain="quac")
    assert b2.name == "quac" and [t.gold for t in b2.turns] == [t.gold for t in b.turns]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": [{"role": "assistant", "content": "hi"}]}) + "\n")
    with pytest.raises(FormatError, match="bad.jsonl, line 1: row 0: the last message must be the user's"):
        load_benchmark(bad, "chatrag")


def test_chatrag_audit_in_both_candidate_modes(chatrag_file, tmp_path):
    b = load_benchmark(chatrag_file, "chatrag")
    res = run_audit(b, ["overlap", "support"], out=tmp_path / "a",
                    config=AuditConfig(negatives="bm25", candidates="both", n_negatives=3, n_resamples=200))
    reasons = {(s["sample_id"], s["variant"]): s["reason"] for s in res.skipped}
    assert reasons[("qrecc:2", "retrieved")] == reasons[("qrecc:2", "benchmark")] == "gold_missing"
    assert reasons[("qrecc:3", "benchmark")] == "no_gold"
    bench_sets = [c for c in res.candidates if c["source"] == "benchmark"]
    assert {c["sample_id"] for c in bench_sets} == {"qrecc-1", "qrecc:1"}
    for c in bench_sets:
        turn = b.by_id()[c["sample_id"]]
        assert set(c["order"]) <= set(turn.candidates) and c["order"][c["gold_position"] - 1] == c["gold_doc"]
        assert c["n_negatives"] == 3 and c["query_source"] == "benchmark"
    s = res.summary_for()
    assert s["distinguishability[benchmark]"]["n"] == 2 and s["distinguishability[retrieved]"]["n"] == 2


def _coral(tmp_path):
    root = tmp_path / "CORAL"
    (root / "test").mkdir(parents=True)
    corpus = [{"ref_id": i, "ref_string": f"Passage {i} about topic {i // 5}: fact {i}."} for i in range(1, 13)]
    (root / "passage_corpus.json").write_text("\n".join(json.dumps(c) for c in corpus) + "\n")
    convs = [{"conv_id": "Test_LDS_1", "turns": [
        {"turn_id": 1, "question": "What is fact 2?", "response": "Fact 2 is stated [2].", "golden_docs_pids": [2],
         "golden_rewrite": "What is fact 2?"},
        {"turn_id": 2, "question": "And fact 7 and 8?", "response": "They are 7 [7] and 8 [8].",
         "golden_docs_pids": [7, 8]},
        {"turn_id": 3, "question": "What about fact 40?", "response": "Unknown [40].", "golden_docs_pids": [40]}]}]
    (root / "test" / "new_test_conversation.json").write_text(json.dumps(convs))
    return root


def test_coral_adapter(tmp_path):
    root = _coral(tmp_path)
    b = load_benchmark(root, "coral")
    assert b.name == "coral-test" and len(b.corpus) == 12 and [t.sample_id for t in b.turns] == [
        "Test_LDS_1_1", "Test_LDS_1_2", "Test_LDS_1_3"]
    t1, t2, t3 = b.turns
    assert t1.gold == {"2": 1} and t1.reference_answer == "Fact 2 is stated." and t1.rewrite == "What is fact 2?"
    assert t1.candidates == tuple(str(i) for i in range(1, 9))           # neighbours, clamped at the start
    assert t2.history == (("user", "What is fact 2?"), ("assistant", "Fact 2 is stated."))
    assert t2.gold == {"7": 1, "8": 1} and t2.candidates == ()          # the reference kept one-gold turns only
    assert "40" not in b.corpus and t3.candidates == ()
    # the conversations file itself, corpus in the folder above
    assert [t.gold for t in load_benchmark(root / "test" / "new_test_conversation.json", "coral").turns] == \
        [t.gold for t in b.turns]
    res = run_audit(b, ["overlap"], out=tmp_path / "a",
                    config=AuditConfig(negatives="bm25", candidates="benchmark", metrics=["distinguishability"],
                                       n_resamples=200))
    reasons = {s["sample_id"]: s["reason"] for s in res.skipped}
    assert reasons == {"Test_LDS_1_2": "no_candidates", "Test_LDS_1_3": "gold_missing"}
    assert res.candidates[0]["n_negatives"] == 7 and res.summary_for()["distinguishability[benchmark]"]["n"] == 1


def test_topiocqa_adapter(tmp_path):
    rows = [{"Conversation_no": 1, "Turn_no": 1, "Question": "who wrote hamlet", "Answer": "Shakespeare",
             "Context": [], "Gold_passage": {"id": "w1", "title": "Hamlet", "text": "Hamlet was written by Shakespeare."}},
            {"Conversation_no": 1, "Turn_no": 2, "Question": "when", "Answer": "around 1600",
             "Context": ["who wrote hamlet", "Shakespeare"], "Rewrite": "when was hamlet written",
             "Gold_passage": {"id": "w2", "title": "Hamlet", "text": "It was written around 1600."}},
            {"Conversation_no": 1, "Turn_no": 3, "Question": "his dog's name?", "Answer": "UNANSWERABLE",
             "Context": ["who wrote hamlet", "Shakespeare", "when", "around 1600"], "Gold_passage": {}}]
    f = tmp_path / "topiocqa_dev.json"
    f.write_text(json.dumps(rows))
    b = load_benchmark(tmp_path, "topiocqa", split="dev")
    assert set(b.corpus) == {"w1", "w2"} and b.turns[1].history == (("user", "who wrote hamlet"),
                                                                    ("assistant", "Shakespeare"))
    assert b.turns[1].rewrite == "when was hamlet written" and b.turns[2].answerability == "UNANSWERABLE"
    (tmp_path / "full_wiki_segments.tsv").write_text("id\ttext\ttitle\nw1\tHamlet was written by Shakespeare.\tHamlet\n"
                                                     "w9\tOther text.\tOther\n")
    b2 = load_benchmark(f, "topiocqa")
    assert set(b2.corpus) == {"w1", "w9"} and "w2" not in b2.corpus     # the segments file is the corpus


def test_existing_formats_unchanged():
    assert tuple(iter_formats()) == ("ours", "mtrag", "beir", "chatrag", "coral", "topiocqa")
    b = load_benchmark(MTRAG, "mtrag", domain="cloud")
    assert b.name == "mtrag-cloud" and len(b.turns) == 205 and all(t.candidates == () for t in b.turns)
