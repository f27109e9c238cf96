"""Graph behaviour on tiny hand-made corpora: verifier loop, uniqueness (extra positives and
regeneration), standalone question after a topic switch, unanswerable turns."""
import asyncio
import json
import pytest

from agents.config import LLMConfig
from agents.testing.fake_server import Reply
from agents.session import LLMSession
from agents.synth.config import SynthConfig
from agents.synth.graph import GraphContext, build_graph
from agents.synth.run import ConvPlan, assemble
from storage.store import RunStore
from agents.testing.fake_roles import fake_llm_config

BERLIN = ("The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989. "
          "It was built by the German Democratic Republic. Its fall in November 1989 was a pivotal event.")
PIGS = ("Guinea pigs are large rodents of the genus Cavia. They originated in the Andes of South America. "
        "Guinea pigs were domesticated about 5000 BC for food.")
CELTS = ("The Celts were a collection of Indo-European peoples in Europe. Celtic languages such as Irish and "
         "Welsh are still spoken. The Celts built hillforts across Britain.")
CORPUS = {"berlin": {"doc_id": "d1", "title": "Berlin Wall", "text": BERLIN},
          "berlin_dup": {"doc_id": "d9", "title": "Berlin Wall (copy)", "text": "Copy. " + BERLIN},
          "pigs": {"doc_id": "d2", "title": "Guinea pig", "text": PIGS},
          "celts": {"doc_id": "d3", "title": "Celts", "text": CELTS}}


def _plan(pool, n_turns=1, switch_turn=None, switch_pool=(), unans=()):
    return ConvPlan(conv_id="c1", seed=0, n_turns=n_turns, cluster_id=0, topic_id=0, pool=tuple(pool),
                    switch_turn=switch_turn, switch_cluster_id=1 if switch_turn else None,
                    switch_topic_id=1 if switch_turn else None, switch_pool=tuple(switch_pool),
                    unanswerable_turns=tuple(unans))


def _run(plan, cfg, llm_cfg, search, store=None):
    async def main():
        async with LLMSession(llm_cfg, store=store, write_manifest=False) as llm:
            g = build_graph(GraphContext(corpus=CORPUS, llm=llm, search=search, cfg=cfg))
            return await g.ainvoke(plan.initial_state(), {"recursion_limit": 1000})
    return asyncio.run(main())


OFFLINE = LLMConfig(backend="offline")


def test_duplicate_passage_becomes_extra_positive(tmp_path):
    state = _run(_plan(["berlin"]), SynthConfig(turns=1, max_extra_positives=2), OFFLINE,
                 lambda q, k: ["berlin", "berlin_dup", "pigs"])
    (t,) = state["turns"]
    assert t["status"] == "ok" and t["gold_doc_ids"] == ["berlin"]
    assert [e["doc_id"] for e in t["extra_positives"]] == ["berlin_dup"]
    assert "fits the answer" in t["extra_positives"][0]["reason"]
    store = RunStore(str(tmp_path / "r"))
    assemble(store, [_plan(["berlin"])], {"c1": state}, SynthConfig())
    qrels = store.read_table("qrels").to_pylist()
    assert {(q["doc_id"], q["provenance"]) for q in qrels} == {("berlin", "gold"), ("berlin_dup", "uniqueness")}


def test_ambiguous_question_is_regenerated_then_recorded_failed():
    cfg = SynthConfig(turns=1, max_extra_positives=0, max_attempts=3)
    state = _run(_plan(["berlin"]), cfg, OFFLINE, lambda q, k: ["berlin", "berlin_dup"])
    (t,) = state["turns"]
    assert t["status"] == "failed" and t["verifier_attempts"] == 3
    assert "uniqueness: 1 other passages also answer" in t["failure_reason"]
    assert state["failures"][0]["sample_id"] == "c1:1"
    # the regenerate policy with no other answering passage accepts the turn
    ok = _run(_plan(["berlin"]), SynthConfig(turns=1, uniqueness_policy="regenerate"), OFFLINE,
              lambda q, k: ["berlin", "pigs"])
    assert ok["turns"][0]["status"] == "ok" and ok["turns"][0]["extra_positives"] == []


