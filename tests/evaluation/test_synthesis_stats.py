"""Grouping-ablation statistics of a synthesis run (hand-computed values)."""
import math

import numpy as np
import pytest

from evaluation.synthesis_stats import group_cohesion, switch_distances, uniqueness_per_turn, verifier_failure_share

TURNS = [{"sample_id": "c1:1", "status": "ok", "answerability": "ANSWERABLE"},
         {"sample_id": "c1:2", "status": "failed", "answerability": "ANSWERABLE"},
         {"sample_id": "c1:3", "status": "failed", "answerability": "ANSWERABLE"},
         {"sample_id": "c1:4", "status": "ok", "answerability": "UNANSWERABLE"},
         {"sample_id": "c2:1", "status": "ok", "answerability": "ANSWERABLE"}]


def test_failure_share_and_uniqueness_per_turn():
    failures = [{"sample_id": "c1:2", "step": "verifier"}, {"sample_id": "c1:3", "step": "questioner"},
                {"sample_id": "c1:1", "step": "verifier"}]          # a retried turn that then passed: not failed
    assert verifier_failure_share(TURNS, failures) == pytest.approx(1 / 5)
    qrels = [{"sample_id": "c1:1", "provenance": "gold"}, {"sample_id": "c1:1", "provenance": "uniqueness"},
             {"sample_id": "c2:1", "provenance": "uniqueness"}, {"sample_id": "c2:1", "provenance": "uniqueness"},
             {"sample_id": "c1:2", "provenance": "uniqueness"}]     # failed turn: not counted
    assert uniqueness_per_turn(TURNS, qrels) == pytest.approx(3 / 2)    # 3 extra positives over c1:1 and c2:1
    assert math.isnan(verifier_failure_share([], []))


def test_cohesion_and_switch_distance_hand_computed():
    v = np.array([[1, 0], [0, 1], [1, 1], [3, 0]], dtype=float)
    # group (0, 1): cos = 0; group (0, 2, 3): cos(0,2) = cos(2,3) = 1/sqrt2, cos(0,3) = 1 -> (sqrt2 + 1) / 3
    assert group_cohesion([[0, 1], [0, 2, 3], [1]], v) == pytest.approx((0 + (math.sqrt(2) + 1) / 3) / 2)
    groups = {0: [0, 3], 1: [1], 2: [0, 1]}
    convs = [{"cluster_id": 0, "switch_cluster_id": 1}, {"cluster_id": 0, "switch_cluster_id": 2},
             {"cluster_id": 1, "switch_cluster_id": None}]
    # (1,0) vs (0,1): 1 - 0 = 1; (1,0) vs the centroid of (1,0),(0,1) = 45 degrees: 1 - 1/sqrt2
    assert switch_distances(convs, groups, v) == pytest.approx([1.0, 1 - 1 / math.sqrt(2)])
