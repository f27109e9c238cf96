"""Conversation plans: which cluster each conversation is about, its hard topic switch (turn and far cluster) and
its unanswerable turns, every decision a seeded hash of the run's seed and the conversation (:func:`unit`), so a
plan is the same whatever the order it is made in and a resumed run finds its checkpoints again."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.synth.config import SynthConfig


@dataclass(frozen=True)
class ConvPlan:
    conv_id: str
    seed: int
    n_turns: int
    cluster_id: int
    topic_id: int
    pool: tuple[str, ...]
    switch_turn: int | None
    switch_cluster_id: int | None
    switch_topic_id: int | None
    switch_pool: tuple[str, ...]
    unanswerable_turns: tuple[int, ...]

    @classmethod
    def from_dict(cls, d: dict) -> "ConvPlan":
        """The plan from :func:`dataclasses.asdict` output (e.g. a Prefect task parameter)."""
        tuples = ("pool", "switch_pool", "unanswerable_turns")
        return cls(**{k: tuple(v) if k in tuples else v for k, v in d.items()})

    def initial_state(self) -> dict:
        return {"conv_id": self.conv_id, "seed": self.seed, "n_turns": self.n_turns, "turn": 1,
                "pool": list(self.pool), "cluster_id": self.cluster_id, "topic_id": self.topic_id,
                "switch_turn": self.switch_turn, "switch_pool": list(self.switch_pool),
                "switch_cluster_id": self.switch_cluster_id, "switch_topic_id": self.switch_topic_id,
                "unanswerable_turns": list(self.unanswerable_turns), "attempt": 0, "feedback": None,
                "turns": [], "failures": [], "done": False}


def unit(*parts: Any) -> float:
    """A uniform [0,1) number from a stable hash (seeded decisions independent of order)."""
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12], 16) / float(1 << 48)


def plan_conversations(clusters: list[dict], cluster_vecs: dict[int, np.ndarray], cfg: SynthConfig,
                       spares: int = 0) -> list[ConvPlan]:
    """One conversation per selected cluster; seeded switches to a far cluster of another topic.
    ``spares`` > 0: instead, the plans of up to that many clusters that were not selected, in the seeded pick
    order (the replacements of :mod:`agents.synth.replace`)."""
    by_cluster: dict[int, list[tuple[int, str]]] = {}
    topic: dict[int, int] = {}
    for r in clusters:
        by_cluster.setdefault(int(r["cluster_id"]), []).append((int(r["position"]), r["chunk_id"]))
        topic[int(r["cluster_id"])] = int(r["topic_id"])
    ids = sorted(by_cluster)
    if not ids:
        raise ValueError("the run has no clusters; run `mtr cluster` first")
    pools = {c: tuple(cid for _, cid in sorted(m)) for c, m in by_cluster.items()}
    order = sorted(ids, key=lambda c: unit(cfg.seed, "pick", c))
    n = cfg.conversations or len(ids)
    used = set(order[:n])       # a switch goes to a cluster no other conversation is about (while there is one)
    plans = [_plan(c, ids, topic, pools, cluster_vecs, cfg, used) for c in sorted(order[:n])]
    if spares:
        used |= set(order[n:n + spares])
        plans = [_plan(c, ids, topic, pools, cluster_vecs, cfg, used) for c in order[n:n + spares]]
    return plans


def _switch_cluster(c: int, conv_id: str, ids: list[int], topic: dict[int, int], cluster_vecs: dict[int, np.ndarray],
                    seed: int, used: set[int]) -> int | None:
    """The cluster a conversation switches to: a seeded pick among the farthest third of the clusters of another
    topic (of all other clusters when no other topic has one), the next one in that order when another conversation
    is about the pick or switches to it. When the other topics' far
    clusters are all taken (a corpus of two or three topics, one of them small) the pick is among the farthest
    third of every other cluster instead: 30 conversations switching to the same cluster of the one small topic
    would repeat its passages in each."""
    v = cluster_vecs.get(c)

    def far(cands: list[int]) -> list[int]:
        if v is None:
            return cands
        return sorted(cands, key=lambda o: float(cluster_vecs[o] @ v))[: max(1, len(cands) // 3)]
    others = [o for o in ids if o != c]
    other_topic = [o for o in others if topic[o] != topic[c]]
    u = unit(seed, conv_id, "switch-cluster")
    for cands in (far(other_topic or others), far(others)):
        if not cands:
            continue
        start = int(u * len(cands))
        pick = next((cands[(start + k) % len(cands)] for k in range(len(cands))
                     if cands[(start + k) % len(cands)] not in used), None)
        if pick is not None:
            return pick
    return None


def _plan(c: int, ids: list[int], topic: dict[int, int], pools: dict[int, tuple[str, ...]],
          cluster_vecs: dict[int, np.ndarray], cfg: SynthConfig, used: set[int] | None = None) -> ConvPlan:
    """The plan of the conversation on cluster ``c``; its switch cluster is added to ``used``."""
    used = set() if used is None else used
    conv_id = f"c{c:05d}"
    T = cfg.turns
    switch_turn = sw_c = sw_t = None
    sw_pool: tuple[str, ...] = ()
    if T >= 3 and unit(cfg.seed, conv_id, "switch") < cfg.switch_ratio:
        sw_c = _switch_cluster(c, conv_id, ids, topic, cluster_vecs, cfg.seed, used)
        if sw_c is None:        # every other cluster is taken: one already switched to is a switch still
            sw_c = _switch_cluster(c, conv_id, ids, topic, cluster_vecs, cfg.seed, set())
        if sw_c is not None:
            used.add(sw_c)
            sw_t = topic[sw_c]
            sw_pool = pools[sw_c]
            switch_turn = 2 + int(unit(cfg.seed, conv_id, "switch-turn") * (T - 2))   # in [2, T-1]
    unans = tuple(t for t in range(2, T + 1) if cfg.unanswerable_ratio > 0
                  and unit(cfg.seed, conv_id, "unans", t) < cfg.unanswerable_ratio)
    return ConvPlan(conv_id=conv_id, seed=cfg.seed, n_turns=T, cluster_id=c, topic_id=topic[c],
                    pool=pools[c], switch_turn=switch_turn, switch_cluster_id=sw_c, switch_topic_id=sw_t,
                    switch_pool=sw_pool, unanswerable_turns=unans)