def test_verifier_loop_sends_reason_back_to_questioner(role_server):
    role_server.on("data-quality reviewer", Reply.json({"reason": "the answer invents a date", "answerable": True,
                                                        "faithful": False, "novel": True}))
    state = _run(_plan(["berlin"]), SynthConfig(turns=1), fake_llm_config(role_server), lambda q, k: ["berlin"])
    (t,) = state["turns"]
    assert t["status"] == "ok" and t["verifier_attempts"] == 2 and t["backend"] == "openai"
    qreqs = [r.text for r in role_server.requests if "write questions for a conversational" in r.text]
    assert len(qreqs) == 2
    assert "rejected: <feedback>verifier: the answer invents a date" in qreqs[1] and "rejected" not in qreqs[0]


def test_switch_turn_is_standalone_and_humanized_without_history(role_server):
    plan = _plan(["berlin"], n_turns=3, switch_turn=2, switch_pool=["pigs", "celts"])
    state = _run(plan, SynthConfig(turns=3), fake_llm_config(role_server), lambda q, k: [])
    t1, t2, t3 = state["turns"]
    assert [t["status"] for t in state["turns"]] == ["ok"] * 3
    assert (t1["is_switch"], t2["is_switch"], t3["is_switch"]) == (False, True, False)
    assert (t1["turns_since_switch"], t2["turns_since_switch"], t3["turns_since_switch"]) == (None, 0, 1)
    assert t2["gold_doc_ids"][0] in ("pigs", "celts") and t2["topic_id"] == 1
    qreqs = [r.text for r in role_server.requests if "write questions for a conversational" in r.text]
    assert "Conversation so far" not in qreqs[1] and "fully self-contained" in qreqs[1]
    history3 = qreqs[2].split("Passages:")[0]
    assert t1["question"] not in history3 and t2["question"] in history3   # turn 3 talks about the new topic
    hreqs = [r.text for r in role_server.requests if "rewrite questions the way real users" in r.text]
    assert len(hreqs) == 2 and "(no earlier turns)" in hreqs[0] and "(no earlier turns)" not in hreqs[1]
    assert t1["question"] == t1["question_original"]          # the first turn stays formal


def test_unanswerable_turn_has_no_qrels(tmp_path):
    plan = _plan(["berlin", "pigs"], n_turns=2, unans=[2])
    state = _run(plan, SynthConfig(turns=2), OFFLINE, lambda q, k: ["celts"])
    t1, t2 = state["turns"]
    assert t2["answerability"] == "UNANSWERABLE" and t2["gold_doc_ids"] == [] and t2["status"] == "ok"
    store = RunStore(str(tmp_path / "r"))
    assemble(store, [plan], {"c1": state}, SynthConfig())
    assert {q["sample_id"] for q in store.read_table("qrels").to_pylist()} == {"c1:1"}
    turns = store.read_table("turns").to_pylist()
    assert [t["sample_id"] for t in turns] == ["c1:1", "c1:2"]
    assert json.loads(turns[0]["prompt_versions"])["questioner"] == "questioner-v4"


def test_the_graph_runs_no_node_or_router_in_a_thread_pool(monkeypatch):
    """LangGraph runs a plain-function node or router of an async graph through a thread pool
    (a thread hop per turn and edge); every one of ours is a coroutine."""
    import langchain_core.runnables.config as lc_config
    hops = []
    orig = lc_config.run_in_executor

    async def counting(executor, func, *args, **kwargs):
        hops.append(getattr(func, "__name__", repr(func)))
        return await orig(executor, func, *args, **kwargs)
    monkeypatch.setattr(lc_config, "run_in_executor", counting)
    import langgraph._internal._runnable as lg_runnable
    monkeypatch.setattr(lg_runnable, "run_in_executor", counting)
    state = _run(_plan(["berlin", "pigs"], n_turns=2), SynthConfig(turns=2), OFFLINE, lambda q, k: ["berlin"])
    assert len(state["turns"]) == 2
    assert hops == []


