"""The quality gate (agents/synth/gate.py): each named check on hand-written turns, the fault scripts of the fake
server (agents/testing/fake_faults.py) landing as gate failures with their reasons while the other turns are
kept, and the offline backend's turns passing every check. With the gate off, the fault scripts' junk is stored as
ok turns (what the gate prevents)."""
from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from agents.config import LLMConfig
from agents.session import LLMSession
from agents.synth import gate as GT
from agents.synth.answerer import UNANSWERABLE_ANSWER
from agents.synth.config import GATE_CHECKS, GATE_PRESETS, GateConfig, SynthConfig
from agents.synth.graph import GraphContext, build_graph
from agents.synth.gate import gate_rejection_rows
from agents.synth.run import ConvPlan, assemble
from agents.testing.fake_faults import FAULTS, JUNK_ANSWER, FaultyRoleServer
from agents.testing.fake_roles import RoleScriptedServer, fake_llm_config
from storage.store import RunStore

BERLIN = ("The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989. "
          "It was built by the German Democratic Republic to stop emigration to the West. "
          "The wall cut off West Berlin from the surrounding East Germany and from East Berlin. "
          "Its fall in November 1989 was a pivotal event on the way to German reunification. "
          "Parts of the wall remain today as a memorial in the centre of the city.")
PIGS = ("Guinea pigs are large rodents of the genus Cavia that are kept as household pets. "
        "They originated in the Andes of South America, where they are still eaten. "
        "Guinea pigs were domesticated about 5000 BC for food by tribes in the Andean region. "
        "They need vitamin C in their diet because they cannot make it themselves. "
        "A healthy guinea pig lives for four to eight years.")
CELTS = ("The Celts were a collection of Indo-European peoples in Europe in the Iron Age. "
         "Celtic languages such as Irish and Welsh are still spoken in the British Isles today. "
         "The Celts built hillforts across Britain and Gaul as defended settlements. "
         "Their society was organised in tribes led by a warrior aristocracy and druids. "
         "Roman conquest ended most Celtic independence on the continent by the first century.")
CORPUS = {"berlin": {"doc_id": "d1", "title": "Berlin Wall", "text": BERLIN},
          "pigs": {"doc_id": "d2", "title": "Guinea pig", "text": PIGS},
          "celts": {"doc_id": "d3", "title": "Celts", "text": CELTS}}


def _x(question="When was the Berlin Wall built?", answer="It was built in 1961 by the German Democratic Republic.",
       standalone=None, passages=(BERLIN,), gold=("berlin",), unanswerable=False, history="") -> GT.GateInput:
    return GT.GateInput(question=question, standalone=standalone or question, answer=answer,
                        unanswerable=unanswerable, gold=list(gold), passages=list(passages), history=history,
                        known=CORPUS, language="en", script="LATIN")


def _fails(x, mode="default") -> dict[str, str]:
    return dict(GT.evaluate(x, GateConfig(mode=mode)))


# -- the checks, one by one ------------------------------------------------------------------------
def test_a_well_formed_turn_passes_every_check_in_both_modes():
    good = _x(question="Who built it?", standalone="Who built the Berlin Wall?",
              answer="It was built by the German Democratic Republic to stop emigration to the West.",
              history="When did the Berlin Wall divide Berlin? The Berlin Wall divided Berlin from 1961 to 1989.")
    assert _fails(good) == {} and _fails(good, "strict") == {}
    yes = _x(question="Is the Berlin Wall a guarded barrier?",
             answer="Yes. The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989.")
    assert _fails(yes) == {}                     # a yes/no question states what it asks to confirm: no giveaway
    unans = _x(question="How many tourists visit the wall memorial each year?", answer=UNANSWERABLE_ANSWER,
               passages=(), gold=(), unanswerable=True)
    assert _fails(unans) == {} and _fails(unans, "strict") == {}


@pytest.mark.parametrize("question, reason", [
    ("...", "no question"), ("N/A", "no question"), ("<question>", "no question"), ("Why?", "fewer than 2"),
    ("The Berlin Wall was built in 1961.", "not interrogative"),
    ("What " + "very " * 40 + "long question?", "more than 40")])
def test_question_form(question, reason):
    assert reason in _fails(_x(question=question))["question_form"]


def test_question_form_holds_the_standalone_form_too():
    assert "standalone question" in _fails(_x(question="When was it built?", standalone="..."))["question_form"]


