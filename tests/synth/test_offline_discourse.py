"""Offline follow-ups: pronouns, possessives, shorter descriptions and ellipsis that refer back
to the segment's focus; the standalone question stays the resolved form."""
from agents.synth.offline.discourse import DiscourseShares, render, segment_topics
from agents.synth.offline.qgen import QA

SEG = [{"question": "What was the Berlin Wall?", "standalone_question": "What was the Berlin Wall?",
        "answer": "A guarded concrete barrier. The Berlin Wall was a guarded concrete barrier."}]
BUILT = QA(question="When was the Berlin Wall built?", qtype="when", answer="1961", sentence="",
           template="When was {T} built", topic="the Berlin Wall", topic_kind="SING", verb="build")
SHARES = DiscourseShares(pronoun=0.3, short=0.3, ellipsis=0.1)


def test_segment_topics_come_from_the_standalone_questions_and_the_last_answer():
    assert segment_topics(SEG)[0] == "berlin wall"


def test_forms_by_share():
    assert render(BUILT, SEG, SHARES, 0.2) == ("When was it built?", "pronoun")
    assert render(BUILT, SEG, SHARES, 0.5) == ("When was the wall built?", "short")
    assert render(BUILT, SEG, SHARES, 0.95) == ("When was the Berlin Wall built?", "explicit")


def test_possessive_and_plural_agreement():
    pop = QA(question="What was the population of the Berlin Wall?", qtype="what", answer="", sentence="",
             template="What was the population of {T}", topic="the Berlin Wall")
    assert render(pop, SEG, SHARES, 0.2)[0] == "What was its population?"
    pigs = QA(question="Where do guinea pigs live?", qtype="where", answer="", sentence="",
              template="Where do {T} live", topic="guinea pigs", topic_kind="PLUR")
    seg = [{"question": "What are guinea pigs?", "standalone_question": "What are guinea pigs?", "answer": "Rodents."}]
    assert render(pigs, seg, SHARES, 0.2)[0] == "Where do they live?"


def test_ellipsis_reuses_the_previous_frame_for_a_new_topic():
    seg = [{"question": "When was the Berlin Wall built?", "standalone_question": "When was the Berlin Wall built?",
            "answer": "1961. The Berlin Wall was built in 1961."}]
    great = QA(question="When was the Great Wall built?", qtype="when", answer="", sentence="",
               template="When was {T} built", topic="the Great Wall", verb="build")
    assert render(great, seg, SHARES, 0.05) == ("What about the Great Wall?", "ellipsis")


def test_unrelated_topic_stays_explicit():
    other = QA(question="When did the Byzantine Empire fall?", qtype="when", answer="", sentence="",
               template="When did {T} fall", topic="the Byzantine Empire", verb="fall")
    assert render(other, SEG, SHARES, 0.2) == ("When did the Byzantine Empire fall?", "explicit")
