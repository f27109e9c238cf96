"""Versioning rules of the regeneration flow, without Prefect: ids, publish/LATEST, diffs."""
import pyarrow as pa
import pyarrow.parquet as pq

from flows.config import load_config
from flows.regenerate import (LATEST, SUCCESS, config_hash, corpus_hash, diff_markdown, good_versions, latest,
                              publish, resolve_benchmark, version_diff, version_id)
from storage.schemas import DOCUMENTS, TURNS, table_from_rows
from storage.store import RunStore


def _version(root, name, docs, turns, ndcg=None):
    store = RunStore(str(root / name)).ensure()
    store.write_table("documents", table_from_rows(
        [{"doc_id": d, "title": "", "text": t, "source": d, "content_hash": str(hash(t)), "n_chars": len(t)}
         for d, t in docs.items()], DOCUMENTS))
    rows = [{n: None for n in TURNS.names} | {"sample_id": f"{c}:{i}", "conv_id": c, "turn": i, "status": "ok",
                                              "question": q, "answer": "a", "gold_doc_ids": ["d1"]}
            for c, qs in turns.items() for i, q in enumerate(qs, 1)]
    store.write_table("turns", table_from_rows(rows, TURNS))
    if ndcg is not None:
        (root / name / "eval").mkdir()
        pq.write_table(pa.table({"retriever": ["bm25/last_turn"], "measure": ["ndcg_cut_5"],
                                 "mean": [ndcg]}), root / name / "eval" / "metrics.parquet")
    return root / name


def test_ids_depend_on_content_not_on_run_settings(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("alpha")
    cfg = load_config(None)
    h1 = corpus_hash(corpus)
    (corpus / "a.txt").write_text("alpha")          # same bytes, new mtime: same hash
    assert corpus_hash(corpus) == h1
    (corpus / "a.txt").write_text("beta")
    assert corpus_hash(corpus) != h1
    other = load_config(None, {"runs_root": "elsewhere", "scale.runner": "dask"})
    assert config_hash(other) == config_hash(cfg)
    assert config_hash(load_config(None, {"synth.turns": 4})) != config_hash(cfg)
    assert version_id(cfg, corpus, date="20260101").startswith("20260101-")


def test_failed_version_never_replaces_the_last_good_one_and_diff(tmp_path):
    v1 = _version(tmp_path, "v1", {"d1": "x", "d2": "y"}, {"c1": ["q1", "q2"], "c2": ["q3"]}, ndcg=0.5)
    publish(tmp_path, "v1")
    assert latest(tmp_path) == "v1" and (v1 / SUCCESS).exists()
    v2 = _version(tmp_path, "v2", {"d1": "x", "d3": "z"}, {"c1": ["q1", "q2"], "c2": ["q3 changed"]}, ndcg=0.6)
    # v2 "failed" before publishing: LATEST and the good versions are untouched
    assert latest(tmp_path) == "v1" and good_versions(tmp_path) == ["v1"]
    assert resolve_benchmark(tmp_path) == tmp_path / "v1"
    d = version_diff(v1, v2)
    assert d["documents_added"] == ["d3"] and d["documents_removed"] == ["d2"]
    assert d["conversations_regenerated"] == ["c2"] and d["conversations_unchanged"] == 1
    assert abs(d["metric_drift"]["bm25/last_turn:ndcg_cut_5"] - 0.1) < 1e-9
    assert "conversations regenerated: 1" in diff_markdown(d)
    publish(tmp_path, "v2")
    assert (tmp_path / LATEST).read_text().strip() == "v2" and good_versions(tmp_path) == ["v1", "v2"]
