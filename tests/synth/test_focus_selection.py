"""Evidence selection on follow-ups (agents/synth/turn.py): the previous gold and its nearest
pool passages are among the shown ones, the rest a seeded sample; first and switch turns uniform."""
import asyncio
from types import SimpleNamespace

from agents.synth.config import SynthConfig
from agents.synth.state import seeded_rng
from agents.synth.turn import focus_passages, select

CORPUS = {
    "a1": {"title": "Object Storage", "text": "Buckets hold objects. Create a bucket in the console."},
    "a2": {"title": "Object Storage", "text": "Delete a bucket after you empty it of objects."},
    "b1": {"title": "Key Protect", "text": "Root keys wrap data encryption keys for buckets."},
    "c1": {"title": "Schematics", "text": "Workspaces run Terraform templates."},
    "d1": {"title": "Code Engine", "text": "Applications scale to zero when idle."},
    "e1": {"title": "Event Streams", "text": "Topics are partitioned logs of messages."},
    "f1": {"title": "Satellite", "text": "Locations extend the cloud to your own data center."},
}
POOL = sorted(CORPUS)


def _state(turn, turns=(), switch_turn=None, attempt=0):
    return {"seed": 7, "conv_id": "c0", "turn": turn, "attempt": attempt, "pool": POOL,
            "switch_pool": POOL, "switch_turn": switch_turn, "turns": list(turns)}


def _ok(turn, gold):
    return {"turn": turn, "status": "ok", "gold_doc_ids": gold}


def _ctx(focus=2, shown=5):
    return SimpleNamespace(corpus=CORPUS, cfg=SynthConfig(shown_passages=shown, focus_passages=focus))


def test_follow_up_shows_the_previous_gold_and_its_same_title_neighbour():
    st = _state(3, [_ok(1, ["c1"]), _ok(2, ["a1"])])
    assert focus_passages(CORPUS, st, POOL, 2) == ["a1", "a2"]     # same title beats word overlap
    for attempt in range(4):
        shown = asyncio.run(select(_ctx(), {**st, "attempt": attempt}))["shown"]
        assert len(shown) == 5 == len(set(shown)) and {"a1", "a2"} <= set(shown) and set(shown) <= set(POOL)


def test_a_failed_last_turn_falls_back_to_the_last_accepted_gold():
    st = _state(4, [_ok(1, ["d1"]), _ok(2, ["e1"]), {"turn": 3, "status": "failed", "gold_doc_ids": []}])
    assert focus_passages(CORPUS, st, POOL, 1) == ["e1"]


def test_first_turn_switch_turn_and_zero_are_the_uniform_sample():
    assert focus_passages(CORPUS, _state(1), POOL, 2) == []
    st = _state(3, [_ok(1, ["a1"]), _ok(2, ["a2"])], switch_turn=3)
    assert focus_passages(CORPUS, st, POOL, 2) == []                # the switch turn is standalone
    # after the switch, the first topic's golds are not the focus; the second topic's are
    st2 = _state(5, [_ok(1, ["a1"]), _ok(2, ["a2"]), _ok(3, ["f1"]), _ok(4, ["b1"])], switch_turn=3)
    assert focus_passages(CORPUS, st2, POOL, 1) == ["b1"]
    st3 = _state(4, [_ok(1, ["a1"]), _ok(2, ["a2"]), {"turn": 3, "status": "failed", "gold_doc_ids": []}],
                 switch_turn=3)
    assert focus_passages(CORPUS, st3, POOL, 2) == []              # nothing accepted since the switch
    st4 = _state(3, [_ok(1, ["c1"]), _ok(2, ["a1"])])
    uniform = asyncio.run(select(_ctx(focus=0), st4))["shown"]
    assert uniform == seeded_rng(7, "c0", 3, 0).sample(POOL, 5)     # the reference's sample, unchanged


def test_selection_is_deterministic():
    st = _state(3, [_ok(1, ["c1"]), _ok(2, ["b1"])])
    a = asyncio.run(select(_ctx(), st))["shown"]
    assert a == asyncio.run(select(_ctx(), st))["shown"] and "b1" in a
