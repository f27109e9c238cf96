"""The offline questioner's follow-ups use the words the asker has: the corpus idf
(agents/synth/turn.word_idf), the cost of rare words new to the conversation, and the
preference for a follow-up that leans on the conversation over one asked in full."""
import math

import pytest

from agents.synth import turn
from agents.synth.offline.discourse import DiscourseShares
from agents.synth.offline.qgen import QA
from agents.synth.offline.questioning import _follow_up, _rare_cost, ask


def _corpus(n: int) -> dict[str, dict]:
    docs = {f"d{i:02d}": {"doc_id": f"d{i:02d}", "title": "", "text": f"common words here number{i}"} for i in range(n)}
    docs["d00"]["text"] += " unicorn"            # in 1 passage
    docs["d01"]["text"] += " griffin"            # in 2 passages
    docs["d02"]["text"] += " griffin"
    docs["d03"]["title"] = "Phoenix"             # titles count as the passage's words
    return docs


def test_word_idf_is_ln_n_over_df_of_the_rare_words_only():
    c = _corpus(30)
    idf = turn.word_idf(c)
    assert idf["unicorn"] == pytest.approx(math.log(30 / 1), abs=1e-3)        # 3.401 >= IDF_MIN
    assert idf["phoenix"] == pytest.approx(math.log(30), abs=1e-3)
    assert "griffin" not in idf                  # ln(30/2) = 2.71 < 3: common enough to cost nothing
    assert "common" not in idf and "here" not in idf
    assert turn.word_idf(c) is idf               # once per corpus object
    assert turn.word_idf(_corpus(30)) is not idf


def test_word_idf_estimates_on_every_kth_passage_of_a_large_corpus(monkeypatch):
    monkeypatch.setattr(turn, "IDF_SAMPLE", 50)
    idf = turn.word_idf(_corpus(100))            # stride 2 over the sorted ids: d00, d02, ..., d98
    assert idf["unicorn"] == pytest.approx(math.log(50), abs=1e-3) == idf["number4"]
    assert "number1" not in idf and "phoenix" not in idf     # d01, d03: not in the sample
    assert idf["griffin"] == pytest.approx(math.log(50), abs=1e-3)     # only d02 of its two passages is sampled
def test_rare_cost_counts_rare_words_the_conversation_never_said():
    x = {"rare": {"trinucleotide": 8.0, "huntingtin": 6.5, "launched": 3.5}, "rare_weight": 0.25,
         "history": [["user", "What is HD?"], ["assistant", "HD is a trinucleotide repeat disorder."]]}
    cost = _rare_cost(x)
    assert cost("Is it a trinucleotide repeat disorder?") == 0.0          # said in the answer
    assert cost("When was it launched?") == 0.0                           # idf 3.5 <= 4: a common word
    assert cost("What does the huntingtin gene do?") == pytest.approx(0.25 * 2.5)
    assert cost("Does huntingtin bind huntingtin?") == pytest.approx(0.25 * 2.5)   # once per word
    assert _rare_cost({**x, "rare_weight": 0.0}) is None and _rare_cost({**x, "rare": {}}) is None


P = [{"doc_id": "c1", "title": "",
      "text": "IBM Cloudant replicates data across zones. IBM Cloudant was released in 2008 by IBM in Boston."}]
SEG = [{"question": "What is IBM Cloudant?", "standalone_question": "What is IBM Cloudant?",
        "answer": "A database service.", "title": "", "gold_text": P[0]["text"]}]
SHARES = {"yesno": 0.0, "pronoun": 0.5, "short": 0.4, "ellipsis": 0.1}


def _ask(history, rare):
    return ask({"passages": P, "segment": SEG, "history": history, "rare": rare, "rare_weight": 0.25,
                "discourse": SHARES})[1]


def test_a_follow_up_avoids_a_rare_word_the_conversation_has_not_said():
    hist = [["user", "What is IBM Cloudant?"], ["assistant", "A database service."]]
    best = _ask(hist, {})
    assert "Boston" in best                                   # the ranking's first choice without the cost
    assert "Boston" not in _ask(hist, {"boston": 8.0})        # rare and new: another question of the passage
    said = [["user", "What is IBM Cloudant?"], ["assistant", "A database service from Boston."]]
    assert _ask(said, {"boston": 8.0}) == best                # the asker has the word: no cost