JUNK = {"doc_id": "d8", "title": "", "text": "Home | Contact | Login"}


def test_nothing_to_ask_shows_other_passages_then_fails_with_the_reason(monkeypatch):
    """The offline questioner with nothing to ask of the shown passages (a navigation line) rejects the attempt
    rather than end the turn: the next attempt's selection shows another passage of the pool, and its best
    candidate is asked (an attempt with nothing to ask does not count as a rejected candidate). With nothing
    askable in the pool the turn is recorded failed after max_attempts plus empty_attempts_extra (attempts that
    had nothing to ask rejected nothing), with the reason."""
    import agents.synth.offline.questioning as oq
    corpus = {**CORPUS, "junk": JUNK}
    seen = []
    real_ask = oq.ask

    def spy(x):
        seen.append(([p["doc_id"] for p in x["passages"]], x["attempt"]))
        return real_ask(x)
    monkeypatch.setattr(oq, "ask", spy)

    def run(pool, seed):
        plan = ConvPlan(conv_id=f"c{seed}", seed=seed, n_turns=1, cluster_id=0, topic_id=0, pool=tuple(pool),
                        switch_turn=None, switch_cluster_id=None, switch_topic_id=None, switch_pool=(),
                        unanswerable_turns=())

        async def main():
            async with LLMSession(OFFLINE, write_manifest=False) as llm:
                cfg = SynthConfig(turns=1, shown_passages=1, max_attempts=3, max_extra_positives=0)
                g = build_graph(GraphContext(corpus=corpus, llm=llm, search=lambda q, k: [], cfg=cfg))
                return await g.ainvoke(plan.initial_state(), {"recursion_limit": 1000})
        return asyncio.run(main())["turns"][0]

    turns = [run(["junk", "berlin"], seed) for seed in range(6)]
    assert all(t["status"] == "ok" and t["gold_doc_ids"] == ["berlin"] for t in turns)
    assert any(t["verifier_attempts"] > 1 for t in turns)       # the junk passage was shown first at least once
    assert ["berlin"] in [ids for ids, _ in seen] and all(a == 0 for ids, a in seen if ids == ["berlin"])
    (t,) = [run(["junk"], 0)]
    assert t["status"] == "failed" and t["verifier_attempts"] == 3 + SynthConfig().empty_attempts_extra == 6
    assert t["failure_reason"].startswith("no accepted question after 6 attempts; last: no question left")


def test_only_attempts_with_nothing_to_ask_get_extra_tries():
    from agents.synth.graph import _after_call
    # a candidate rejected on each of 3 attempts: the turn ends
    assert _after_call({"attempt": 2, "empty_attempts": 0, "cand": None}, 3, "answer", 3) == "commit"
    assert _after_call({"attempt": 1, "empty_attempts": 0, "cand": None}, 3, "answer", 3) == "retry"
    # two of them had nothing to ask: two more tries, up to the extra budget
    assert _after_call({"attempt": 2, "empty_attempts": 2, "cand": None}, 3, "answer", 3) == "retry"
    assert _after_call({"attempt": 4, "empty_attempts": 2, "cand": None}, 3, "answer", 3) == "commit"
    assert _after_call({"attempt": 5, "empty_attempts": 6, "cand": None}, 3, "answer", 3) == "commit"
    assert _after_call({"attempt": 2, "empty_attempts": 2, "cand": None}, 3, "answer", 0) == "commit"
    assert _after_call({"attempt": 0, "cand": {"q": 1}}, 3, "answer", 3) == "answer"
    # looks at other passages for a follow-up that leans on the conversation use up no attempt
    assert _after_call({"attempt": 2, "empty_attempts": 0, "thread_looks": 2, "cand": None}, 3, "answer", 3) == "retry"
    assert _after_call({"attempt": 4, "empty_attempts": 0, "thread_looks": 2, "cand": None}, 3, "answer", 3) == "commit"
    assert _after_call({"attempt": 6, "empty_attempts": 2, "thread_looks": 2, "cand": None}, 3, "answer", 3) == "commit"
    assert _after_call({"attempt": 5, "empty_attempts": 2, "thread_looks": 2, "cand": None}, 3, "answer", 3) == "retry"


