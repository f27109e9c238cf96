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
