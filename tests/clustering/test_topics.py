import numpy as np

from clustering.topics import TopicConfig, TopicResult, cluster_topics, ctfidf_keywords, fit_topics


def test_hdbscan_recovers_planted_topics():
    rng = np.random.default_rng(0)
    c = rng.normal(size=(4, 64))
    lab = np.repeat(np.arange(4), 40)
    x = c[lab] + 0.3 * rng.normal(size=(160, 64))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    words = ["volcano lava", "violin music", "comet orbit", "wheat harvest"]
    res = fit_topics(x.astype(np.float32), [f"{words[i]} the and" for i in lab], TopicConfig(min_cluster_size=10))
    found = [t for t in res.sizes if t >= 0]
    assert len(found) == 4
    for t in found:  # each found topic is one planted group and its keywords name it
        members = lab[res.labels == t]
        assert len(set(members.tolist())) == 1
        assert set(res.keywords[t][:2]) == set(words[members[0]].split())


def test_ctfidf_prefers_distinctive_words():
    kw = ctfidf_keywords(["apple banana common", "apple cherry common", "zebra common", "zebra lion common"],
                         np.array([0, 0, 1, 1]), n=2)
    assert kw[0][0] == "apple" and kw[1][0] == "zebra"


def test_cluster_topic_majority_then_nearest_centroid():
    vec = np.eye(3, dtype=np.float32)
    res = TopicResult(labels=np.array([0, 0, 1, -1, -1]), probabilities=np.ones(5), keywords={}, sizes={},
                      centroids={0: np.array([1, 0, 0.0]), 1: np.array([0, 1, 0.0])})
    vecs = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0.9, 0.1], [0, 1, 0]], dtype=np.float32)
    assert cluster_topics([[0, 1, 2], [3, 4], [2, 0]], res, vecs) == [0, 1, 0]   # tie -> lower id
