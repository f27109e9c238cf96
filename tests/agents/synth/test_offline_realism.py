"""Realism statistics on a tiny hand-made benchmark (hand-computed expectations)."""
import math

from evaluation.realism import format_table, has_pronoun, history_dependent, question_stats, question_type
from storage.benchmark.model import Benchmark, BenchTurn


def _bench():
    a1 = BenchTurn("a:1", "a", 1, "When was the Berlin Wall built?", rewrite="When was the Berlin Wall built?")
    h = (("user", a1.question), ("assistant", "It was built by East Germany in 1961."))
    a2 = BenchTurn("a:2", "a", 2, "Who designed it?", history=h, rewrite="Who designed the Berlin Wall?")
    h2 = h + (("user", a2.question), ("assistant", "Nobody knows."))
    a3 = BenchTurn("a:3", "a", 3, "How many guards watched the wall?", history=h2,
                   rewrite="How many guards watched the Berlin Wall?")
    b1 = BenchTurn("b:1", "b", 1, "What is IBM Cloudant?", rewrite="What is IBM Cloudant?")
    b2 = BenchTurn("b:2", "b", 2, "Can I store images in IBM Cloudant?",
                   history=(("user", b1.question), ("assistant", "A database.")),
                   rewrite="Can I store images in IBM Cloudant?")
    b3 = BenchTurn("b:3", "b", 3, "What is IBM Cloudant?", history=(("user", b1.question),),
                   rewrite="What is IBM Cloudant?")
    return Benchmark(name="tiny", format="ours", corpus={}, turns=[a1, a2, a3, b1, b2, b3])


def test_unit_rules():
    assert history_dependent("Who designed it?", "Who designed the Berlin Wall?", "the Berlin Wall was built")
    # "wall" adds nothing new: the question has it; "berlin" is added and in the history
    assert history_dependent("How many guards watched the wall?", "How many guards watched the Berlin Wall?",
                             "Berlin Wall")
    # added words that the history lacks do not count
    assert not history_dependent("Who designed it?", "Who designed the Berlin Wall?", "something else")
    assert history_dependent("x", None, "y") is None
    assert has_pronoun("Who designed it?") and not has_pronoun("Who designed the wall?")
    assert [question_type(q) for q in ("How many guards?", "And when was it?", "Can I?", "name the viceroy")] == \
        ["how many", "when", "yes/no", "other"]


def test_question_stats_hand_computed():
    s = question_stats(_bench())
    assert (s.conversations, s.questions, s.followups) == (2, 6, 4)
    assert s.length_mean == (6 + 3 + 6 + 4 + 7 + 4) / 6 and s.length_median == 5.0
    # follow-ups a:2 (adds berlin, wall) and a:3 (adds berlin) depend on the history; b:2, b:3 do not
    assert s.history_dependent == 0.5 and s.differs_from_rewrite == 0.5
    assert s.pronoun == 0.25                       # "it" in a:2 only
    assert math.isclose(s.distinct, 5 / 6)         # b:3 repeats b:1
    assert s.qtypes["what"] == 2 / 6 and s.qtypes["how many"] == 1 / 6 and s.qtypes["yes/no"] == 1 / 6
    table = format_table([s], [{"bm25": {"last_turn": 0.5, "rewrite": 0.6, "rewrite/last_turn": 1.2}}])
    assert "| follow-ups depending on the history | 50% |" in table and "| bm25 rewrite / last turn | 1.200 |" in table


def test_rare_words_new_to_the_conversation_hand_computed():
    from dataclasses import replace

    from storage.records import Document
    # 400 passages: a word in one of them is rare (< 0.5% = 2 passages), "designed" in every one is not
    corpus = {f"d{i}": Document(f"d{i}", "", f"The wall was designed {'x' * (i % 3 + 4)}.", "t") for i in range(400)}
    corpus["d1"] = Document("d1", "Guards", "Guards watched.", "t")          # title words count
    corpus["d2"] = Document("d2", "", "Store images in IBM Cloudant.", "t")
    s = question_stats(replace(_bench(), corpus=corpus))
    # a:2 "Who designed it?" 0 (common); a:3 "guards", "watched" rare and new 2 ("wall" common);
    # b:2 "images", "store", "cloudant" rare, "cloudant" said in b:1 -> 2; b:3 "cloudant" said -> 0
    assert s.rare_new == (0 + 2 + 2 + 0) / 4
    assert "| rare words new to the conversation per follow-up | 1.00 |" in format_table([s])
    assert math.isnan(question_stats(_bench()).rare_new)                   # no corpus: not measured
