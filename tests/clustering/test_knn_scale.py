"""Approximate (FAISS IVF) kNN, persistence of the graph."""
import numpy as np
import pytest

from clustering.greedy import greedy_clusters
from clustering.knn import build_knn, ivf_knn, knn, load_knn, save_knn


def _blobs(n, d=32, centers=40, noise=0.5, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centers, d))
    x = c[rng.integers(0, centers, n)] + noise * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _recall(approx, exact, k=10):
    return np.mean([len(set(a[:k]) & set(e[:k])) / k for a, e in zip(approx, exact)])


def _mean_intra_cos(clusters, x):
    vals = []
    for m in clusters:
        v = x[m]
        s = v @ v.T
        vals.append((s.sum() - len(m)) / (len(m) * (len(m) - 1)))
    return float(np.mean(vals))


def test_below_threshold_is_the_exact_graph():
    x = _blobs(500)
    g = build_knn(x, k=20, exact_max=500)
    assert g.method == "exact" and g.ivf is None
    assert np.array_equal(g.neighbors, knn(x, k=20)[0])


def test_approximate_path_recall_and_cluster_tightness():
    x = _blobs(4000)
    exact, _ = knn(x, k=30)
    g = build_knn(x, k=30, exact_max=100, nprobe=8)       # low threshold forces the IVF path
    assert g.method == "ivf" and g.params["nlist"] == len(g.ivf.centroids) > 8
    nbr = g.neighbors
    assert nbr.shape == (4000, 30) and nbr.dtype == np.int32
    assert not (nbr == np.arange(4000)[:, None]).any()     # never its own neighbour
    assert _recall(nbr, exact) >= 0.95
    sims = np.einsum("ij,ikj->ik", x, x[np.where(nbr < 0, 0, nbr)])
    assert (np.diff(np.where(nbr < 0, -np.inf, sims), axis=1) <= 1e-6).all()   # sorted, nearest first
    ca = greedy_clusters(nbr, size=8, seed=0, vectors=x)
    ce = greedy_clusters(exact, size=8, seed=0, vectors=x)
    assert sorted(sum(ca.clusters, [])) == list(range(4000))
    assert _mean_intra_cos(ca.clusters, x) >= 0.98 * _mean_intra_cos(ce.clusters, x)


def test_ivf_with_one_probe_misses_neighbours_more_probes_recover_them():
    # the recall figure is real: a single cell per query loses neighbours across cell borders
    x = _blobs(3000, centers=6, noise=1.0, seed=3)
    exact, _ = knn(x, k=10)
    r1 = _recall(ivf_knn(x, k=10, nlist=64, nprobe=1)[0], exact)
    r16 = _recall(ivf_knn(x, k=10, nlist=64, nprobe=16)[0], exact)
    assert r1 < 0.9 and r16 > r1 + 0.05


def test_persisted_graph_reloads_memory_mapped_and_key_must_match(tmp_path):
    x = _blobs(1500)
    g = build_knn(x, k=10, exact_max=100, nprobe=4, seed=1)
    key = {"embeddings_sha256": "abc", "k": 10, "nprobe": 4}
    save_knn(tmp_path, g, key)
    back = load_knn(tmp_path, key)
    assert back is not None and back.loaded and back.method == "ivf"
    assert isinstance(back.neighbors, np.memmap)
    assert np.array_equal(np.asarray(back.neighbors), g.neighbors)
    assert np.array_equal(back.ivf.centroids, g.ivf.centroids) and np.array_equal(back.ivf.assign, g.ivf.assign)
    assert load_knn(tmp_path, {**key, "embeddings_sha256": "other"}) is None
    assert load_knn(tmp_path / "nothing", key) is None
    # the persisted IVF becomes a searchable FAISS index without re-training
    index = back.ivf.faiss_index(x)
    assert index.ntotal == len(x)
    index.nprobe = 8
    _, ids = index.search(x[:20], 1)
    assert list(ids[:, 0]) == list(range(20))
    # an interrupted save (meta.json missing) is ignored, not half-read
    (tmp_path / "meta.json").unlink()
    assert load_knn(tmp_path, key) is None


def test_exact_graph_persists_without_ivf(tmp_path):
    x = _blobs(200)
    g = build_knn(x, k=5)
    save_knn(tmp_path, g, {"k": 5})
    back = load_knn(tmp_path, {"k": 5})
    assert back.method == "exact" and back.ivf is None and np.array_equal(np.asarray(back.neighbors), g.neighbors)


@pytest.mark.parametrize("shard_rows,block_bytes", [(None, 1 << 30), (97, 4 * 97 * 13), (1000, 4 * 1000 * 7)])
def test_torch_knn_is_the_exact_graph(shard_rows, block_bytes):
    """The GPU path's algorithm (blocks x shards, merged top-k, self dropped), run with CPU
    torch: the same neighbours and similarities as the numpy exact search, in every block and
    shard layout (97-row shards: the self match falls in a middle shard, merges of 11 shards)."""
    from clustering.knn import torch_knn
    x = _blobs(1000, d=24)
    ref_i, ref_s = knn(x, k=15)
    idx, sims = torch_knn(x, k=15, device="cpu", shard_rows=shard_rows, max_block_bytes=block_bytes)
    assert idx.shape == (1000, 15) and idx.dtype == np.int32
    assert not (idx == np.arange(1000)[:, None]).any()
    assert np.allclose(sims, ref_s, atol=1e-5)
    assert (idx == ref_i).mean() > 0.999        # float rounding may swap two near-equal neighbours
    assert np.all(np.diff(sims, axis=1) <= 0)


def test_torch_knn_small_and_duplicate_inputs():
    from clustering.knn import torch_knn
    x = _blobs(6, d=4)
    idx, sims = torch_knn(x, k=10, device="cpu", shard_rows=2)
    assert idx.shape == (6, 5) and all(sorted(r) == sorted(set(range(6)) - {i}) for i, r in enumerate(idx.tolist()))
    dup = np.repeat(_blobs(3, d=4), 2, axis=0)       # rows 2i and 2i+1 equal
    idx, sims = torch_knn(dup, k=1, device="cpu", shard_rows=1)
    assert idx[:, 0].tolist() == [1, 0, 3, 2, 5, 4] and np.allclose(sims, 1.0, atol=1e-6)
    assert torch_knn(np.zeros((1, 4), np.float32), k=5, device="cpu")[0].shape == (1, 0)


def test_cuda_requested_without_gpu_is_an_error():
    from clustering.knn import gpu_available, torch_cuda_available
    if gpu_available() or torch_cuda_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(RuntimeError, match="no GPU"):
        build_knn(_blobs(50), k=5, device="cuda")


def test_ivf_graph_of_an_earlier_search_is_not_reused(tmp_path):
    import json
    x = _blobs(1500)
    g = build_knn(x, k=10, exact_max=100, nprobe=4, seed=1)
    save_knn(tmp_path, g, {"k": 10})
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["search"] == "cell-batched" and load_knn(tmp_path, {"k": 10}) is not None
    del meta["search"]                                   # a graph saved by the per-query IVF search
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    assert load_knn(tmp_path, {"k": 10}) is None


def test_ivf_knn_single_and_two_threads_agree():
    x = _blobs(3000)
    a, sa, _ = ivf_knn(x, k=15, nprobe=4, threads=1)
    b, sb, _ = ivf_knn(x, k=15, nprobe=4, threads=2)
    assert np.array_equal(a, b) and np.allclose(sa, sb)
