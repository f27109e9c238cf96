"""Conversational query builders: modes, roles, rewrite hook, left truncation, MTRAG reproduction."""
from __future__ import annotations

import pytest

from retrieval.queries import MODES, QueryBuilder, QueryBuildError, build_queries, truncate_left
from tests.retrieval.retrieval_testdata import DOMAINS, load_conversations, load_queries

CONV = [
    {"role": "user", "text": " Who wrote Dune? "},
    {"role": "agent", "text": "Frank Herbert wrote Dune in 1965."},
    {"role": "user", "text": "When did he die?"},
    {"role": "assistant", "text": "He died in 1986."},  # after the current question: never used
]


def test_modes():
    assert QueryBuilder("last_turn").build(CONV) == "When did he die?"
    assert QueryBuilder("all_user_turns").build(CONV) == "Who wrote Dune?\nWhen did he die?"
    assert QueryBuilder("full_history").build(CONV) == (
        "Who wrote Dune?\nFrank Herbert wrote Dune in 1965.\nWhen did he die?")
    assert QueryBuilder("full_history", role_labels=True, sep=" | ").build(CONV) == (
        "user: Who wrote Dune? | assistant: Frank Herbert wrote Dune in 1965. | user: When did he die?")
    assert QueryBuilder("last_turn").build([{"role": "user", "content": "hi"}]) == "hi"
    assert set(MODES) == {"last_turn", "all_user_turns", "full_history", "rewrite"}


def test_bad_input():
    with pytest.raises(QueryBuildError, match="unknown query mode"):
        QueryBuilder("questions")
    with pytest.raises(QueryBuildError, match="no user turn"):
        QueryBuilder("last_turn").build([{"role": "agent", "text": "hello"}])
    with pytest.raises(QueryBuildError, match="role"):
        QueryBuilder("last_turn").build([{"role": "system", "text": "x"}])
    with pytest.raises(QueryBuildError, match="list of turns"):
        QueryBuilder("last_turn").build("just a string")


def test_rewrite_given_hook_and_error():
    b = QueryBuilder("rewrite")
    assert b.build(CONV, rewrite=" When did Frank Herbert die? ") == "When did Frank Herbert die?"
    with pytest.raises(QueryBuildError, match="rewriter"):
        b.build(CONV)
    seen = []

    def fake_llm_rewrite(turns):
        seen.append(turns)
        return "When did Frank Herbert, author of Dune, die?"

    hooked = QueryBuilder("rewrite", rewriter=fake_llm_rewrite)
    out = hooked.build_all({"c1": CONV, "c2": CONV[:1]}, rewrites={"c2": "Who is the author of Dune?"})
    assert out == {"c1": "When did Frank Herbert, author of Dune, die?", "c2": "Who is the author of Dune?"}
    assert seen[0][-1] == {"role": "user", "text": "When did he die?"} and len(seen[0]) == 3  # no answer leak
    assert hooked.describe()["rewrite_sources"] == {"given": 1, "llm": 1}
    assert hooked.describe()["rewriter"] == "fake_llm_rewrite"
    with pytest.raises(QueryBuildError, match="c9"):
        b.build_all({"c9": CONV})


def test_char_and_word_budgets_truncate_from_the_left():
    text = "alpha beta gamma\ndelta epsilon\nWhat is zeta?"
    # the last 20 chars start inside "epsilon": the cut moves on to the next word
    assert truncate_left(text, max_chars=20) == "What is zeta?"
    assert truncate_left(text, max_chars=21) == "epsilon\nWhat is zeta?"
    assert truncate_left(text, max_tokens=4) == "epsilon\nWhat is zeta?"
    assert truncate_left(text, max_tokens=100) == text
    long_q = [{"role": "user", "text": "old question " * 50}, {"role": "agent", "text": "answer " * 50},
              {"role": "user", "text": "and the current one?"}]
    got = QueryBuilder("full_history", max_tokens=10).build(long_q)
    assert got.endswith("and the current one?") and len(got.split()) == 10
    # a question longer than the budget is cut from the left too (the kept text always fits)
    assert truncate_left("one two three four", max_tokens=2) == "three four"


def test_encoder_tokenizer_left_truncation_keeps_the_question():
    b = QueryBuilder.for_encoder("full_history")
    tok = b.tokenizer
    assert b.max_tokens == 256 - 2  # MiniLM: max_seq_length 256 minus [CLS] and [SEP]
    history = []
    for i in range(40):
        history += [{"role": "user", "text": f"Question number {i} about photosynthesis in plants?"},
                    {"role": "agent", "text": f"Answer {i}: chlorophyll absorbs light and makes sugar."}]
    history.append({"role": "user", "text": "So what is the final question about Calvin cycles?"})
    full = QueryBuilder("full_history").build(history)
    assert len(tok(full, add_special_tokens=False)["input_ids"]) > b.max_tokens
    q = b.build(history)
    n = len(tok(q, add_special_tokens=False)["input_ids"])
    assert n <= b.max_tokens and n >= b.max_tokens - 12  # left cut keeps (almost) the whole budget
    assert q.endswith("So what is the final question about Calvin cycles?")
    assert full.endswith(q) and q[0].isalnum() and full[len(full) - len(q) - 1].isspace()  # word boundary
    # the encoder itself would keep every token of it
    assert len(tok(q)["input_ids"]) <= 256
    short = b.build(CONV)
    assert short == QueryBuilder("full_history").build(CONV)


def test_builders_reproduce_mtrag_query_files():
    """From MTRAG conversation histories, last_turn / all_user_turns equal the official query texts."""
    for domain in DOMAINS:
        conv = {t["task_id"]: t["history"] for t in load_conversations(domain)}
        for mode, qtype in (("last_turn", "lastturn"), ("all_user_turns", "questions")):
            official = load_queries(domain, qtype)
            built = build_queries({q: conv[q] for q in official}, mode)
            assert built == official, (domain, mode)
        rewrites = load_queries(domain, "rewrite")
        built = build_queries({q: conv[q] for q in rewrites}, "rewrite", rewrites=rewrites)
        assert built == {q: t.strip() for q, t in rewrites.items()}
