"""The cluster stage on a run: exact vs IVF by threshold, the kNN graph persisted and reused."""
import numpy as np
import pyarrow as pa

from clustering.stages import cluster, knn_graph
from flows.config import MTRConfig
from storage.schemas import embeddings_schema
from storage.store import RunStore


def _run(tmp_path, n=600, d=16):
    rng = np.random.default_rng(0)
    c = rng.normal(size=(12, d))
    x = c[rng.integers(0, 12, n)] + 0.4 * rng.normal(size=(n, d))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    store = RunStore(str(tmp_path / "run"))
    ids = [f"d{i}#0" for i in range(n)]
    store.write_table("chunks", pa.table({
        "chunk_id": ids, "doc_id": [i.split("#")[0] for i in ids], "chunk_index": pa.array([0] * n, pa.int32()),
        "title": [""] * n, "text": [f"text {i % 12}" for i in range(n)],
        "start_char": pa.array([0] * n, pa.int64()), "end_char": pa.array([6] * n, pa.int64()),
        "content_hash": ids}))
    store.write_table("embeddings", pa.table({
        "chunk_id": ids, "content_hash": ids, "model_id": ["m"] * n,
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), pa.float32()), d)}), embeddings_schema(d))
    return store, x


def test_graph_is_persisted_and_reused_and_threshold_picks_the_method(tmp_path):
    store, x = _run(tmp_path)
    cfg = MTRConfig.model_validate({"cluster": {"k": 20, "exact_max": 100, "nprobe": 4},
                                    "topics": {"min_cluster_size": 10}})
    r1 = cluster(store, cfg)
    assert r1["knn_method"] == "ivf" and r1["knn_reused"] is False
    t1 = store.read_table("clusters")
    r2 = cluster(store, cfg)
    assert r2["knn_reused"] is True and store.read_table("clusters").equals(t1)
    # another kNN setting or other embeddings: rebuilt, not reused
    cfg2 = MTRConfig.model_validate({"cluster": {"k": 20, "exact_max": 100000}})
    g = knn_graph(store, x, cfg2.cluster)
    assert g.method == "exact" and not g.loaded
    assert knn_graph(store, x, cfg2.cluster).loaded


def test_stage_reports_the_calibrated_nprobe_and_its_sample_recall(tmp_path):
    store, x = _run(tmp_path)
    cfg = MTRConfig.model_validate({"cluster": {"k": 20, "exact_max": 100, "target_recall": 0.97},
                                    "topics": {"min_cluster_size": 10}})
    assert cfg.cluster.nprobe == "auto"
    r1 = cluster(store, cfg)
    assert r1["knn_method"] == "ivf" and r1["knn_target_recall"] == 0.97
    assert r1["knn_sample_recall"] >= 0.97 and r1["knn_recall_sample_size"] == 600   # N < 1,000: every chunk
    assert 1 <= r1["knn_nprobe"] <= r1["knn_nlist"]
    r2 = cluster(store, cfg)                                 # reloaded graph: same figures
    assert r2["knn_reused"] is True
    assert {k: v for k, v in r2.items() if k != "knn_reused"} == {k: v for k, v in r1.items() if k != "knn_reused"}
    # another target is another graph
    cfg2 = MTRConfig.model_validate({"cluster": {"k": 20, "exact_max": 100, "target_recall": 0.9}})
    assert not knn_graph(store, x, cfg2.cluster).loaded
