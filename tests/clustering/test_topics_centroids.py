"""Topics above ``topics.sample_size``: HDBSCAN on the conversation clusters' centroids, each
weighted by its chunk count (``topics.method = "centroids"``), and the coverage warning."""
import logging

import numpy as np
from sklearn.metrics import adjusted_rand_score

from clustering.greedy import greedy_clusters
from clustering.knn.exact import knn
from clustering.topics import TopicConfig, fit_topics, hdbscan_dense
from clustering.weighted_hdbscan import condense_select, hdbscan_knn


def _planted(topics, per, d=32, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(topics, d))
    lab = np.repeat(np.arange(topics), per)
    x = c[lab] + noise * rng.normal(size=(topics * per, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32), lab


def test_topics_too_small_for_the_sample_are_found_on_the_cluster_centroids():
    # 150 well-separated topics of 40 chunks (6,000 chunks). A 1,000-chunk sample holds
    # 40 x 1,000 / 6,000 = 6.7 chunks of a topic, below min_cluster_size 10: the old sampled
    # step finds almost nothing. The greedy clusters (C = 8) are pure, so a topic is 5 clusters
    # of weight 8: 40 >= 10, every topic is found.
    x, lab = _planted(150, 40)
    nbrs, _ = knn(x, 20)
    res = greedy_clusters(nbrs, size=8, seed=0, vectors=x)
    assert all(len(set(lab[m].tolist())) == 1 for m in res.clusters)
    cfg = TopicConfig(min_cluster_size=10, sample_size=1000, assign_nprobe=0)
    old = fit_topics(x, [""] * len(x), cfg.model_copy(update={"method": "sample"}), clusters=res.clusters)
    new = fit_topics(x, [f"word{t} filler" for t in lab], cfg, clusters=res.clusters)
    assert old.method == "sample" and adjusted_rand_score(lab, old.labels) < 0.1 and old.coverage < 0.5
    assert new.method == "centroids" and adjusted_rand_score(lab, new.labels) >= 0.9
    assert len([t for t in new.sizes if t >= 0]) == 150 and new.coverage == 1.0
    for m in res.clusters:                                   # a cluster's chunks share its topic
        assert len(set(new.labels[m].tolist())) == 1
    # a chunk planted in the wrong cluster (another topic's direction) is an outlier of its topic: noise
    y = x.copy()
    y[res.clusters[0][0]] = x[res.clusters[-1][0]] if lab[res.clusters[-1][0]] != lab[res.clusters[0][0]] else -x[0]
    moved = fit_topics(y, [""] * len(y), cfg, clusters=res.clusters)
    assert moved.labels[res.clusters[0][0]] == -1 and (moved.labels[res.clusters[0][1:]] >= 0).all()
    assert all(new.keywords[t][0].startswith("word") for t in new.sizes if t >= 0)   # every topic has keywords
    # without clusters (random grouping) the sample path runs
    assert fit_topics(x, [""] * len(x), cfg).method == "sample"


def test_weights_count_as_chunks():
    # two tight pairs far apart; each point stands for 8 chunks: a pair weighs 16 >= 10 (a topic),
    # unit weights give pairs of 2 < 10 (noise). A single point is never a topic on its own.
    x = np.array([[1, 0, 0], [0.99, 0.141, 0], [0, 1, 0], [0, 0.99, 0.141]], dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    labels, probs = hdbscan_knn(x, np.full(4, 8), min_cluster_size=10)
    assert labels[0] == labels[1] != labels[2] == labels[3] and labels.min() == 0
    assert np.all(probs > 0)
    assert (hdbscan_knn(x, None, min_cluster_size=10)[0] == -1).all()
    assert (hdbscan_knn(x[:2], np.array([30, 1]), min_cluster_size=10)[0] == -1).all()


def test_condense_select_with_unit_weights_is_hdbscan():
    import hdbscan
    from hdbscan.hdbscan_ import _tree_to_labels
    x, _ = _planted(6, 100, d=8, noise=0.6, seed=4)
    sl = hdbscan.HDBSCAN(min_cluster_size=10, algorithm="prims_kdtree").fit(x).single_linkage_tree_.to_numpy()
    ref_labels, ref_probs, *_ = _tree_to_labels(x, sl, 10)
    labels, probs = condense_select(sl, np.ones(len(x)), 10)
    assert adjusted_rand_score(ref_labels, labels) == 1.0 and np.array_equal(ref_labels < 0, labels < 0)
    assert np.allclose(probs, ref_probs, atol=1e-6)


def test_knn_graph_tree_agrees_with_the_exact_tree():
    # 8 topics of ~90 points, k = 16: the kNN graph falls apart into its topics, the bridges join
    # them as the exact tree does (joined at infinite distance instead, one such case found 4 of 7
    # topics: a component holding several topics is born at lambda 0 and outweighs them). Not
    # identical: mutual reachability has many tied weights (a core distance repeats), and tied
    # merges in another order condense differently (the dense tree and hdbscan's differ as well).
    rng = np.random.default_rng(4)
    agree = []
    for _ in range(6):
        c = rng.normal(size=(8, 16))
        lab = rng.integers(0, 8, 700)
        x = c[lab] + 0.5 * rng.normal(size=(700, 16))
        x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
        exact, _ = hdbscan_dense(x, 10)
        labels, _ = hdbscan_knn(x, None, 10, k=16)
        assert abs(int(labels.max()) - int(exact.max())) <= 1
        agree.append(adjusted_rand_score(exact, labels))
    assert min(agree) >= 0.85 and np.mean(agree) >= 0.95


def _stage_run(tmp_path):
    from tests.clustering.test_cluster_stage_scale import _run
    return _run(tmp_path)


def test_stage_warns_when_topics_cover_less_than_half_of_the_chunks(tmp_path, caplog):
    from clustering.stages import cluster
    from flows.config import MTRConfig
    store, _ = _stage_run(tmp_path)    # 600 chunks around 12 centres
    good = cluster(store, MTRConfig.model_validate({"cluster": {"k": 20},
                                                    "topics": {"min_cluster_size": 10, "sample_size": 100}}))
    assert good["topic_method"] == "centroids" and good["topic_coverage"] >= 0.5 and "topics_warning" not in good
    assert good["topics"] >= 6
    caplog.set_level(logging.WARNING, logger="clustering.topics")
    bad = cluster(store, MTRConfig.model_validate({"cluster": {"k": 20}, "topics": {"min_cluster_size": 700}}))
    assert bad["topic_method"] == "full" and bad["topics"] == 0 and bad["topic_coverage"] == 0.0
    assert bad["topics_warning"].startswith("topics cover 0.0% of the 600 chunks")
    assert any(r.levelno == logging.WARNING and "no far topic switches" in r.getMessage() for r in caplog.records)
    rnd = cluster(store, MTRConfig.model_validate({"cluster": {"k": 20, "grouping": "random"},
                                                   "topics": {"min_cluster_size": 10, "sample_size": 100}}))
    assert rnd["topic_method"] == "sample"