@pytest.mark.parametrize("question", ["Quand le mur de Berlin a-t-il été construit ?",
                                      "Wann wurde die Berliner Mauer gebaut?", "¿Quién lo construyó?",
                                      "Когда была построена Берлинская стена?",
                                      "柏林墙是什么时候建造的？"])
def test_question_language_and_script(question):
    assert "question_language" in _fails(_x(question=question))


def test_short_english_questions_are_not_taken_for_another_language():
    for q in ("Who built it?", "Is it a rodent?", "What about Elaine?", "And the risks?", "Where is Jiayu Pass?",
              "What is FDI?", "Why is that?"):
        assert "question_language" not in _fails(_x(question=q), "strict"), q


def test_the_corpus_language_counts_as_the_passage_language():
    """A passage py3langid misreads (or a multilingual corpus): a question in the corpus's language passes; one in a
    third language does not."""
    from dataclasses import replace
    x = replace(_x(question="When was the Berlin Wall built?"), language="de", also=(("en", "LATIN"),))
    assert "question_language" not in _fails(x)
    assert "question_language" in _fails(replace(x, question="¿Cuándo se construyó el Muro de Berlín?"))


def test_consistency():
    # another intent
    assert "asks 'when'" in _fails(_x(question="When was it built?", standalone="Who built the Berlin Wall?",
                                      history="The Berlin Wall"))["consistency"]
    # words the conversation never said
    r = _fails(_x(question="Who built it?", standalone="Who built the Great Wall of China in the Ming dynasty?",
                  history="The Berlin Wall divided Berlin."))["consistency"]
    assert "never said" in r and "ming" in r
    # the standalone form drops what was asked
    assert "keeps" in _fails(_x(question="When did the guinea pigs arrive in Europe?",
                                standalone="When was the Berlin Wall built?",
                                history="guinea pigs Europe Berlin Wall"))["consistency"]
    # a shift keeps the previous intent; comparisons asked two ways agree; history words are free
    assert "consistency" not in _fails(_x(question="What about the late fee?",
                                          standalone="How much does the late fee cost?", history="fee cost"))
    assert "consistency" not in _fails(_x(question="Which one is better?",
                                          standalone="How does the Berlin Wall compare to the Great Wall?",
                                          history="Berlin Wall Great Wall"))


@pytest.mark.parametrize("answer, reason", [("", "empty"), ("N/A", "placeholder"), ("...", "punctuation"),
                                            (JUNK_ANSWER, "numbers"), ("Yes.", "beyond yes/no"),
                                            ("{answer}", "template")])
def test_answer_present(answer, reason):
    assert reason in _fails(_x(answer=answer))["answer_present"]


def test_answer_not_the_whole_passage():
    assert "whole passage" in _fails(_x(answer=BERLIN))["answer_not_passage"]
    short = "The Berlin Wall divided Berlin. It was built in 1961. It fell in 1989."
    assert "answer_not_passage" not in _fails(_x(answer=short, passages=(short,)))   # 3 sentences: too short to tell


def test_answer_grounded_and_fit():
    off = "Bananas are a rich source of potassium and grow best in warm, humid tropical climates."
    f = _fails(_x(answer=off))
    assert "of the answer's words are in its gold passage" in f["answer_grounded"]
    assert "MiniLM cosine" in f["answer_fit"]
    # a sentence of the passage that does not answer: grounded, but it does not fit the question
    f = _fails(_x(question="How long does a guinea pig live?", passages=(PIGS,), gold=("pigs",),
                  answer="Celtic languages such as Irish and Welsh are still spoken in the British Isles today."))
    assert "answer_fit" in f


def test_no_giveaway_and_not_copy():
    give = _x(question="Given that the German Democratic Republic built it, who built the Berlin Wall?",
              answer="The German Democratic Republic built the Berlin Wall.")
    assert "contains its answer" in _fails(give)["no_giveaway"]
    copy = _x(question="The wall cut off West Berlin from the surrounding East Germany and from East Berlin?",
              answer="It was built by the German Democratic Republic to stop emigration to the West.")
    assert "copies a sentence" in _fails(copy)["not_copy"]


def test_qrels():
    assert "not in the corpus" in _fails(_x(gold=("berlin", "nowhere")))["qrels"]
    assert "no gold" in _fails(_x(gold=()))["qrels"]
    assert "unanswerable turn has gold" in _fails(_x(unanswerable=True, answer=UNANSWERABLE_ANSWER))["qrels"]


