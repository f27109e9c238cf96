import numpy as np
import pytest

from clustering.greedy import ClusterConfig, greedy_clusters, walk
from clustering.knn import knn


def _blobs(n, d=16, centers=5, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centers, d))
    x = c[rng.integers(0, centers, n)] + 0.4 * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_knn_equals_brute_force_and_blocks_do_not_matter():
    x = _blobs(300)
    idx, sims = knn(x, k=10)
    s = x @ x.T
    np.fill_diagonal(s, -np.inf)
    ref = np.argsort(-s, axis=1, kind="stable")[:, :10]
    assert np.array_equal(idx, ref)
    assert np.allclose(sims, np.take_along_axis(s, ref, axis=1), atol=1e-6)
    idx2, _ = knn(x, k=10, max_block_bytes=4 * 300 * 7)  # blocks of 7 rows
    assert np.array_equal(idx, idx2)
    assert knn(x[:1], k=5)[0].shape == (1, 0)


def test_walk_hand_example():
    # 0-1-2-3 is a chain; 4,5 are close to each other
    nbr = np.array([[1, 2, 3, 4, 5], [2, 0, 3, 4, 5], [3, 1, 0, 4, 5], [2, 1, 0, 4, 5], [5, 3, 2, 1, 0],
                    [4, 3, 2, 1, 0]])
    clusters = walk(nbr, size=3, seed_order=np.array([0, 1, 2, 3, 4, 5]))
    assert clusters == [[0, 1, 2], [3, 4, 5]]   # step from the most recently added member
    clusters = walk(nbr, size=3, seed_order=np.array([4, 0, 1, 2, 3, 5]))
    assert clusters == [[4, 5, 3], [0, 1, 2]]


def test_repair_inserts_before_neighbour_and_bounds_size():
    nbr = np.array([[1, 2, 3, 4], [2, 0, 3, 4], [1, 0, 3, 4], [4, 1, 0, 2], [3, 0, 1, 2]])
    # seed order 0 -> cluster [0,1,2] (size 3); then 3 -> [3,4] short (min 3): 3's nearest outside is 4 (same
    # cluster), then 1 -> inserted before 1; 4's nearest outside cluster: 3 (now in cluster 0) -> before 3
    res = greedy_clusters(nbr, size=3, min_size=3, max_size=6, seed=0)
    assert sorted(sum(res.clusters, [])) == [0, 1, 2, 3, 4]
    assert len(res.clusters) == 1 and res.moved == 2


@pytest.mark.parametrize("n", [1, 5, 17, 400])
def test_invariants_no_loss_bounds_determinism(n):
    x = _blobs(n, seed=n)
    idx, _ = knn(x, k=20)
    cfg = ClusterConfig(size=8)
    a = greedy_clusters(idx, size=8, seed=1, vectors=x)
    b = greedy_clusters(idx, size=8, seed=1, vectors=x)
    members = sorted(sum(a.clusters, []))
    assert members == list(range(n))                        # every chunk in exactly one cluster
    assert all(len(c) <= 16 for c in a.clusters)            # at most 2C
    assert all(len(c) >= 8 for i, c in enumerate(a.clusters) if i not in a.short_clusters)
    assert a.clusters == b.clusters                          # deterministic under the same seed
    if n < 8:
        assert a.short_clusters == [0]                       # reported, not dropped
    if n >= 400:
        c = greedy_clusters(idx, size=8, seed=2, vectors=x)
        assert c.clusters != a.clusters                      # another seed, another clustering
        assert not a.short_clusters
    assert cfg.k == 100


def test_config_validation():
    with pytest.raises(ValueError):
        ClusterConfig(size=8, min_size=20, max_size=10)