def test_an_extra_attempt_takes_no_follow_up_asked_in_full():
    """An attempt past max_attempts (the earlier ones had nothing to ask) looks for the conversation's thread: a
    follow-up that could only be asked in full is not taken there (the same candidate is once the thread looks are
    spent)."""
    from agents.synth.offline.questioning import THREAD_LOOKS, ask
    from agents.synth.questioner import NothingToAsk
    seg = [{"question": "When was the Berlin Wall built?", "standalone_question": "When was the Berlin Wall built?",
            "answer": "1961. The Berlin Wall was built in 1961.", "title": "Berlin Wall",
            "gold_text": "The Berlin Wall was built in 1961."}]
    x = {"passages": [{"doc_id": "p", "title": "Checkpoint Charlie", "text": "Checkpoint Charlie was the best-known "
                       "crossing point between East Berlin and West Berlin during the Cold War. The Allies built it in "
                       "1961."}],
         "segment": seg, "previous_standalone": ["When was the Berlin Wall built?"], "previous_questions": [],
         }
    x["thread_looks"] = THREAD_LOOKS
    assert ask(x)[1] == ask(x)[2]                         # asked in full on a normal attempt
    with pytest.raises(NothingToAsk):
        ask({**x, "extra_attempt": True})


def test_a_follow_up_looks_at_other_passages_before_it_is_asked_in_full():
    """With nothing in the shown passages that leans on the conversation, the questioner raises NoThread (other
    passages are shown, no attempt used up) up to THREAD_LOOKS times a turn, then asks in full; a follow-up that
    leans is asked on the first look, and an opening question never looks."""
    from agents.synth.offline.questioning import THREAD_LOOKS, ask
    from agents.synth.questioner import NoThread
    seg = [{"question": "When was the Berlin Wall built?", "standalone_question": "When was the Berlin Wall built?",
            "answer": "1961. The Berlin Wall was built in 1961.", "title": "Berlin Wall",
            "gold_text": "The Berlin Wall was built in 1961."}]
    other = {"doc_id": "p", "title": "Checkpoint Charlie", "text": "Checkpoint Charlie was the best-known crossing "
             "point between East Berlin and West Berlin during the Cold War. The Allies built it in 1961."}
    x = {"passages": [other], "segment": seg, "previous_standalone": ["When was the Berlin Wall built?"],
         "previous_questions": []}
    assert THREAD_LOOKS >= 1
    for looks in range(THREAD_LOOKS):
        with pytest.raises(NoThread, match=f"look {looks + 1} of {THREAD_LOOKS}"):
            ask({**x, "thread_looks": looks})
    _, asked, standalone, _ = ask({**x, "thread_looks": THREAD_LOOKS})
    assert asked == standalone and "Checkpoint Charlie" in asked
    # a passage of the conversation's page: the follow-up leans on it at once
    wall = {"doc_id": "w", "title": "Berlin Wall", "text": "The Berlin Wall divided Berlin from 1961 to 1989. The "
            "Berlin Wall was demolished in 1990 by the East German government."}
    lean = {**x, "passages": [wall], "offline": {"pronoun_share": 1.0, "short_share": 0.0, "ellipsis_share": 0.0}}
    _, asked, standalone, _ = ask(lean)
    assert asked != standalone
    # an opening question has no thread to look for
    _, asked, standalone, _ = ask({**lean, "segment": [], "previous_standalone": [], "standalone": True})
    assert asked == standalone