def test_config_modes_and_checks():
    assert tuple(GT.CHECKS) == GATE_CHECKS and set(GATE_PRESETS) == {"default", "strict"}
    assert GateConfig(mode="off").resolved() == {}
    assert GT.evaluate(_x(question="..."), GateConfig(mode="off")) == []
    assert "question_form" not in dict(GT.evaluate(_x(question="..."), GateConfig(skip=["question_form"])))
    assert GateConfig(mode="strict", min_fit=0.5).resolved()["min_fit"] == 0.5
    with pytest.raises(ValidationError):
        GateConfig(skip=["no_such_check"])
    with pytest.raises(ValidationError):
        SynthConfig(gate={"mode": "lenient"})


# -- in the graph -----------------------------------------------------------------------------------
def _plan(n_turns=3):
    return ConvPlan(conv_id="c1", seed=0, n_turns=n_turns, cluster_id=0, topic_id=0, pool=tuple(CORPUS),
                    switch_turn=None, switch_cluster_id=None, switch_topic_id=None, switch_pool=(),
                    unanswerable_turns=())


def _run(llm_cfg, cfg: SynthConfig, plans=None):
    plans = plans or [_plan(cfg.turns)]

    async def main():
        async with LLMSession(llm_cfg, write_manifest=False) as llm:
            g = build_graph(GraphContext(corpus=CORPUS, llm=llm, search=lambda q, k: [], cfg=cfg))
            return {p.conv_id: await g.ainvoke(p.initial_state(), {"recursion_limit": 1000}) for p in plans}
    return asyncio.run(main())


def _cfg(mode="default", turns=4):
    return SynthConfig(turns=turns, shown_passages=2, focus_passages=0, focus_related=0, max_attempts=3,
                       unanswerable_ratio=0, switch_ratio=0, gate={"mode": mode})


def _ok(state) -> list[dict]:
    return [t for t in state["turns"] if t["status"] == "ok"]


def _assert_every_ok_turn_passes(state, mode="default"):
    """The oracle of every backend: each stored ok turn passes every check of the gate."""
    for t in _ok(state):
        x = GT.GateInput(question=t["question"], standalone=t["standalone_question"], answer=t["answer"],
                         unanswerable=t["answerability"] == "UNANSWERABLE", gold=t["gold_doc_ids"],
                         passages=[CORPUS[g]["text"] for g in t["gold_doc_ids"]], history=" ".join(
                             f"{p['question']} {p['standalone_question']} {p['answer']} "
                             + " ".join(CORPUS[g]["title"] for g in p["gold_doc_ids"])
                             for p in _ok(state) if p["turn"] < t["turn"]),
                         known=CORPUS, language="en", script="LATIN")
        assert GT.evaluate(x, GateConfig(mode=mode)) == [], t


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_script_lands_as_a_gate_failure_and_loses_no_other_turn(fault, tmp_path):
    checks, side = FAULTS[fault]
    srv = FaultyRoleServer(fault, poisoned="Berlin Wall")
    srv.start()
    try:
        state = _run(fake_llm_config(srv), _cfg())["c1"]
    finally:
        srv.stop()
    assert srv.faulty_replies > 0
    log = state.get("gate_log", [])
    assert log, "the fault produced candidates the gate rejected"
    attempts: dict[tuple, set] = {}
    for r in log:   # every rejection is a poisoned candidate's, with a reason, from the role that misbehaved
        assert r["reason"] and r["role"] in ("questioner", "answerer") and r["question"]
        attempts.setdefault((r["sample_id"], r["attempt"]), set()).add(r["check"])
    for failed_checks in attempts.values():     # each rejected candidate fails (at least) the fault's checks
        assert set(checks) <= failed_checks, (checks, failed_checks)
    for t in state["turns"]:
        if t["status"] == "ok":        # no poisoned candidate is kept; every clean one is
            assert t["gold_doc_ids"] != ["berlin"] and t["answer"] != JUNK_ANSWER
        else:                          # a turn fails only when every attempt was poisoned, with the gate's reason
            assert "last: gate: " in t["failure_reason"] and any(c in t["failure_reason"] for c in checks)
            rejected = {r["attempt"] for r in log if r["sample_id"] == t["sample_id"]}
            assert rejected == set(range(t["verifier_attempts"]))
    assert _ok(state), "the clean passages' turns are kept"
    _assert_every_ok_turn_passes(state)
    fails = [f for f in state["failures"]]
    assert all(f["step"] == "gate" for f in fails)
    # the run's tables: gate_rejections rows (the last rejection of a failed turn is final), failures with reasons
    store = RunStore(str(tmp_path / "r"))
    summary = assemble(store, [_plan(4)], {"c1": state}, _cfg())
    rows = store.read_table("gate_rejections").to_pylist()
    assert len(rows) == len(log) == summary["gate_rejections"]
    assert len({r["sample_id"] for r in rows if r["final"]}) == len(fails) == summary["turns_failed_by_gate"]
    assert all(r["model"] == "fake-model" and r["backend"] == "openai" for r in rows)


