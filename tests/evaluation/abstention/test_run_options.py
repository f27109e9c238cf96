"""Options of the verb: benchmark-unanswerable turns, the answer check (step 7), turn
selection and config validation; plus the full default ladder (hybrid over the whole MTRAG
pools, slow)."""
import os

import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from evaluation.abstention import AbstentionConfig, run_abstention, select_turns
from evaluation.abstention.config import DEFAULT_LADDER
from tests.evaluation.abstention.helpers import MTRAG, sub_benchmark


def test_unanswerable_turns_and_answer_check(mtrag_clapnq, tmp_path):
    sb = sub_benchmark(mtrag_clapnq, n_convs=3, n_others=200)
    unans = [t for t in sb.turns if not t.gold and t.answerability != "CONVERSATIONAL"]
    assert unans                                          # the first conversation opens with one
    cfg = AbstentionConfig(retrievers=["bm25-turn", "bm25-rewrite"], include_unanswerable_turns=True,
                           answer_check=True, answer_check_n=5, review_n=10, n_resamples=200)
    res = run_abstention(sb, tmp_path / "r", cfg)
    ids = {c.sample_id for c in res.contexts}
    assert {t.sample_id for t in unans} <= ids
    labels = pq.read_table(tmp_path / "r" / "content_labels.parquet").to_pylist()
    fixed = [r for r in labels if r["sample_id"] in {t.sample_id for t in unans}]
    assert fixed and all(r["label"] == "no" and r["backend"] == "benchmark" for r in fixed)
    # benchmark-unanswerable contexts count as rule- and content-unanswerable, never as judged pairs
    n_judged_pairs = sum(1 for c in res.contexts if c.retriever == "bm25-turn" and c.gold and c.doc_ids)
    assert dict(res.agreements)["bm25-turn"].n == n_judged_pairs
    row = res.per_retriever[0]
    assert row["rule_unanswerable"] >= len(unans) and row["content_unanswerable"] >= len(unans)
    groups = {g.group: g for g in res.answer_check}
    assert set(groups) == {"false_miss", "unanswerable", "no_context"}
    assert groups["no_context"].n_correct == 0            # the offline answerer never answers without text
    assert all(g.n <= 5 for g in groups.values())
    assert pq.read_table(tmp_path / "r" / "answer_check.parquet").num_rows == 3


def test_turn_selection_and_config_validation(mtrag_clapnq):
    turns = select_turns(mtrag_clapnq, AbstentionConfig())
    assert len(turns) == 208 and all(t.gold for t in turns)
    assert len(select_turns(mtrag_clapnq, AbstentionConfig(include_unanswerable_turns=True))) == 224
    assert [t.sample_id for t in select_turns(mtrag_clapnq, AbstentionConfig(limit=7))] == \
        [t.sample_id for t in turns[:7]]
    assert AbstentionConfig().retrievers == list(DEFAULT_LADDER)
    for bad in ({"eval_k": 3}, {"judges": ["a", "a"]}, {"negative_control_retriever": "dense"},
                {"retrievers": []}, {"unknown": 1}):
        with pytest.raises(ValidationError):
            AbstentionConfig(**bad)


@pytest.mark.slow
def test_default_ladder_with_hybrid_on_the_full_pools(tmp_path):
    cache = os.environ.get("MTR_EMB_CACHE") or str(tmp_path / "emb")
    for domain in ("clapnq", "cloud"):
        res = run_abstention(MTRAG, tmp_path / domain, AbstentionConfig(embedding_cache=cache), format="mtrag",
                             domain=domain)
        assert [r["retriever"] for r in res.per_retriever] == list(DEFAULT_LADDER)
        assert all(0 < r["ndcg"] < 1 and r["rule_unanswerable"] > 0 for r in res.per_retriever)


def test_turns_without_a_reference_answer_are_not_judged(tmp_path):
    from storage.benchmark import Benchmark, BenchTurn
    from storage.records import Document
    docs = {f"d{i}": Document(f"d{i}", "", t, f"d{i}") for i, t in enumerate(
        ["the eiffel tower opened in 1889", "paris is the capital of france", "the louvre is a museum in paris",
         "tokyo tower is red", "mount fuji is in japan"])}
    turns = [BenchTurn("a:1", "a", 1, "when did the eiffel tower open", gold={"d0": 1},
                       reference_answer="The Eiffel Tower opened in 1889."),
             BenchTurn("b:1", "b", 1, "what colour is tokyo tower", gold={"d3": 1}, reference_answer="")]
    res = run_abstention(Benchmark("t", "beir", docs, turns), tmp_path / "r",
                         AbstentionConfig(retrievers=["bm25-turn"], review_n=5, n_resamples=100))
    got = {c.sample_id: res.judgments["heuristic-support"][c.key] for c in res.contexts}
    assert got["a:1"].label == "yes" and got["b:1"].label is None and got["b:1"].failure == "no_reference_answer"
    assert res.per_retriever[0]["n_contexts"] == 2
    assert res.rule_metrics[("bm25-turn", "heuristic-support")].n_judged == 1
    assert any("1 turns have no reference answer" in n for n in res.notes)
