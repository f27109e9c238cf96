from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from evaluation.metrics import evaluate
from evaluation.report import write_report
from evaluation.report_plots import plot_comparison
from evaluation.report_tables import markdown_table, policy_statement, summary_table, write_metric_tables
from storage.formats import read_trec_qrels, read_trec_run

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def results(mtrag_dir):
    qrels = read_trec_qrels(mtrag_dir / "qrels" / "cloud.tsv")
    out = {}
    for name in ("bm25", "bge", "elser"):
        run = read_trec_run(mtrag_dir / "trec_runs" / f"{name}_cloud_lastturn.trec.gz")
        out[name] = evaluate(qrels, run, ks=(1, 5, 10, 20))
    return out


def test_summary_and_markdown_state_policy(results):
    table = summary_table(results, ["ndcg_cut_5", "recall_20"], n_resamples=200)
    assert table.num_rows == 6
    row = table.to_pylist()[0]
    assert row["retriever"] == "bm25" and row["measure"] == "ndcg_cut_5" and row["label"] == "nDCG@5"
    assert row["ci_low"] <= row["mean"] <= row["ci_high"]
    assert row["n_queries"] == 188 and row["n_missing"] == 5 and row["missing_policy"] == "zero"
    md = markdown_table(table, policy_statement(results))
    assert "| retriever | queries | nDCG@5 | Recall@20 |" in md
    assert 'missing="zero"' in md and "bm25 5" in md
    assert f"{row['mean']:.4f}" in md


def test_policy_statement_mixed_and_skip():
    qrels = {"q:1": {"d": 1}, "q:2": {"d": 1}}
    run = {"q:1": {"d": 1.0}}
    zero = evaluate(qrels, run, metrics=("recall",), ks=(1,))
    skip = evaluate(qrels, run, metrics=("recall",), ks=(1,), missing="skip")
    assert 'missing="skip"' in policy_statement({"a": skip})
    assert "not comparable" in policy_statement({"a": zero, "b": skip})


def test_write_metric_tables(results, tmp_path):
    pq_path, md_path = write_metric_tables(results, tmp_path, measures=["recall_5"], n_resamples=100)
    table = pq.read_table(pq_path)
    assert table.num_rows == 3 and b"missing_policy" in table.schema.metadata
    assert "Missing-query policy" in md_path.read_text()


def test_write_report_produces_all_files(results, tmp_path):
    positions = {qid: (None if i % 3 == 0 else i % 4) for i, qid in enumerate(results["bm25"].qids)}
    files = write_report(results, tmp_path / "rep", title="Cloud last turn", n_resamples=200,
                         switch_positions=positions, max_turn=6)
    names = {p.name for p in tmp_path.joinpath("rep").iterdir()}
    assert {"metrics.parquet", "metrics.md", "report.html", "per_turn.parquet", "switch_position.parquet",
            "significance.parquet", "comparison_ndcg_cut_5.png", "per_turn_ndcg_cut_5.png",
            "switch_position_recall_5.png"} <= names
    for img in files.images:
        assert img.read_bytes()[:8] == PNG
    metrics = pq.read_table(files.metrics_parquet)
    assert set(metrics.column("retriever").to_pylist()) == {"bm25", "bge", "elser"}
    per_turn = pq.read_table(files.tables["per_turn"]).to_pylist()
    assert {r["label"] for r in per_turn} >= {"1", "2", "6+"}
    assert sum(r["n"] for r in per_turn if r["retriever"] == "bm25") == 188
    sig = pq.read_table(files.tables["significance"]).to_pylist()
    assert [r["retriever"] for r in sig] == ["bge", "elser"] and all(0 < r["p_randomization"] <= 1 for r in sig)
    assert files.discrimination is not None and files.discrimination.measure == "recall_20"

    page = files.html.read_text()
    assert page.count("data:image/png;base64,") == len(files.images)
    assert "<table class=\"metrics\">" in page and "nDCG@5" in page and "Recall@20" in page
    assert 'missing=&quot;zero&quot;' in page
    assert "Discrimination" in page and "Paired significance" in page
    assert "src=\"http" not in page and "<link" not in page  # self-contained
    assert "Paired significance" in files.markdown and "Missing-query policy" in files.markdown


def test_report_without_turns(tmp_path):
    qrels = {"alpha": {"d": 1}, "beta": {"d": 1}}
    res = evaluate(qrels, {"alpha": {"d": 1.0}, "beta": {"x": 1.0}}, ks=(5,))
    files = write_report({"only": res}, tmp_path, n_resamples=50)
    assert "per_turn" not in files.tables and "significance" not in files.tables
    assert "carry no turn number" in files.html.read_text()
    with pytest.raises(KeyError):
        plot_comparison(summary_table({"only": res}, n_resamples=10), "ndcg_cut_10", tmp_path / "x.png")
