"""Dataset-card sections: cost per role, human-cost assumptions, realism, difficulty, examples."""
from evaluation.card import cost_section, difficulty_section, examples_section, realism_section
from evaluation.metrics import evaluate
from evaluation.realism import RealismStats

CALLS = [{"call_id": "a", "role": "questioner", "cache_hit": False, "prompt_tokens": 100, "completion_tokens": 20,
          "cost_usd": 0.01},
         {"call_id": "a", "role": "questioner", "cache_hit": False, "prompt_tokens": 100, "completion_tokens": 20,
          "cost_usd": 0.01},                                           # the same call twice (part files): once
         {"call_id": "b", "role": "questioner", "cache_hit": True, "prompt_tokens": 50, "completion_tokens": 10,
          "cost_usd": 0.0},
         {"call_id": "c", "role": "verifier", "cache_hit": False, "prompt_tokens": 200, "completion_tokens": 5,
          "cost_usd": 0.03}]


def test_cost_per_role_and_human_assumptions():
    s = cost_section(CALLS, n_turns=10)
    assert "| questioner | 2 | 1 | 180 | 0.0100 |" in s and "| verifier | 1 | 0 | 205 | 0.0300 |" in s
    assert "| total | 3 | 1 | 385 | 0.0400 |" in s
    assert "not estimated" in s and "no default is assumed" in s and "$" not in s.split("Human cost")[1]
    # 10 turns x 6 min at $30/h = $30.00; 30 / 0.04 = 750x
    s = cost_section(CALLS, 10, 6.0, 30.0, source="MTRAG paper, Sec. 3 (annotator time)")
    assert "$30.00 (source: MTRAG paper, Sec. 3 (annotator time)); 750.0x the LLM cost" in s
    assert "assumptions, no source given" in cost_section(CALLS, 10, 6.0, 30.0)


def test_realism_and_examples():
    st = RealismStats(name="x", conversations=2, questions=5, followups=3, length_mean=7.5, length_median=7.0,
                      qtypes={"what": 0.6, "other": 0.4}, history_dependent=2 / 3, differs_from_rewrite=1.0,
                      pronoun=1 / 3, distinct=1.0, extra={})
    r = realism_section(st)
    assert "| follow-ups that depend on the history | 0.667 |" in r and "| question type: what | 0.600 |" in r
    turns = [{"conv_id": c, "turn": t, "status": "ok" if (c, t) != ("c1", 2) else "failed",
              "question": f"q {c} {t} " + "word " * 80, "answer": f"a {c} {t}", "gold_doc_ids": [f"d{t}"],
              "is_switch": (c, t) == ("c3", 2)} for c in ("c1", "c2", "c3", "c4") for t in (1, 2)]
    # the failed-turn share (hand-computed: 1 of 8 turns failed; c1 keeps 1 of its 2 turns)
    from evaluation.realism import turn_health
    h = turn_health(turns)
    assert (h["failed"], h["turns"], h["failed_share"], h["min_kept"], h["below_75"]) == (1, 8, 0.125, 0.5, 1)
    r = realism_section(st, h)
    assert "| failed turns | 1 of 8 (0.125) |" in r and "| kept conversations below 75% of their turns | 1 |" in r
    e = examples_section(turns, n=3, max_chars=40)
    heads = [line for line in e.splitlines() if line.startswith("**")]
    assert heads == ["**c3**", "**c1**", "**c2**"]                    # the switch first, then by id
    assert "User (topic switch)" in e and "q c1 2" not in e and "…" in e and "[gold: d1]" in e


def test_difficulty_by_turn_and_switch_position():
    qrels = {"c1:1": {"d1": 1}, "c1:2": {"d2": 1}, "c2:1": {"d3": 1}, "c2:2": {"d4": 1}}
    run = {"c1:1": {"d1": 1.0}, "c1:2": {"x": 1.0}, "c2:1": {"d3": 1.0}, "c2:2": {"d4": 1.0}}
    res = {"bm25/last_turn": evaluate(qrels, run, metrics=("recall",), ks=(20,))}
    d = difficulty_section(res, {"c1:1": None, "c1:2": 0, "c2:1": None, "c2:2": 1})
    # turn 1: both found -> 1; turn 2: one of two -> 0.5; no_switch 1, position 0: 0, position 1: 1
    assert "| bm25/last_turn | 1.000 | 0.500 |" in d
    assert "| bm25/last_turn | 1.000 | 0.000 | 1.000 |" in d


def test_difficulty_section_is_added_to_the_card_once(tmp_path):
    from types import SimpleNamespace

    from evaluation.card import add_difficulty_to_card
    qrels = {"c1:1": {"d1": 1}, "c1:2": {"d2": 1}}
    run = {"c1:1": {"d1": 1.0}, "c1:2": {"x": 1.0}}
    ev = SimpleNamespace(results={"bm25/last_turn": evaluate(qrels, run, metrics=("recall",), ks=(20,))},
                         switch_positions={"c1:1": None, "c1:2": 0})
    card = tmp_path / "README.md"
    assert not add_difficulty_to_card(card, ev)            # no card: nothing written
    card.write_text("# Card\n\n## Cost\n\ntext\n", encoding="utf-8")
    assert add_difficulty_to_card(card, ev)
    assert add_difficulty_to_card(card, ev)                # a re-evaluation replaces, never duplicates
    text = card.read_text(encoding="utf-8")
    assert text.count("## Difficulty of the evaluated retrievers") == 1
    assert text.startswith("# Card\n\n## Cost\n\ntext") and "| bm25/last_turn | 1.000 | 0.000 |" in text
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]