def test_a_thread_look_is_counted_apart_from_the_attempts():
    """questioner.node records a NoThread failure in ``thread_looks`` (not ``empty_attempts``), and the inputs of
    the next attempt leave the looks out of the candidate index and of the extra-attempt test."""
    import types

    from agents.results import LLMFailure
    from agents.synth import questioner
    from agents.synth.config import SynthConfig

    class Res:
        ok = False
        usage = types.SimpleNamespace(prompt_tokens=0, completion_tokens=0)
        step, prompt_version, backend, model = "questioner", "v", "offline", "offline"

        def __init__(self, cls):
            self.failure = LLMFailure("offline_error", "no follow-up ...", error_class=cls)

    class LLM:
        def __init__(self, cls):
            self.cls = cls

        async def run(self, step, x, item_id=None):
            return Res(self.cls)

    class Ctx:
        def __init__(self, cls):
            self.llm, self.cfg, self.corpus = LLM(cls), SynthConfig(), {}
            self.search = self.need_search = None
            self.idf = {}
    state = {"conv_id": "c", "turn": 2, "attempt": 1, "thread_looks": 1, "empty_attempts": 0, "shown": [],
             "seed": 0, "turns": [], "unanswerable_turns": []}
    upd = asyncio.run(questioner.node(Ctx("NoThread"), state))
    assert upd["thread_looks"] == 2 and "empty_attempts" not in upd and upd["cand"] is None
    upd = asyncio.run(questioner.node(Ctx("NothingToAsk"), state))
    assert upd["empty_attempts"] == 1 and "thread_looks" not in upd
    x = questioner.inputs(Ctx("NoThread"), {**state, "attempt": 4, "thread_looks": 2, "empty_attempts": 1,
                                            "switch_turn": None, "pool": []})
    assert x["attempt"] == 1 and x["thread_looks"] == 2 and not x["extra_attempt"]
    x = questioner.inputs(Ctx("NoThread"), {**state, "attempt": 5, "thread_looks": 2, "empty_attempts": 0,
                                            "switch_turn": None, "pool": []})
    assert x["extra_attempt"]


def test_an_extra_attempt_takes_only_a_follow_up_that_needs_the_conversation():
    from agents.synth.offline.questioning import ask
    from agents.synth.questioner import NothingToAsk

    class Need:
        weight = 3.0

        def __init__(self, gain):
            self.gain = gain

        def __call__(self, gold, asked, standalone):
            return 0.0 if asked == standalone else self.gain
    seg = [{"question": "When was the Berlin Wall built?", "standalone_question": "When was the Berlin Wall built?",
            "answer": "1961. The Berlin Wall was built in 1961.", "title": "Berlin Wall",
            "gold_text": "The Berlin Wall was built in 1961."}]
    x = {"passages": [{"doc_id": "w", "title": "Berlin Wall", "text": "The Berlin Wall divided Berlin from 1961 to "
                       "1989. The Berlin Wall was demolished in 1990 by the East German government."}],
         "segment": seg, "previous_standalone": ["When was the Berlin Wall built?"], "previous_questions": [],
         "offline": {"pronoun_share": 1.0, "short_share": 0.0, "ellipsis_share": 0.0}}
    _, asked, standalone, _ = ask({**x, "need": Need(1.0), "extra_attempt": True})
    assert asked != standalone                           # it leans, and the search needs the conversation to find it
    with pytest.raises(NothingToAsk):
        ask({**x, "need": Need(0.0), "extra_attempt": True})      # its own words find it: not on an extra attempt
    assert ask({**x, "need": Need(0.0)})[1] == asked                # (on a first attempt it is asked)
