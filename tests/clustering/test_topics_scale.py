"""Topics above ``topics.sample_size``: HDBSCAN on a seeded sample, the rest by nearest sample point."""
import numpy as np
from sklearn.metrics import adjusted_rand_score

from clustering.topics import TopicConfig, fit_topics


def _planted(n, groups=5, d=48, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(groups, d))
    lab = rng.integers(0, groups, n)
    x = c[lab] + 0.3 * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32), lab


def test_sampled_topics_agree_with_the_planted_groups_and_full_hdbscan():
    x, lab = _planted(1200)
    texts = [f"word{l} filler" for l in lab]
    full = fit_topics(x, texts, TopicConfig(min_cluster_size=10, sample_size=5000))
    samp = fit_topics(x, texts, TopicConfig(min_cluster_size=10, sample_size=400))
    assert adjusted_rand_score(lab, full.labels) > 0.95
    assert adjusted_rand_score(full.labels, samp.labels) > 0.95
    assert sum(samp.sizes.values()) == 1200 and len(samp.labels) == len(samp.probabilities) == 1200
    for t, c in samp.centroids.items():                        # centroid = normalised mean of members
        m = x[samp.labels == t].mean(axis=0)
        assert np.allclose(c, m / np.linalg.norm(m), atol=1e-5)
    t0 = next(t for t in samp.keywords if t >= 0)              # keywords from the sample's texts
    assert samp.keywords[t0][0].startswith("word")


def test_sampled_topics_are_seeded():
    x, lab = _planted(900, seed=2)
    a = fit_topics(x, [""] * 900, TopicConfig(min_cluster_size=8, sample_size=300, seed=1))
    b = fit_topics(x, [""] * 900, TopicConfig(min_cluster_size=8, sample_size=300, seed=1))
    assert np.array_equal(a.labels, b.labels)


def test_at_or_below_sample_size_the_full_path_runs(monkeypatch):
    import clustering.topics as topics
    x, lab = _planted(300, seed=1)
    called = []
    monkeypatch.setattr(topics, "fit_topics_sampled", lambda *a: called.append(1))
    topics.fit_topics(x, [""] * 300, TopicConfig(min_cluster_size=10, sample_size=300))
    assert called == []
    topics.fit_topics(x, [""] * 300, TopicConfig(min_cluster_size=10, sample_size=299))
    assert called == [1]


def test_dense_prim_hdbscan_matches_the_hdbscan_package():
    # the sample's HDBSCAN: exact MST (Prim's on a dense mutual-reachability matrix) then the
    # package's own condensing -> the same clusters and probabilities as its prims_kdtree
    import hdbscan

    from clustering.topics import hdbscan_dense
    x, lab = _planted(600, groups=6, d=8, seed=4)
    x = x.astype(np.float64) + 0.05 * np.random.default_rng(0).normal(size=x.shape)
    ref = hdbscan.HDBSCAN(min_cluster_size=10, algorithm="prims_kdtree")
    ref_labels = ref.fit_predict(x)
    labels, probs = hdbscan_dense(x, 10)
    assert labels.dtype == np.int64 and probs.dtype == np.float32 and len(labels) == 600
    assert adjusted_rand_score(ref_labels, labels) == 1.0
    assert np.allclose(probs, ref.probabilities_, atol=1e-4)
    labels5, _ = hdbscan_dense(x, 10, min_samples=5)
    assert adjusted_rand_score(hdbscan.HDBSCAN(min_cluster_size=10, min_samples=5,
                                               algorithm="prims_kdtree").fit_predict(x), labels5) == 1.0


def test_nearest_sample_point_search_exact_or_ivf():
    from clustering.topics import _sample_index
    rng = np.random.default_rng(0)
    zs = rng.normal(size=(2500, 8)).astype(np.float32)
    q = zs[rng.choice(2500, 300, replace=False)] + 1e-4
    for nprobe in (0, 16):
        _, nn = _sample_index(zs, nprobe).search(q, 1)
        d_found = ((q - zs[nn[:, 0]]) ** 2).sum(1)
        assert np.all(d_found < 1e-6)              # a point's own copy is found
    a = fit_topics(*(_planted(900, seed=2)[0], [""] * 900), TopicConfig(min_cluster_size=8, sample_size=300,
                                                                         assign_nprobe=0))
    b = fit_topics(*(_planted(900, seed=2)[0], [""] * 900), TopicConfig(min_cluster_size=8, sample_size=300))
    assert adjusted_rand_score(a.labels, b.labels) > 0.99
