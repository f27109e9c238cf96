"""Ablation groupings (random, kNN ball) with hand-traced examples."""
import numpy as np
import pytest

from clustering.greedy import ClusterConfig
from clustering.grouping import knn_ball_groups, random_groups

# seed 0 visits seeds in the order 2 4 3 6 5 0 1 (np.random.default_rng(0).permutation(7))
NEIGHBOURS = np.array([[1, 2, 3], [0, 2, 3], [3, 0, 1], [2, 4, 0], [3, 5, 6], [6, 4, 3], [5, 4, 3]])


def test_knn_ball_hand_traced():
    assert list(np.random.default_rng(0).permutation(7)) == [2, 4, 3, 6, 5, 0, 1]
    # seed 2 takes 3 and 0; seed 4 takes 5 and 6 (3 is used); seed 1 finds 0, 2, 3 used -> a ball of 1,
    # pooled and added to the last ball (4 <= max 6)
    res = knn_ball_groups(NEIGHBOURS, size=3, seed=0)
    assert res.clusters == [[2, 3, 0], [4, 5, 6, 1]] and res.moved == 1 and res.short_clusters == []
    # no room (max 3): the leftover stays a reported short group
    res = knn_ball_groups(NEIGHBOURS, size=3, max_size=3, seed=0)
    assert res.clusters == [[2, 3, 0], [4, 5, 6], [1]] and res.short_clusters == [2]


def test_random_groups_partition_and_seed():
    res = random_groups(10, 4, seed=1)
    assert sorted(len(g) for g in res.clusters) == [4, 6]                 # 10 = 4 + 4 + 2 -> last gets the 2
    assert sorted(m for g in res.clusters for m in g) == list(range(10))
    order = list(np.random.default_rng(1).permutation(10))
    assert res.clusters[0] == order[:4] and res.clusters[1] == order[4:]
    assert random_groups(10, 4, seed=2).clusters != res.clusters
    assert random_groups(3, 4).clusters == [list(np.random.default_rng(0).permutation(3))]
    assert random_groups(3, 4).short_clusters == [0]


def test_grouping_is_a_cluster_setting():
    assert ClusterConfig().grouping == "greedy" and ClusterConfig(grouping="knn-ball").grouping == "knn-ball"
    with pytest.raises(ValueError):
        ClusterConfig(grouping="kmeans")


def test_synthesize_grouping_option_reaches_the_config():
    from flows.config import load_config
    from common.errors import UserError
    assert load_config(None, {"cluster.grouping": "knn-ball"}).cluster.grouping == "knn-ball"
    with pytest.raises(UserError, match="cluster.grouping"):
        load_config(None, {"cluster.grouping": "kmeans"})
    from typer.testing import CliRunner
    from flows.cli import app
    r = CliRunner().invoke(app, ["synthesize", "--help"])
    assert "--grouping" in r.output