def test_follow_up_says_whether_it_leans_on_the_conversation():
    shares = DiscourseShares(**SHARES)
    on_focus = QA(question="When was IBM Cloudant released?", qtype="when", answer="2008", sentence="",
                  template="When was {T} released", topic="IBM Cloudant", topic_kind="SING", topic_role="subj")
    asked, standalone, leans = _follow_up(on_focus, 0, P, SEG, ["ibm cloudant"], [], shares, [])
    assert asked != standalone == "When was IBM Cloudant released?" and leans
    other = QA(question="When did Rome fall?", qtype="when", answer="476", sentence="", topic="Rome",
               topic_kind="SING", topic_role="subj", template="When did {T} fall")
    asked, standalone, leans = _follow_up(other, 0, P, SEG, ["ibm cloudant"], [], shares, [])
    assert asked == standalone == "When did Rome fall?" and not leans
    # asked in full by the shares' own choice (no talk share at all) is no penalty
    none = DiscourseShares(pronoun=0.0, short=0.0, ellipsis=0.0, yesno=0.0)
    assert _follow_up(other, 0, P, SEG, ["ibm cloudant"], [], none, [])[2]


def test_only_the_offline_questioner_gets_the_shown_passages_rare_words():
    from types import SimpleNamespace

    from agents.config import LLMConfig
    from agents.synth.questioner import rare_words
    from agents.synth.run import _offline_questioner
    ctx = SimpleNamespace(idf={"unicorn": 5.0, "griffin": 4.2, "phoenix": 6.0})
    shown = [{"doc_id": "a", "title": "Phoenix", "text": "A unicorn."}, {"doc_id": "b", "title": "", "text": "Horses."}]
    assert rare_words(ctx, shown) == {"unicorn": 5.0, "phoenix": 6.0}
    assert rare_words(SimpleNamespace(idf={}), shown) == {}
    assert _offline_questioner(LLMConfig(backend="offline"))
    assert not _offline_questioner(LLMConfig.model_validate(
        {"backend": "openai", "endpoints": {"e": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}}))


def test_no_yes_no_follow_up_on_what_an_earlier_answer_said():
    from agents.synth.offline.answer_types import question_type
    from agents.synth.offline.questioning import THREAD_LOOKS
    p = [{"doc_id": "c1", "title": "",
          "text": "The Developers can deliver incremental updates to their users. IBM Cloudant was released in 2008."}]
    seg = [{"question": "What can the Developers deliver to their users?",
            "standalone_question": "What can the Developers deliver to their users?",
            "answer": "Incremental updates. The Developers can deliver incremental updates to their users.",
            "title": "", "gold_text": p[0]["text"]}]
    asked = []
    for a in range(4):      # (past the candidates the attempt fails: no passage defines a subject to ask about)
        try:
            asked.append(ask({"passages": p, "segment": seg, "attempt": a, "discourse": {"yesno": 1.0},
                              "thread_looks": THREAD_LOOKS})[2])        # (asked in full once the looks are spent)
        except ValueError:
            break
    assert any(question_type(q) == "yesno" and "Cloudant" in q for q in asked)   # yes/no questions are offered ...
    assert not any(question_type(q) == "yesno" and "deliver" in q for q in asked)   # ... not on what was said


def test_no_yes_no_follow_up_on_what_an_earlier_answer_said_in_another_tense():
    from agents.synth.offline.questioning import _said
    answer = "Feinman. Feinman spent seven months on the project and was paid $120,000 for her work."
    assert _said("Did Feinman spend seven months on the project?", [answer])
    assert not _said("Did Feinman spend seven months on the book?", [answer])


def test_an_opener_avoids_rare_words_other_than_its_subjects_name():
    # people open with the name of what they ask about and their own words, not the passage's details
    # (MTRAG ClapNQ openers: 0.55 words rare in the corpus; copied from the passage: 1.62)
    def opener(rare):
        return ask({"passages": P, "segment": [], "history": [], "rare": rare, "rare_weight": 0.25,
                    "discourse": {"yesno": 0.0}})[1]
    best = opener({})
    assert "Boston" in best
    assert "Boston" not in opener({"boston": 8.0}) and "IBM Cloudant" in opener({"boston": 8.0})
    assert opener({"cloudant": 8.0}) == best        # the subject's name is the asker's own