def test_without_the_gate_the_yes_man_is_stored_as_ok():
    """What the gate prevents: the yes-man's junk comes out as ok turns when the gate is off, as in the issue."""
    srv = FaultyRoleServer("yes_man")
    srv.start()
    try:
        off = _run(fake_llm_config(srv), _cfg("off", turns=3))["c1"]
        on = _run(fake_llm_config(srv), _cfg("default", turns=3))["c1"]
    finally:
        srv.stop()
    assert [(t["status"], t["question"], t["answer"]) for t in off["turns"]] == [("ok", "...", JUNK_ANSWER)] * 3
    assert [t["status"] for t in on["turns"]] == ["failed"] * 3
    for t in on["turns"]:
        assert "question_form" in t["failure_reason"] and "answer_present" in t["failure_reason"]
    assert {f["step"] for f in on["failures"]} == {"gate"}


def test_the_well_behaved_fake_server_and_the_offline_backend_pass_the_gate():
    srv = RoleScriptedServer()
    srv.start()
    try:
        llm = _run(fake_llm_config(srv), _cfg(turns=4))["c1"]
    finally:
        srv.stop()
    assert len(_ok(llm)) == 4 and not llm.get("gate_log")
    _assert_every_ok_turn_passes(llm)
    offline = _run(LLMConfig(backend="offline"), _cfg("strict", turns=4))["c1"]
    assert _ok(offline)
    _assert_every_ok_turn_passes(offline, "strict")


def test_a_rewrite_that_fails_the_gate_keeps_the_question(tmp_path):
    """The humanizer's rewrite is held to the question-side checks: a junk rewrite keeps the question it rewrote."""
    from agents.testing.fake_server import Reply
    srv = RoleScriptedServer()
    srv.on("rewrite questions the way real users", *[Reply.json({"text": "... ... ..."})] * 10)
    srv.start()
    try:
        state = _run(fake_llm_config(srv), _cfg(turns=2))["c1"]
    finally:
        srv.stop()
    t2 = state["turns"][1]
    assert t2["status"] == "ok" and t2["question"] == t2["question_original"]
    assert t2["humanize_note"].startswith("gate: ") and "original kept" in t2["humanize_note"]
    assert [r["role"] for r in gate_rejection_rows(state)] == ["humanizer"]
    assert not any(r["final"] for r in gate_rejection_rows(state))


@pytest.fixture(scope="module")
def wiki_spine(tmp_path_factory, shared_emb_cache):
    from tests.spine import build_example_spine
    return build_example_spine(tmp_path_factory.mktemp("gate-spine"), shared_emb_cache)[0]


def test_offline_turns_on_the_example_corpus_pass_every_check(wiki_spine, tmp_path):
    """The offline backend through the same gate on examples/wiki: every ok turn passes every check of both modes
    (re-checked from the stored tables: :func:`agents.synth.gate.recheck`), and the run records the gate's work."""
    import shutil

    from agents.synth.run import corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
    run = tmp_path / "run"
    shutil.copytree(wiki_spine, run, ignore=shutil.ignore_patterns("cache"))
    store = RunStore(str(run))
    clusters, cvecs, corpus = load_plan_inputs(store)
    cfg = SynthConfig(conversations=6, turns=6, unanswerable_ratio=0.15, switch_ratio=0.5)
    plans = plan_conversations(clusters, cvecs, cfg)
    out = synthesize_batch(store, plans, corpus, LLMConfig(backend="offline"), cfg,
                           corpus_searcher(store, corpus, "bm25", None))
    summary = assemble(store, plans, out["states"], cfg)
    turns = store.read_table("turns").to_pylist()
    assert summary["turns_failed"] <= 0.1 * len(turns)      # (a repeated item is a duplicate, not a failure)
    assert GT.recheck(turns, corpus) == {}
    assert GT.recheck(turns, corpus, GateConfig(mode="strict")) == {}
    assert summary["gate_rejections"] == store.read_table("gate_rejections").num_rows
