"""Offline synthesis on the example corpus, checked turn by turn: every question is well-formed
by the parser-based check (follow-ups as asked may lean on the history, their standalone form
may not), every answered turn's answer holds its asked-for slot as a span of the gold passage,
and follow-ups refer back to the conversation."""
from agents.config import LLMConfig
from agents.synth import text as T
from agents.synth.config import SynthConfig
from agents.synth.offline.answer_types import answer_span, fills_slot, question_type
from agents.synth.offline.matching import span_in
from agents.synth.offline.nlp import clean_passage, detokenize
from agents.synth.offline.qgen import well_formed
from agents.synth.run import assemble, corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
from evaluation.realism import history_dependent
from storage.store import RunStore


def test_offline_turns_are_well_formed_and_answers_hold_their_slot(spine_copy, example_spine):
    store = RunStore(str(spine_copy))
    clusters, cvecs, corpus = load_plan_inputs(store)
    cfg = SynthConfig(conversations=4, turns=6, unanswerable_ratio=0.15, switch_ratio=0.5)
    plans = plan_conversations(clusters, cvecs, cfg)
    search = corpus_searcher(store, corpus, "hybrid", example_spine["cfg"].embed.cache_dir)
    out = synthesize_batch(store, plans, corpus, LLMConfig(backend="offline"), cfg, search)
    assemble(store, plans, out["states"], cfg)
    turns = sorted(store.read_table("turns").to_pylist(), key=lambda t: (t["conv_id"], t["turn"]))
    ok = [t for t in turns if t["status"] == "ok"]
    assert len(ok) >= 0.8 * len(turns) and {t["backend"] for t in ok} == {"offline"}
    dependent = 0
    history: dict[str, str] = {}
    for t in ok:
        first = t["turn"] == 1 or t["is_switch"]
        assert well_formed(t["question"], followup=not first) is None, t["question"]
        assert well_formed(t["standalone_question"]) is None, t["standalone_question"]
        if first:
            assert t["question"] == t["standalone_question"]
            history[t["conv_id"]] = ""
        elif history_dependent(t["question"], t["standalone_question"], history[t["conv_id"]]):
            dependent += 1
        history[t["conv_id"]] += f" {t['question']} {t['answer']}"
        if t["answerability"] != "ANSWERABLE":
            continue
        qtype = question_type(t["standalone_question"])
        span = answer_span(t["answer"], qtype)
        gold = detokenize(clean_passage(corpus[t["gold_doc_ids"][0]]["text"]))
        if qtype == "yesno" and span in ("Yes", "No"):
            # the slot of a yes/no question is its polarity; the supporting sentence is in the passage
            support = T.sentences(t["answer"])[1]
            assert span_in(support.rstrip("."), gold), (t["standalone_question"], support)
            continue
        assert span_in(span, gold), (t["standalone_question"], span)
        assert fills_slot(qtype, span, t["answer"]) or qtype in ("what", "define", "how", "yesno"), \
            (t["standalone_question"], span)
    assert dependent >= 1          # follow-ups lean on the history
