"""The same question with the same gold never twice in a benchmark (issue #52, minor: the offline backend repeated
3 questions 3 times and 3 twice in 23 turns). The mechanism: agents.synth.dedup reads the whole run in the
benchmark's order once the conversations are written; a repeat becomes a ``duplicate`` turn: history, no item."""
from __future__ import annotations

from agents.synth.config import SynthConfig
from agents.synth.dedup import duplicate_turns, item_key
from agents.synth.run import ConvPlan, assemble
from storage.benchmark import load_ours
from storage.schemas import CHUNKS, table_from_rows
from storage.store import RunStore


def _plan(conv_id: str) -> ConvPlan:
    return ConvPlan(conv_id=conv_id, seed=0, n_turns=2, cluster_id=int(conv_id[1:]), topic_id=0, pool=("d1",),
                    switch_turn=None, switch_cluster_id=None, switch_topic_id=None, switch_pool=(),
                    unanswerable_turns=())


def test_item_key_and_duplicates_keep_the_first_occurrence_in_benchmark_order():
    assert item_key("What is  a Bond?", ["b", "a"]) == item_key("what is a bond", ["a", "b"])
    assert item_key("What is a bond?", ["a"]) != item_key("What is a bond?", ["b"])
    a = [{"sample_id": "c2:1", "status": "ok", "question": "What is a bond?", "gold_doc_ids": ["d1"]},
         {"sample_id": "c2:2", "status": "failed", "question": "How is it taxed?", "gold_doc_ids": ["d1"]}]
    b = [{"sample_id": "c1:1", "status": "ok", "question": "what is a bond", "gold_doc_ids": ["d1"]},
         {"sample_id": "c1:2", "status": "ok", "question": "How is it taxed?", "gold_doc_ids": ["d1"]},
         {"sample_id": "c1:3", "status": "ok", "question": "What is a bond?", "gold_doc_ids": ["d2"]}]
    assert duplicate_turns([a, b]) == {"c1:1": "c2:1"}       # a failed turn is no item; another gold is another item
    assert duplicate_turns([b, a]) == {"c2:1": "c1:1"}


def _turn(conv: str, i: int, q: str, gold: str) -> dict:
    return {"sample_id": f"{conv}:{i}", "conv_id": conv, "turn": i, "status": "ok", "question": q,
            "standalone_question": q, "answer": f"answer {i}", "gold_doc_ids": [gold], "answerability": "ANSWERABLE",
            "backend": "offline", "cluster_id": None}


def test_assemble_marks_a_repeated_item_duplicate_keeps_it_as_history_and_writes_no_qrels(tmp_path):
    store = RunStore(str(tmp_path / "run")).ensure()
    store.write_table("chunks", table_from_rows([{"chunk_id": "d1", "doc_id": "d1", "chunk_index": 0, "title": "",
                                                  "text": "A bond is a loan.", "start_char": 0, "end_char": 17,
                                                  "content_hash": "h"}], CHUNKS))
    p1, p2 = _plan("c1"), _plan("c2")
    states = {"c1": {"done": True, "turns": [_turn("c1", 1, "What is a bond?", "d1"),
                                             _turn("c1", 2, "Is it taxed?", "d1")]},
              "c2": {"done": True, "turns": [_turn("c2", 1, "What is a bond?", "d1"),
                                             _turn("c2", 2, "How long does it last?", "d1")]}}
    summary = assemble(store, [p1, p2], states, SynthConfig(),
                       completion={"replaced": [{"conv_id": "c5"}], "short_kept": []})
    assert summary["duplicates"] == 1 and summary["turns_ok"] == 3 and summary["turns_failed"] == 0
    assert summary["conversations_replaced"] == 1 and summary["conversations_short"] == 0
    turns = {t["sample_id"]: t for t in store.read_table("turns").to_pylist()}
    assert turns["c2:1"]["status"] == "duplicate" and "c1:1" in turns["c2:1"]["failure_reason"]
    assert {r["sample_id"] for r in store.read_table("qrels").to_pylist()} == {"c1:1", "c1:2", "c2:2"}
    bench = {t.sample_id: t for t in load_ours(store.path).turns}
    assert set(bench) == {"c1:1", "c1:2", "c2:2"}
    assert bench["c2:2"].history == (("user", "What is a bond?"), ("assistant", "answer 1"))   # still its history
