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


# --- the previous gold's page outside the cluster (synth.focus_page) ---
PAGE_CORPUS = {
    **CORPUS,
    "a3": {"title": "object storage ", "text": "Versioning keeps every copy of an object in a bucket."},   # same page, not in POOL
    "x1": {"doc_id": "manual", "title": "", "text": "Install the agent. Restart the host."},
    "x2": {"doc_id": "manual", "title": "", "text": "Configure the agent after the host restarts."},
    "y1": {"doc_id": "other", "title": "", "text": "Unrelated text about billing."},
}


def test_page_index_groups_by_title_else_by_document_and_drops_single_passages():
    from agents.synth.turn import page_index, page_key
    pages = page_index(PAGE_CORPUS)
    assert pages["t:object storage"] == ("a1", "a2", "a3")         # title case-folded and stripped
    assert pages["d:manual"] == ("x1", "x2")                       # no title: the chunks of one document
    assert page_key(PAGE_CORPUS["y1"]) == "d:other" and "d:other" not in pages
    assert "t:key protect" not in pages                           # one passage: no page to stay on


def test_a_follow_up_may_stay_on_the_previous_golds_page_outside_the_cluster():
    from agents.synth.turn import page_index
    pages = page_index(PAGE_CORPUS)
    pool = ["a1", "b1", "c1", "d1", "e1", "f1"]                     # the cluster holds one passage of the page
    st = {**_state(3, [_ok(1, ["c1"]), _ok(2, ["a1"])]), "pool": pool}
    alone = focus_passages(PAGE_CORPUS, st, pool, 2)
    assert alone[0] == "a1" and alone[1] in pool                    # without pages: the cluster only
    assert focus_passages(PAGE_CORPUS, st, pool, 2, pages) == ["a1", "a2"]   # a2, a3: the page, not the cluster
    assert focus_passages(PAGE_CORPUS, st, pool, 3, pages) == ["a1", "a2", "a3"]
    # the next turn keeps its focus on the page passage it was asked from, though it is not in the pool
    st2 = {**_state(4, [_ok(1, ["c1"]), _ok(2, ["a1"]), _ok(3, ["a3"])]), "pool": pool}
    assert focus_passages(PAGE_CORPUS, st2, pool, 3, pages) == ["a3", "a2", "a1"]   # a2 shares more words
    assert focus_passages(PAGE_CORPUS, st2, pool, 2)[0] == "a1"     # the cluster only: the last gold inside it
    ctx = SimpleNamespace(corpus=PAGE_CORPUS, cfg=SynthConfig(shown_passages=4, focus_passages=2),
                          pages=pages, views={})
    shown = asyncio.run(select(ctx, st))["shown"]
    assert {"a1", "a2"} <= set(shown) and len(set(shown)) == 4 and set(shown) - {"a2"} <= set(pool)
    off = SimpleNamespace(corpus=PAGE_CORPUS, cfg=SynthConfig(shown_passages=4, focus_passages=2, focus_page=False),
                          pages=pages, views={})
    assert set(asyncio.run(select(off, st))["shown"]) <= set(pool)


def test_a_turns_candidate_list_is_its_cluster_plus_gold_from_outside_it():
    from storage.benchmark.ours import _candidates
    assert _candidates(("a", "b"), ["b"]) == ("a", "b")
    assert _candidates(("a", "b"), ["z", "a"]) == ("a", "b", "z")
    assert _candidates((), ["z"]) == ()


REL_CORPUS = {
    "w1": {"title": "Berlin Wall", "text": "The wall divided Berlin from 1961 to 1989."},
    "w2": {"title": "Berlin Wall", "text": "The Berlin Wall fell in November 1989."},          # its own page
    "h1": {"title": "History of Germany (1945–90)", "text": "East Germany built the Berlin Wall in 1961."},
    "h2": {"title": "East Germany", "text": "The Berlin  Wall stood for 28 years."},           # spacing differs
    "s1": {"title": "Wall Street", "text": "Wall Street is in New York; Berlin has a stock exchange too."},
    "p1": {"title": "Potsdam", "text": "Potsdam is near Berlin."},
    "p2": {"title": "Spree", "text": "The Spree flows through Berlin."},
    "p3": {"title": "Tempelhof", "text": "Tempelhof was an airport in Berlin."},
}


