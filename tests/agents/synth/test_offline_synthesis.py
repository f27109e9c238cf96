"""Offline synthesis on the example corpus, checked turn by turn against the gate an offline turn must pass:
every question is a short question (follow-ups may lean on the history, their standalone form may not), every
answered turn's answer is sentences of its gold passage that name what was asked, follow-ups refer back to the
conversation, and the run keeps its turns."""
import re

from agents.config import LLMConfig
from agents.synth import text as T
from agents.synth.config import SynthConfig
from agents.synth.offline.checks import read_question
from agents.synth.run import assemble, corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
from evaluation.realism import history_dependent, has_pronoun
from storage.store import RunStore


def test_offline_turns_are_questions_answered_by_their_passage(spine_copy, example_spine):
    store = RunStore(str(spine_copy))
    clusters, cvecs, corpus = load_plan_inputs(store)
    cfg = SynthConfig(conversations=4, turns=6, unanswerable_ratio=0.15, switch_ratio=0.5)
    plans = plan_conversations(clusters, cvecs, cfg)
    search = corpus_searcher(store, corpus, "hybrid", example_spine["cfg"].embed.cache_dir)
    out = synthesize_batch(store, plans, corpus, LLMConfig(backend="offline"), cfg, search)
    assemble(store, plans, out["states"], cfg)
    turns = sorted(store.read_table("turns").to_pylist(), key=lambda t: (t["conv_id"], t["turn"]))
    ok = [t for t in turns if t["status"] == "ok"]
    assert len(ok) >= 0.9 * len(turns) and {t["backend"] for t in ok} == {"offline"}
    dependent = pronouns = followups = 0
    history: dict[str, str] = {}
    for t in ok:
        first = t["turn"] == 1 or t["is_switch"]
        for q in (t["question"], t["standalone_question"]):
            assert q[0].isupper() and q.endswith("?") and 2 <= len(q.split()) <= 18, q
        assert read_question(t["standalone_question"]) is not None, t["standalone_question"]
        if first:
            assert t["question"] == t["standalone_question"]
            history[t["conv_id"]] = ""
        else:
            followups += 1
            pronouns += has_pronoun(t["question"])
            dependent += bool(history_dependent(t["question"], t["standalone_question"], history[t["conv_id"]]))
        history[t["conv_id"]] += f" {t['question']} {t['answer']}"
        if t["answerability"] != "ANSWERABLE":
            continue
        gold = corpus[t["gold_doc_ids"][0]]["text"]
        body = t["answer"].removeprefix("Yes. ").removeprefix("No. ")
        gold_words = set(re.findall(r"[a-z0-9]+", gold.lower()))
        for s in T.sentences(body):       # an independent oracle: the words of every answer sentence are the gold's
            ws = re.findall(r"[a-z0-9]+", s.lower())
            assert sum(w in gold_words for w in ws) >= 0.95 * len(ws), (t["standalone_question"], s)
    assert dependent >= 0.3 * followups and pronouns >= 1     # follow-ups lean on the history
