"""Complete conversations (agents.synth.replace): hand-made states for the rules, then the real offline graph for a
barren conversation replaced by a spare. One item per question (agents.synth.dedup): tests/reliability."""
from __future__ import annotations

from dataclasses import replace as dc_replace

import pytest

from agents.config import LLMConfig
from agents.synth.config import SynthConfig
from agents.synth.replace import complete_conversations, is_short, kept_share, replacement_cap
from agents.synth.run import ConvPlan, corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
from agents.accounting import read_calls
from storage.store import RunStore


def _plan(conv_id: str) -> ConvPlan:
    return ConvPlan(conv_id=conv_id, seed=0, n_turns=4, cluster_id=int(conv_id[1:]), topic_id=0, pool=("d1",),
                    switch_turn=None, switch_cluster_id=None, switch_topic_id=None, switch_pool=(),
                    unanswerable_turns=())


def _state(conv_id: str, ok: int, n: int = 4, done: bool = True) -> dict:
    return {"conv_id": conv_id, "done": done,
            "turns": [{"sample_id": f"{conv_id}:{i}", "turn": i, "status": "ok" if i <= ok else "failed"}
                      for i in range(1, n + 1)]}


class _Runner:
    """A scripted ``run``: each conversation keeps the given number of its 4 turns; records every round."""

    def __init__(self, kept: dict[str, int], stop_on: str | None = None):
        self.kept, self.stop_on, self.rounds = kept, stop_on, []

    def __call__(self, plans):
        self.rounds.append([p.conv_id for p in plans])
        stop = "token budget spent" if self.stop_on in {p.conv_id for p in plans} else None
        return {p.conv_id: _state(p.conv_id, self.kept[p.conv_id]) for p in plans}, stop


def test_kept_share_counts_finished_conversations_only():
    assert kept_share(_state("c1", 3)) == 0.75
    assert kept_share(_state("c1", 1, done=False)) is None and kept_share(None) is None
    assert is_short(_state("c1", 2), 0.75) and not is_short(_state("c1", 3), 0.75)
    assert not is_short(_state("c1", 0, done=False), 0.75)          # unfinished (a budget stop): not judged


def test_short_conversations_are_replaced_round_after_round_in_order():
    plans = [_plan("c1"), _plan("c2"), _plan("c3")]
    spares = [_plan("c7"), _plan("c8"), _plan("c9")]
    run = _Runner({"c1": 4, "c2": 1, "c3": 3, "c7": 2, "c8": 4, "c9": 4})
    out = complete_conversations(plans, spares, run, 0.75, max_replaced=3)
    # c2 (1/4) is replaced by c7 (2/4, short too), which is replaced by c8; c3 (3/4) meets the floor
    assert run.rounds == [["c1", "c2", "c3"], ["c7"], ["c8"]]
    assert [p.conv_id for p in out["plans"]] == ["c1", "c8", "c3"]        # the replacement takes the place
    assert out["replaced"] == [{"conv_id": "c2", "kept_share": 0.25, "replaced_by": "c7"},
                               {"conv_id": "c7", "kept_share": 0.5, "replaced_by": "c8"}]
    assert set(out["states"]) == {"c1", "c8", "c3"} and out["short_kept"] == [] and out["stopped"] is None


def test_the_cap_and_the_spares_bound_the_rounds_and_a_short_one_left_is_counted():
    plans = [_plan("c1"), _plan("c2")]
    run = _Runner({"c1": 0, "c2": 0, "c7": 0, "c8": 0})
    out = complete_conversations(plans, [_plan("c7"), _plan("c8")], run, 0.75, max_replaced=1)
    assert run.rounds == [["c1", "c2"], ["c7"]]
    assert [p.conv_id for p in out["plans"]] == ["c7", "c2"] and out["short_kept"] == ["c7", "c2"]
    none = complete_conversations(plans, [], _Runner({"c1": 0, "c2": 4}), 0.75, max_replaced=5)
    assert none["replaced"] == [] and none["short_kept"] == ["c1"]


def test_a_budget_stop_ends_the_rounds():
    run = _Runner({"c1": 0, "c7": 0, "c8": 4}, stop_on="c7")
    out = complete_conversations([_plan("c1")], [_plan("c7"), _plan("c8")], run, 0.75, max_replaced=5)
    assert run.rounds == [["c1"], ["c7"]] and out["stopped"] == "token budget spent"


def test_replacement_cap_rounds_up():
    assert replacement_cap(30, 0.25) == 8 and replacement_cap(4, 0.1) == 1 and replacement_cap(30, 0.0) == 0


def test_spare_plans_are_the_clusters_not_picked_in_pick_order():
    clusters = [{"cluster_id": c, "topic_id": c % 2, "position": 0, "chunk_id": f"d{c}"} for c in range(10)]
    cfg = SynthConfig(conversations=4, turns=3)
    chosen = plan_conversations(clusters, {}, cfg)
    spares = plan_conversations(clusters, {}, cfg, spares=3)
    assert len(chosen) == 4 and len(spares) == 3
    assert not {p.conv_id for p in chosen} & {p.conv_id for p in spares}
    more = plan_conversations(clusters, {}, cfg, spares=6)
    assert [p.conv_id for p in more[:3]] == [p.conv_id for p in spares]     # a fixed order: resumable
    assert len(more) == 6 and len(plan_conversations(clusters, {}, cfg, spares=50)) == 6