def test_a_follow_up_is_shown_a_passage_of_another_page_that_names_the_page_it_is_on():
    """``focus_related``: besides the previous gold and its nearest passage, a passage of *another* page whose
    text names the previous gold's page (found by the corpus search for the page's name) is shown, so the
    conversation can move to a related article without leaving its subject; one the search finds that does
    not name the page, one of the same page, and one already gold are not taken."""
    from agents.synth.turn import page_name, related_passages, select
    assert page_name("History of Germany (1945–90)") == "History of Germany" and page_name("Berlin Wall") == "Berlin Wall"
    hits = ["w2", "s1", "h1", "h2", "p1"]                 # the search's order: same page, no name, then the two
    st = {**_state(2, [_ok(1, ["w1"])]), "pool": ["w1", "p1", "p2", "p3", "s1"]}
    assert related_passages(REL_CORPUS, st, ["w1"], hits, 1) == ["h1"]
    assert related_passages(REL_CORPUS, st, ["w1"], hits, 3) == ["h1", "h2"]          # names it across spacing
    st_used = {**_state(3, [_ok(1, ["h1"]), _ok(2, ["w1"])]), "pool": st["pool"]}
    assert related_passages(REL_CORPUS, st_used, ["w1"], hits, 1) == ["h2"]           # h1 was gold already
    # an untitled passage (a forum answer) relates through its main concept: "wall", named by w2, s1 and h1
    untitled = {**REL_CORPUS, "w1": {"title": "", "text": "The wall divided Berlin. The wall stood until 1989."}}
    assert related_passages(untitled, st, ["w1"], hits, 3) == ["w2", "s1", "h1"]
    nothing = {**REL_CORPUS, "w1": {"title": "", "text": "It did."}}              # no title, no concept: none
    assert related_passages(nothing, st, ["w1"], hits, 3) == []

    asked: list[str] = []

    def search(q, k):
        asked.append(q)
        return hits[:k]
    ctx = SimpleNamespace(corpus=REL_CORPUS, cfg=SynthConfig(shown_passages=4, focus_passages=2), pages={}, views={},
                          related={}, search=search)
    shown = asyncio.run(select(ctx, st))["shown"]
    assert "w1" in shown and "h1" in shown and len(set(shown)) == 4
    assert asyncio.run(select(ctx, {**st, "attempt": 1}))["shown"] is not None
    assert asked == ["Berlin Wall"]                      # one search per page name (kept in ctx.related)
    off = SimpleNamespace(corpus=REL_CORPUS, cfg=SynthConfig(shown_passages=4, focus_passages=2, focus_related=0),
                          pages={}, views={}, related={}, search=search)
    assert "h1" not in asyncio.run(select(off, st))["shown"]
    # a one-word name is matched with its capital, unless its own page writes it as a common noun
    words = {"f1": {"title": "Friends", "text": "Friends is an American sitcom. Friends aired on NBC."},
             "f2": {"title": "Loneliness", "text": "People with few friends may feel lonely."},
             "f3": {"title": "Jennifer Aniston", "text": "Aniston starred in Friends for ten seasons."},
             "v1": {"title": "Virus", "text": "A virus replicates only inside the living cells of an organism."},
             "v2": {"title": "Vaccine", "text": "A vaccine trains the immune system against a virus."}}
    assert related_passages(words, st, ["f1"], ["f2", "f3"], 2) == ["f3"]
    assert related_passages(words, st, ["v1"], ["v2"], 1) == ["v2"]
    first = asyncio.run(select(ctx, _state(1)))["shown"]      # the first turn has no page to relate to
    assert set(first) <= set(POOL)


def test_a_look_after_a_selection_miss_is_shown_the_next_nearest_passages():
    """After an attempt whose passages had nothing to ask, or nothing that leans on the conversation (the
    ``thread_looks`` and ``empty_attempts`` of the turn), the focus keeps the previous gold and moves on to its
    next-nearest passages (from the start again past the end), and the related passages likewise; a rejected
    attempt (no miss) keeps its focus, and once the looks are spent the follow-up asked in full is asked of the
    nearest passages again (the article it is on, not the farthest window looked at)."""
    from agents.synth.state import THREAD_LOOKS
    from agents.synth.turn import related_passages
    corpus = {"g": {"title": "Hudson River", "text": "The Hudson River flows south."},
              "n1": {"title": "Hudson River", "text": "The Hudson River flows south past Albany."},
              "n2": {"title": "Hudson River", "text": "The Hudson River is an estuary."},
              "n3": {"title": "Hudson Valley", "text": "The Hudson Valley lies along the river."},
              "z": {"title": "Zebra", "text": "Zebras live in Africa."}}
    pool = sorted(corpus)
    st = {**_state(2, [_ok(1, ["g"])]), "pool": pool}
    assert focus_passages(corpus, st, pool, 2) == ["g", "n1"]
    assert focus_passages(corpus, st, pool, 2, skip=1) == ["g", "n2"]
    assert focus_passages(corpus, st, pool, 3, skip=1) == ["g", "n3", "z"]
    assert focus_passages(corpus, st, pool, 2, skip=4) == ["g", "n1"]          # past the end: from the start
    assert focus_passages(corpus, st, pool, 1, skip=3) == ["g"]
    hits = ["h1", "w2", "h2", "p1"]
    rel = {**REL_CORPUS}
    st_rel = {**_state(2, [_ok(1, ["w1"])]), "pool": ["w1", "p1"]}
    assert related_passages(rel, st_rel, ["w1"], hits, 1, skip=1) == ["h2"]
    assert related_passages(rel, st_rel, ["w1"], hits, 1, skip=2) == ["h1"]
    ctx = SimpleNamespace(corpus=corpus, cfg=SynthConfig(shown_passages=2, focus_passages=2, focus_related=0),
                          pages={}, views={})
    assert set(asyncio.run(select(ctx, {**st, "attempt": 1}))["shown"]) == {"g", "n1"}      # a rejection: same focus
    assert set(asyncio.run(select(ctx, {**st, "attempt": 1, "thread_looks": 1}))["shown"]) == {"g", "n2"}
    assert set(asyncio.run(select(ctx, {**st, "attempt": 2, "thread_looks": 1, "empty_attempts": 1}))["shown"]) \
        == {"g", "n3"}
    spent = {**st, "attempt": THREAD_LOOKS, "thread_looks": THREAD_LOOKS}
    assert set(asyncio.run(select(ctx, spent))["shown"]) == {"g", "n1"}
    assert set(asyncio.run(select(ctx, {**spent, "attempt": THREAD_LOOKS + 1, "empty_attempts": 1}))["shown"]) \
        == {"g", "n2"}


def test_a_thread_look_is_shown_the_passages_the_search_finds_for_the_last_question():
    """After a look with nothing that leans on the conversation (``thread_looks``), the shown passages include
    ``thread_passages`` that the corpus search finds for the segment's last standalone question (not for the
    page's name), other than the gold passages and the focus; the first look and a rejected attempt (no look)
    are shown none, a second look the next ones, and after a switch the last question is the second topic's."""
    from agents.synth.turn import last_standalone, thread_passages
    corpus = {"g": {"title": "Annual fee", "text": "The annual fee is charged once a year."},
              "n1": {"title": "Annual fee", "text": "The annual fee appears on the first statement."},
              "p1": {"title": "Pricing", "text": "The annual fee costs $95 for the gold card."},
              "p2": {"title": "Waivers", "text": "The annual fee is waived in the first year."},
              "p3": {"title": "Refunds", "text": "An annual fee is refunded when the card is closed."},
              "z": {"title": "Zebra", "text": "Zebras live in Africa."},
              "y": {"title": "Yak", "text": "Yaks live in the Himalaya."}}
    ok = {**_ok(1, ["g"]), "standalone_question": "What is the annual fee?"}
    st = {**_state(2, [ok]), "pool": ["g", "n1", "z", "y"]}
    assert last_standalone(st) == "What is the annual fee?"
    hits = ["g", "p1", "n1", "p2", "p3"]
    assert thread_passages(st, ["g", "n1"], hits, 2) == ["p1", "p2"]
    assert thread_passages(st, ["g", "n1"], hits, 2, skip=1) == ["p3", "p1"]       # the next ones, wrapping round
    assert thread_passages(st, ["g"], hits, 0) == [] and thread_passages(st, ["g"], [], 2) == []
    asked: list[str] = []

    def search(q, k):
        asked.append(q)
        return hits[:k]
    ctx = SimpleNamespace(corpus=corpus, cfg=SynthConfig(shown_passages=4, focus_passages=2, focus_related=0),
                          pages={}, views={}, related={}, search=search)
    assert set(asyncio.run(select(ctx, {**st, "attempt": 1}))["shown"]) == {"g", "n1", "z", "y"}   # no look: none
    looked = asyncio.run(select(ctx, {**st, "attempt": 1, "thread_looks": 1}))["shown"]
    focus = focus_passages(corpus, st, st["pool"], 2, skip=1)
    assert focus[0] == "g" and set(looked) == {*focus, *thread_passages(st, focus, hits, 2)} and "p1" in looked
    assert asked == ["What is the annual fee?"]
    off = SimpleNamespace(**{**ctx.__dict__, "cfg": SynthConfig(shown_passages=4, focus_passages=2, focus_related=0,
                                                                 thread_passages=0)})
    assert not {"p1", "p2"} & set(asyncio.run(select(off, {**st, "attempt": 1, "thread_looks": 1}))["shown"])
    switched = {**_state(4, [ok, {**_ok(2, ["z"]), "standalone_question": "Where do zebras live?"},
                             {"turn": 3, "status": "failed", "gold_doc_ids": []}], switch_turn=2), "pool": ["g"]}
    assert last_standalone(switched) == "Where do zebras live?"
    assert last_standalone({**switched, "turn": 1, "turns": []}) == ""