@pytest.mark.usefixtures("example_spine")
def test_a_barren_conversation_is_replaced_by_a_spare_and_a_rerun_repeats_no_call(spine_copy, example_spine):
    """A conversation asked for 8 turns of the shortest passage cannot keep them; the real offline graph replaces
    it."""
    store = RunStore(str(spine_copy))
    clusters, cvecs, corpus = load_plan_inputs(store)
    cfg = SynthConfig(conversations=2, turns=8, unanswerable_ratio=0.0, switch_ratio=0.0)
    plans = plan_conversations(clusters, cvecs, cfg)
    shortest = min(corpus, key=lambda c: (len(corpus[c]["text"].split()), c))
    barren = dc_replace(plans[0], pool=(shortest,))
    spares = plan_conversations(clusters, cvecs, cfg, spares=2)
    search = corpus_searcher(store, corpus, "bm25", example_spine["cfg"].embed.cache_dir)
    rounds = []

    def run(ps):
        rounds.append([p.conv_id for p in ps])
        out = synthesize_batch(store, ps, corpus, LLMConfig(backend="offline"), cfg, search)
        return out["states"], out["stopped"]

    out = complete_conversations([barren, plans[1]], spares, run, 0.75, 2)
    assert kept_share(run([barren])[0][barren.conv_id]) < 0.75
    assert out["replaced"] and out["replaced"][0]["conv_id"] == barren.conv_id
    assert barren.conv_id not in {p.conv_id for p in out["plans"]} and len(out["plans"]) == 2
    assert rounds[1] == [spares[0].conv_id]
    n_calls = read_calls(store).num_rows
    again = complete_conversations([barren, plans[1]], spares, run, 0.75, 2)
    assert read_calls(store).num_rows == n_calls                      # resumed from the checkpoints
    assert [p.conv_id for p in again["plans"]] == [p.conv_id for p in out["plans"]]


def _two_topics(n_big: int, n_small: int):
    """Clusters of a corpus of one big topic and one small one, on a line: cluster c's vector is far from the
    clusters far down the line (the small topic at its far end)."""
    import numpy as np
    ids = list(range(n_big + n_small))
    clusters = [{"cluster_id": c, "topic_id": 0 if c < n_big else 1, "position": 0, "chunk_id": f"d{c}"} for c in ids]
    vecs = {c: np.array([np.cos(c / len(ids) * 1.5), np.sin(c / len(ids) * 1.5)]) for c in ids}
    return clusters, vecs


def test_switches_spread_over_a_corpus_with_one_small_topic():
    """Conversations of a corpus whose other topic has 2 clusters do not all switch to them: each switch goes to a
    far cluster no other conversation is about or switches to, of the other topic first."""
    clusters, vecs = _two_topics(60, 2)
    cfg = SynthConfig(conversations=8, turns=6, switch_ratio=1.0)
    plans = plan_conversations(clusters, vecs, cfg)
    switches = [p.switch_cluster_id for p in plans]
    mains = {p.cluster_id for p in plans}
    assert None not in switches and len(set(switches)) == len(switches) and not set(switches) & mains
    assert 1 <= sum(s >= 60 for s in switches) <= 2     # the small topic's far cluster first, once
    assert plan_conversations(clusters, vecs, cfg) == plans                  # deterministic: resumable
    spares = plan_conversations(clusters, vecs, cfg, spares=4)
    assert not {p.switch_cluster_id for p in spares} & (set(switches) | mains)


def test_a_switch_goes_to_another_topic_when_it_has_clusters_enough():
    clusters, vecs = _two_topics(20, 20)
    plans = plan_conversations(clusters, vecs, SynthConfig(conversations=6, turns=6, switch_ratio=1.0))
    assert all((p.switch_cluster_id >= 20) != (p.cluster_id >= 20) for p in plans)
    assert len({p.switch_cluster_id for p in plans}) == len(plans)


def test_an_offline_run_on_a_corpus_in_another_language_says_why_it_asks_little():
    """The offline rules read English: a Korean corpus gets a warning that names its language and the way out (an
    LLM endpoint); an English corpus, or a questioner on an endpoint, gets none."""
    from agents.synth.run import offline_language_note
    korean = {f"k{i}": {"text": "에러 핸들링은 실패 가능성을 처리하는 과정입니다. 파일을 읽는 데 실패했는데도 잘못된 입력을 "
                                 "계속 사용하는 것은 분명히 문제가 될 것입니다."} for i in range(5)}
    english = {f"e{i}": {"text": "Error handling is the process of handling the possibility of failure. Reading a "
                                 "file can fail, and the program should say so."} for i in range(5)}
    note = offline_language_note(korean, LLMConfig(backend="offline"))
    assert note and "'ko'" in note and "--llm-config" in note
    assert offline_language_note(english, LLMConfig(backend="offline")) is None
    from agents.config import EndpointConfig
    endpoint = LLMConfig(endpoints={"e": EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m")})
    assert offline_language_note(korean, endpoint) is None
