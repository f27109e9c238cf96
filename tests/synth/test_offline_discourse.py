"""Offline follow-ups: pronouns, possessives, shorter descriptions and ellipsis that refer back
to the segment's focus; the standalone question stays the resolved form."""
from dataclasses import replace

import pytest

from agents.synth.offline.discourse import DiscourseShares, render, segment_topics
from agents.synth.offline.qgen import QA

SEG = [{"question": "What was the Berlin Wall?", "standalone_question": "What was the Berlin Wall?",
        "answer": "A guarded concrete barrier. The Berlin Wall was a guarded concrete barrier."}]
BUILT = QA(question="When was the Berlin Wall built?", qtype="when", answer="1961",
           sentence="The Berlin Wall was built in 1961; the wall divided the city.",
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


def test_possessive_of_a_title_cased_head_is_lower_case_and_names_have_none():
    seg = [{"question": "What is France?", "standalone_question": "What is France?", "answer": "A country."}]
    flag = QA(question="What is the Flag of France?", qtype="what", answer="", sentence="",
              template="What is {T}", topic="Flag of France", topic_kind="SING")
    assert render(flag, seg, SHARES, 0.2)[0] == "What is its flag?"               # not "What is its Flag?"
    seg = [{"question": "What is Germany?", "standalone_question": "What is Germany?", "answer": "A country."}]
    frg = QA(question="What did the Federal Republic of Germany comprise?", qtype="what", answer="", sentence="",
             template="What did {T} comprise", topic="Federal Republic of Germany", topic_kind="SING")
    assert "its Federal Republic" not in render(frg, seg, SHARES, 0.2)[0]


def test_ellipsis_reuses_the_previous_frame_for_a_new_topic():
    seg = [{"question": "When was the Berlin Wall built?", "standalone_question": "When was the Berlin Wall built?",
            "answer": "1961. The Berlin Wall was built in 1961."}]
    great = QA(question="When was the Great Wall built?", qtype="when", answer="", sentence="",
               template="When was {T} built", topic="the Great Wall", verb="build")
    assert render(great, seg, SHARES, 0.05) == ("What about the Great Wall?", "ellipsis")
    # the same verb with another predicate is no same frame: "What about a subject of research?" for "Is a subject of
    # research the formation of the Moon?" after "Is the Moon a satellite?"
    seg = [{"question": "Is the Moon a satellite?", "standalone_question": "Is the Moon a natural satellite?",
            "answer": "Yes. The Moon is a natural satellite."}]
    research = QA(question="Is a subject of research the formation of the Moon?", qtype="yesno", answer="Yes",
                  sentence="", template="Is {T} the formation of the Moon", topic="a subject of research", verb="be")
    assert render(research, seg, SHARES, 0.05)[1] != "ellipsis"


def test_unrelated_topic_stays_explicit():
    other = QA(question="When did the Byzantine Empire fall?", qtype="when", answer="", sentence="",
               template="When did {T} fall", topic="the Byzantine Empire", verb="fall")
    assert render(other, SEG, SHARES, 0.2) == ("When did the Byzantine Empire fall?", "explicit")


REG = [{"standalone_question": "How do I grant access to Container Registry resources?",
        "answer": "You grant access to Container Registry by assigning IAM policies to users in the console.",
        "title": "", "gold_text": ""}]


def test_refer_back_replaces_a_mentioned_phrase_by_its_pronoun():
    from agents.synth.offline.discourse import refer_back
    assert refer_back("What does Container Registry include?", REG) == "What does it include?"          # subject
    assert refer_back("How many namespaces can Container Registry hold?", REG) == \
        "How many namespaces can it hold?"                                                             # inverted subject
    assert refer_back("What is the price of Container Registry?", REG) == "What is its price?"       # the N of X
    assert refer_back("Who created IAM policies?", REG) == "Who created them?"                         # plural object
    assert refer_back("How do I delete Container Registry resources?", REG) == "How do I delete them?"


def test_refer_back_leaves_questions_that_would_say_nothing_or_read_oddly():
    from agents.synth.offline.discourse import refer_back
    assert refer_back("What is Container Registry?", REG) is None                 # "What is it?"
    assert refer_back("What are the IAM policies of the account?", REG) is None   # post-modified phrase
    assert refer_back("How do I assign access to the console?", REG) is None      # bare common noun "access"
    assert refer_back("What does Code Engine include?", REG) is None              # never mentioned


def test_refer_back_is_used_for_followups_whose_topic_is_not_the_focus():
    q = QA(question="How many namespaces can Container Registry hold?", qtype="how_many", answer="", sentence="")
    assert render(q, REG, SHARES, 0.2) == ("How many namespaces can it hold?", "pronoun")
    assert render(q, REG, SHARES, 0.95)[1] == "explicit"


def test_clarification_of_a_term_the_previous_answer_used():
    seg = [{"standalone_question": "Who guarded the Berlin Wall?", "answer": "Soldiers and the Stasi guarded it."}]
    stasi = QA(question="What was the Stasi?", qtype="define", answer="", sentence="", template="What was {T}",
               topic="the Stasi")
    assert render(stasi, seg, SHARES, 0.2) == ("What do you mean by the Stasi?", "clarify")
    assert render(stasi, seg, SHARES, 0.95)[1] == "explicit"


COS = [{"standalone_question": "How do I create a bucket in IBM Cloud Object Storage?",
        "answer": "You create a bucket in the console.", "title": "",
        "gold_text": "IBM Cloud Object Storage stores data. IBM Cloud Object Storage buckets hold objects."}]


def test_context_phrase_is_what_the_segment_established_and_the_passage_is_about():
    from agents.synth.offline.discourse import context_candidates, context_phrase, with_context
    cands = context_candidates(COS)
    assert cands[0] == "ibm cloud object storage"
    p = {"text": "To delete an object from IBM Cloud Object Storage, open the bucket."}
    ctx = context_phrase("How do I delete an object?", p, cands)
    assert ctx == "IBM Cloud Object Storage"                              # as the passage writes it
    assert with_context("How do I delete an object?", ctx) == "How do I delete an object in IBM Cloud Object Storage?"
    assert with_context("How do I delete an object in the UI?", ctx) == \
        "How do I delete an object in the UI for IBM Cloud Object Storage?"
    assert context_phrase("How do I delete an object in IBM Cloud Object Storage?", p, cands) == ""   # named
    assert context_phrase("How do I delete an object?", {"text": "Open the bucket."}, cands) == ""    # not about it


def test_a_question_that_names_the_segments_focus_gets_no_lesser_context():
    from agents.synth.offline.discourse import context_phrase
    p = {"text": "Secure your web chat integration. The web chat uses an RSA signature with SHA-256."}
    cands = ["web chat", "rsa signature"]               # the focus, then a name of the last answer
    assert context_phrase("How do I secure the web chat?", p, cands) == ""     # not "... in RSA signature?"
    assert context_phrase("How do I rotate the keys?", p, cands) == "RSA signature"   # ("web chat" is no name to add)
    assert context_phrase("How do I rotate the keys?", p, ["the keys", "rsa signature"]) == ""


def test_short_form_needs_a_word_head():
    ibm = QA(question="What does IBM Cloud ® provide?", qtype="what", answer="", sentence="",
             template="What does {T} provide", topic="IBM Cloud ®")
    from agents.synth.offline.discourse import _short_form
    assert _short_form(ibm) is None
    assert _short_form(BUILT) == "When was the wall built"


def test_unanswerable_turn_without_a_clause_to_shift_fails_explicitly():
    import pytest
    from agents.synth.offline.questioning import ask
    x = {"unanswerable": True, "passages": [{"doc_id": "d1", "title": "", "text": "Click Save."}], "segment": []}
    with pytest.raises(ValueError, match="unanswerable"):
        ask(x)


def test_refer_back_never_makes_a_person_or_a_possessive_phrase_it():
    from agents.synth.offline.discourse import refer_back
    seg = [{"standalone_question": "Who is Phoebe Buffay?", "title": "Friends", "gold_text": "",
            "answer": "Phoebe Buffay is a character played by Lisa Kudrow. Phoebe lived with her mother."}]
    assert refer_back("Where did Phoebe Buffay live with her mother?", seg) is None
    assert refer_back("Where did Phoebe live?", seg) is None


def test_context_pronoun_only_on_short_questions_without_other_references():
    from agents.synth.offline.questioning import _may_add_it
    assert _may_add_it("How many snapshots can I take?")
    assert not _may_add_it("Where did Constantine XI live until its fall?")       # already a pronoun
    assert not _may_add_it("What did Leo VI achieve in Greek?")                   # another in-phrase


def test_context_phrase_keeps_the_passage_article():
    from agents.synth.offline.discourse import context_candidates, context_phrase
    seg = [{"standalone_question": "When did the Byzantine Empire survive?", "answer": "x",
            "title": "Byzantine Empire", "gold_text": ""}]
    assert context_phrase("What did the bureaucracy have?", {"text": "In the Byzantine Empire the bureaucracy had power."},
                          context_candidates(seg)) == "the Byzantine Empire"


def test_context_phrase_takes_the_article_only_where_the_name_stands_alone():
    from agents.synth.offline.discourse import context_candidates, context_phrase
    seg = [{"standalone_question": "What is IBM Cloudant?", "answer": "A database service.", "title": "",
            "gold_text": ""}]
    text = "Open the IBM Cloudant Dashboard to see the IBM Cloudant service. IBM Cloudant stores JSON documents."
    assert context_phrase("How much does storage cost?", {"text": text}, context_candidates(seg)) == "IBM Cloudant"
    seg = [{"standalone_question": "What was the Byzantine Empire?", "answer": "An empire.", "title": "",
            "gold_text": ""}]
    text = "Trade grew while the Byzantine Empire collapsed. Its bureaucracy had power."
    assert context_phrase("What did the bureaucracy have?", {"text": text}, context_candidates(seg)) == \
        "the Byzantine Empire"


def test_people_named_by_their_role_are_no_context():
    from agents.synth.offline.discourse import context_candidates
    seg = [{"question": "Who maintains the benchmark results?", "standalone_question": "Who maintains the benchmark results?",
            "answer": "IBM engineers. IBM engineers maintain the CIS Kubernetes Benchmark for each version.",
            "title": "", "gold_text": ""}]
    cands = context_candidates(seg)
    assert "ibm engineers" not in cands and "cis kubernetes benchmark" in cands


def test_context_phrase_prefers_the_text_wording_to_the_title():
    from agents.synth.offline.discourse import context_candidates, context_phrase
    seg = [{"standalone_question": "When did the Byzantine Empire survive?", "answer": "x",
            "title": "Byzantine Empire", "gold_text": ""}]
    p = {"title": "Byzantine Empire", "text": "In the Byzantine Empire the bureaucracy had power."}
    assert context_phrase("What did the bureaucracy have?", p, context_candidates(seg)) == "the Byzantine Empire"


def test_fallback_titles_and_named_definitions():
    from agents.synth.offline.discourse import title_name as _title_name
    from agents.synth.offline.questioning import _defines_a_name, _may_add_it
    assert _title_name("American Pie (song)") == "American Pie"
    assert _title_name("History of Germany (1945–90)") == "the history of Germany"
    assert _title_name("Egg donation") == "egg donation"
    assert _title_name("Wikipedia:Reference desk/Archives/Entertainment/2012 July 7") == ""
    assert _title_name("IBM Cloud Object Storage") == "IBM Cloud Object Storage"
    assert _title_name("Sickle cell disease") == "sickle cell disease"
    assert _title_name("Berlin Wall") == "Berlin Wall"
    # a named thing is defined without a context; a common one may be asked "in it"
    assert _defines_a_name("What is the Stanley Cup?") and not _may_add_it("What is the Stanley Cup?")
    assert not _defines_a_name("What is a bucket?") and _may_add_it("What is a bucket?")


def test_refer_back_never_cuts_a_name_and_context_takes_the_sentence_wording():
    from agents.synth.offline.discourse import context_phrase, refer_back
    seg = [{"standalone_question": "What is the capital of Germany?", "question": "What is the capital of Germany?",
            "answer": "Berlin is the capital of Germany.", "title": "Germany", "gold_text": ""}]
    assert refer_back("What did the Federal Republic of Germany comprise?", seg) is None
    assert refer_back("What is the population of Germany?", seg) == "What is its population?"
    pig = {"title": "Guinea pig", "text": "Guinea pig\nThe guinea pig is a species of rodent. Guinea pigs eat grass."}
    assert context_phrase("What do rodents eat?", pig, ["guinea pig"]) == "the guinea pig"
    assert context_phrase("What do guinea pigs eat?", pig, ["guinea pig"]) == ""        # already named
    title_only = {"title": "Sickle cell disease", "text": "Sickle cell disease\nPatients have attacks of pain."}
    assert context_phrase("What causes attacks of pain?", title_only, ["sickle cell disease"]) == "sickle cell disease"
    from agents.synth.offline.discourse import context_candidates
    seg2 = [{"standalone_question": "Who led the Salt March?", "question": "Who led the Salt March?",
             "answer": "Mahatma Gandhi led the Salt March in 1930.", "title": "Salt March", "gold_text": ""}]
    assert not any("gandhi" in c for c in context_candidates(seg2))



def test_unanswerable_shift_keeps_the_verbs_arguments_and_asks_an_unnamed_slot():
    """An object question is shifted with its answer put back as the object ("What did the Gazette
    confirm?" -> "When did the Gazette confirm the merger ...?", never "When did the Gazette confirm?",
    which lost the verb's object); and a slot the clause already names is not asked ("When was it
    founded in 1785?")."""
    from agents.synth.offline.qgen import passage_questions
    from agents.synth.offline.questioning import ask
    t = ("The Hudson Gazette confirmed the merger of the two railways. "
         "The Hudson Gazette was founded in 1785 by Ashbel Stoddard in Hudson, New York.")
    assert any(q.question == "What did the Hudson Gazette confirm?" for q in passage_questions(t, ""))
    asked = set()
    for attempt in range(6):
        x = {"unanswerable": True, "passages": [{"doc_id": "d1", "title": "", "text": t}], "segment": [],
             "attempt": attempt}
        _, q, standalone, _ = ask(x)
        asked.add(q)
        assert not q.endswith("confirm?")
        assert not (q.startswith("When") and "1785" in q) and not (q.startswith("Where") and "Hudson, New" in q)
    assert "Why was the Hudson Gazette founded in 1785 by Ashbel Stoddard?" in asked
    assert any(q.endswith("did the Hudson Gazette confirm the merger of the two railways?") for q in asked), asked


def test_object_put_back_only_for_a_short_noun_phrase_answer():
    from agents.synth.offline.qgen import QA
    from agents.synth.offline.questioning import _with_object
    qa = QA(question="What did Octavian take from Lepidus?", qtype="what", answer="Africa", sentence="",
            template="What did {T} take from Lepidus", topic="Octavian", topic_role="subj")
    assert _with_object(qa) == "did {T} take Africa from Lepidus"
    assert _with_object(replace(qa, answer="The beginning.")) == "did {T} take the beginning from Lepidus"
    assert _with_object(replace(qa, answer="to rule the provinces of the west alone")) is None   # no short NP
    assert _with_object(replace(qa, template="What is {T} called")) is None                       # no do/have/modal
    # an answer that names the subject again gives no clause ("Why does the IBM Cloud Pak support the IBM Cloud Pak?")
    pak = QA(question="What does the IBM Cloud Pak support?", qtype="what", answer="The IBM Cloud Pak.", sentence="",
             template="What does {T} support", topic="the IBM Cloud Pak", topic_role="subj")
    assert _with_object(pak) is None


def test_he_is_not_resolved_past_another_subject():
    """"He" after a sentence whose subject was someone else is ambiguous (spaCy's small model even
    labels a title line "Byzantine Empire" a person): no question is made from it."""
    from agents.synth.offline.qgen import passage_questions
    t = ("Byzantine Empire\nA nephew of the last Emperor, Constantine XI, Andreas Palaiologos claimed to have inherited "
         "the title of Byzantine Emperor. He lived in the Morea until its fall in 1460.")
    qs = [q.question for q in passage_questions(t, "Byzantine Empire")]
    assert not any("live" in q for q in qs), qs
    bio = "Albert Einstein was a German physicist. He developed the theory of relativity in Bern."
    assert "What did Albert Einstein develop in Bern?" in [q.question for q in passage_questions(bio, "")]


def test_no_wh_question_from_a_negated_clause():
    """"What does the move action add not twice?" (the negation after the verb) and "Who owns the
    Royal Collection personally?" (from "The Queen does not own ...": the meaning inverted) are not made;
    the clause is asked as a yes/no question answered No."""
    from agents.synth.offline.qgen import passage_questions
    for t in ("The move action does not add the same example twice.",
              "The Queen does not own the Royal Collection personally.",
              "Twelve cards are not available in the basic plan."):
        qs = passage_questions(t, "")
        assert qs and all(q.qtype == "yesno" and q.answer == "No" and " not " not in q.question for q in qs), qs
    assert passage_questions("The Queen owns the Royal Collection in trust.", "")


def test_a_plural_topic_asked_yes_no_with_a_pronoun_agrees():
    from agents.synth.offline.discourse import _pronoun_form
    qa = QA(question="Is DNS Services a global service?", qtype="yesno", answer="Yes", sentence="",
            template="Is {T} a global service", topic="DNS Services", topic_kind="PLUR", topic_role="subj")
    assert _pronoun_form(qa) == "Are they a global service"
    assert _pronoun_form(replace(qa, template="Does {T} maintain resolvers")) == "Do they maintain resolvers"


def test_yes_no_questions_only_on_follow_ups_and_with_their_share():
    from agents.synth.offline.answer_types import question_type
    from agents.synth.offline.questioning import ask
    p = [{"doc_id": "c1", "title": "",
          "text": "IBM Cloudant replicates data across zones. IBM Cloudant was released in 2008 by IBM in Boston."}]
    seg = [{"question": "What is IBM Cloudant?", "standalone_question": "What is IBM Cloudant?",
            "answer": "A database service.", "title": "", "gold_text": p[0]["text"]}]

    def kinds(**x):
        return {question_type(ask({"passages": p, "attempt": a, **x})[2]) for a in range(4)}
    assert "yesno" not in kinds(standalone=True, discourse={"yesno": 1.0})            # an opening: wh only
    assert "yesno" not in kinds(segment=seg, discourse={"yesno": 0.0})                 # share 0: never
    assert "yesno" in kinds(segment=seg, discourse={"yesno": 1.0})                     # share 1: offered


def test_a_question_phrase_is_never_the_context():
    from agents.synth.offline.discourse import context_candidates
    seg = [{"standalone_question": "What products can I install with the WebSphere Application Server tile?",
            "question": "What products can I install with the WebSphere Application Server tile?", "title": "",
            "answer": "What products can I install? WebSphere Application Server.",
            "gold_text": "What products can I install? What Products are supported by WebSphere Application Server?"}]
    cands = context_candidates(seg)
    assert "websphere application server" in cands
    assert not any(c.split()[0] in ("what", "which", "how") for c in cands)     # no "... in What products?"


def test_refer_back_replaces_neither_a_predicate_nor_half_a_phrase():
    from agents.synth.offline.discourse import refer_back
    seg = [{"standalone_question": "Who was an effective emperor of Rome?", "title": "Roman Empire", "gold_text": "",
            "answer": "Vespasian was an effective emperor. Domain lockdown rules and stem cells were mentioned."}]
    out = refer_back("Was the ruler an effective emperor in the provinces?", seg)
    assert out is None or "the ruler it" not in out
    out = refer_back("Do domain lockdown rules specify a list of IP addresses?", seg)
    assert out is None or "domain they" not in out.lower()
    out = refer_back("What may hematopoietic stem cells cross in the marrow?", seg)     # an adjective the parser
    assert out is None or "hematopoietic them" not in out                               # reads as a verb


def test_refer_back_leaves_amounts_and_a_definition_gives_no_unanswerable_when_is():
    from agents.synth.offline.discourse import refer_back
    from agents.synth.offline.questioning import ask
    seg = [{"standalone_question": "How long did Feinman work?", "title": "", "gold_text": "",
            "answer": "Seven months. Feinman spent seven months on the project."}]
    out = refer_back("Did Feinman spend seven months on the project?", seg)
    assert out is None or "spend them" not in out
    x = {"unanswerable": True, "segment": [], "passages": [
        {"doc_id": "d1", "title": "", "text": "The Isthmus of Panama is North America's only land connection to South America."}]}
    try:
        q = ask(x)[1]
    except ValueError:
        q = ""
    assert not q.startswith(("When is", "Where is", "Why is"))


def test_a_passages_main_name_is_written_whole():
    from agents.synth.offline.discourse import main_name
    assert main_name("Twenty One Pilots is a band. Twenty One Pilots released an album.") == "Twenty One Pilots"
    assert main_name("The Seven Years' War was fought. Britain won the Seven Years' War in 1763.") == "Seven Years' War"
    assert main_name("IBM Cloud Object Storage holds buckets. Create a bucket in IBM Cloud Object Storage.") == \
        "IBM Cloud Object Storage"
    assert main_name("Buckets hold objects. Delete a bucket when it is empty.") == ""


def test_a_quantified_phrase_has_no_possessive_form():
    seg = [{"question": "What is Friends?", "standalone_question": "What is Friends?", "answer": "A sitcom."}]
    seasons = QA(question="Did all ten seasons of Friends rank within the top ten?", qtype="yesno", answer="Yes",
                 sentence="", template="Did {T} rank within the top ten", topic="all ten seasons of Friends",
                 topic_kind="PLUR")
    assert "their all" not in render(seasons, seg, SHARES, 0.2)[0]
    seg = [{"question": "What are absentee ballots?", "standalone_question": "What are absentee ballots?",
            "answer": "Ballots cast by mail."}]
    source = QA(question="Is a significant source of absentee ballots the military?", qtype="yesno", answer="Yes",
                sentence="", template="Is {T} the military", topic="a significant source of absentee ballots")
    asked = render(source, seg, SHARES, 0.2)[0]
    assert "their a" not in asked and "its a" not in asked       # an indefinite head has no possessive form


def test_refer_back_leaves_a_quantified_phrase():
    from agents.synth.offline.discourse import refer_back
    seg = [{"standalone_question": "What does the JSON structure capture?", "title": "", "gold_text": "",
            "answer": "The JSON structure captures any mentions of entities. Mentions are listed."}]
    assert refer_back("When does the JSON structure capture any mentions?", seg) is None   # not "... capture them?"


def test_a_numeral_or_acronym_is_no_short_form():
    from agents.synth.offline.discourse import _short_form
    ww2 = QA(question="What was World War II?", qtype="define", answer="", sentence="", template="What was {T}",
             topic="World War II")
    assert _short_form(ww2) is None                                       # not "What was II?"
    rj = QA(question="What did Romeo and Juliet have?", qtype="what", answer="", sentence="",
            template="What did {T} have", topic="Romeo and Juliet")
    assert _short_form(rj) is None                                        # not "What did Juliet have?"
    nc = QA(question="Is North Carolina protected by the mountains?", qtype="yesno", answer="Yes", sentence="",
            template="Is {T} protected by the mountains", topic="North Carolina")
    assert _short_form(nc) is None                                        # not "Is Carolina protected ...?"
    mq = QA(question="Does IBM MQ deliver messages?", qtype="yesno", answer="Yes", sentence="",
            template="Does {T} deliver messages", topic="IBM MQ")
    assert _short_form(mq) == "Does MQ deliver messages"
    op = QA(question="Is One Piece an anime series?", qtype="yesno", answer="Yes",
            sentence="One Piece uses 37 different pieces of theme music.", template="Is {T} an anime series",
            topic="One Piece")
    assert _short_form(op) is None                                        # a title, not "Is the piece ...?"
    bw = QA(question="When did the Berlin Wall fall?", qtype="when", answer="1989", sentence="The wall fell in 1989.",
            template="When did {T} fall", topic="the Berlin Wall")
    assert _short_form(bw) == "When did the wall fall"


def test_refer_back_matches_the_plural_of_a_mentioned_phrase():
    from agents.synth.offline.discourse import _singular, refer_back
    assert [_singular(w) for w in ("cashews", "policies", "boxes", "status", "analysis", "access", "the red apples")] == \
        ["cashew", "policy", "box", "status", "analysis", "access", "the red apple"]
    seg = [{"question": "Is the cashew eaten on its own?", "standalone_question": "Is the cashew eaten on its own?",
            "answer": "Yes. It is eaten on its own, used in recipes.", "title": "Cashew", "gold_text": ""}]
    assert refer_back("Are some people allergic to cashews?", seg) == "Are some people allergic to them?"


def test_the_page_the_segment_moved_to_is_its_context():
    """A segment that opened on one page and moved to another is inside the page it is on now; a
    one-word page about a common thing is "the cashew", a one-word name keeps its capital ("Friends",
    though its sentences also say "friends"); a sentence-start capital is no name ("Some people")
    and a deictic phrase no context ("this initiative")."""
    from agents.synth.offline.discourse import context_candidates, context_phrase
    seg = [{"standalone_question": "Who wrote the song?", "question": "Who wrote the song?", "answer": "x",
            "title": "", "gold_text": ""},
           {"standalone_question": "Where is the cashew tree grown?", "question": "Where is it grown?",
            "answer": "The cashew tree is grown in Brazil. This initiative helped farmers.", "title": "Cashew",
            "gold_text": ""}]
    cands = context_candidates(seg)
    assert "cashew" in cands
    assert not any(c.split()[0] == "this" for c in cands)
    ui = [{"question": "How do I export my skill?", "standalone_question": "How do I export my skill?", "title": "",
           "gold_text": "", "answer": "Click the Actions icon and download the skill in JSON format."}]
    assert not {"actions icon", "json format"} & set(context_candidates(ui)), context_candidates(ui)
    p = {"title": "Cashew", "text": "Some people are allergic to cashews. The seed of the cashew has a double shell."}
    assert context_phrase("Is the seed surrounded by a double shell?", p, cands) == "the cashew"
    assert context_phrase("Are people allergic to the nut?", p, ["some people"]) == ""
    friends = {"title": "Friends", "text": "The six friends live in Manhattan. NBC aired Friends for ten seasons."}
    assert context_phrase("Where do the characters live?", friends, ["friends"]) == "Friends"


def test_a_name_is_not_lower_cased_into_a_common_noun_and_a_capitalised_plural_is_they():
    """"the cloudant" is no short form of "IBM Cloudant" (nobody writes "cloudant" in lower case),
    "the wall" is one of "the Berlin Wall" when the conversation writes "the wall"; "The Developers"
    that the text also calls "developers" are "they", not "it"."""
    from agents.synth.offline.discourse import _short_form
    from agents.synth.offline.qgen import passage_questions
    cl = QA(question="How do I create a database in IBM Cloudant?", qtype="how", answer="", sentence="",
            template="How do I create a database in {T}", topic="IBM Cloudant")
    assert _short_form(cl, "IBM Cloudant stores JSON documents. Cloudant scales.") is None
    wall = replace(BUILT, sentence="The Berlin Wall was built in 1961.")
    assert _short_form(wall) is None
    assert _short_form(wall, "Crowds crossed the wall in 1989.") == "When was the wall built"
    text = ("Incremental updates. The Developers can deliver incremental updates to their users. "
            "Most developers use the console.")
    kinds = {qa.topic: qa.topic_kind for qa in passage_questions(text, "") if qa.topic}
    assert kinds.get("The Developers", kinds.get("the Developers")) == "PLUR", kinds


def test_no_question_points_at_the_document_layout():
    """A person asking an assistant does not see "the following table"; a following year is time."""
    from agents.synth.offline.qgen import passage_questions, points_at_the_page
    assert points_at_the_page("What does the following table contain?")
    assert points_at_the_page("Do the below sections provide storage?")
    assert points_at_the_page("What does this section describe?")
    assert not points_at_the_page("What happened the following year?")
    assert not points_at_the_page("When is the next release?")
    text = "Users of the service create skills in the tool. The following table describes the context variables."
    qs = [qa.question for qa in passage_questions(text, "")]
    assert qs and not any("following" in q for q in qs), qs


def test_a_name_the_user_never_asked_about_is_no_context():
    """A passage's frequent one-word name becomes the context only when the user's questions (as
    asked) named it: no "... in Integer?" because the answer's passage mentions it most."""
    from agents.synth.offline.discourse import context_candidates
    seg = [{"question": "How do I create a dialog skill?", "standalone_question": "How do I create a dialog skill?",
            "title": "", "answer": "You create it in the tool.", "gold_text": "You create a dialog skill in the tool."},
           {"question": "How do I upload it?", "standalone_question": "How do I upload a dialog skill?",
            "title": "", "answer": "You upload the skill file in Assistant.",
            "gold_text": "Skills are stored by Assistant. In Assistant, you upload a skill file. Assistant checks it."}]
    cands = context_candidates(seg)
    assert "assistant" not in cands, cands
    seg[1]["question"] = "How do I upload it to Assistant?"
    assert "assistant" in context_candidates(seg)
    # the focus itself, when it is the opening passage's most frequent one-word name
    one = [{**seg[1], "question": "How do I upload a dialog skill?"}]
    assert "assistant" not in context_candidates(one)


def test_fallback_definition_takes_the_article_the_passage_writes():
    from agents.synth.offline.questioning import _fallback
    wall = {"doc_id": "w", "title": "Great Wall of China",
            "text": "The Great Wall of China is a series of fortifications. Parts of the Great Wall are ruined."}
    assert _fallback({"passages": [wall]})[1] == "What is the Great Wall of China?"
    boise = {"doc_id": "b", "title": "Boise State University", "text": "Boise State University is a university."}
    assert _fallback({"passages": [boise]})[1] == "What is Boise State University?"
    # a list's heading is no thing to define: "What is List of Marvel Cinematic Universe films?" was asked
    import pytest
    from agents.synth.questioner import NothingToAsk
    films = {"doc_id": "f", "title": "", "text": "List of Marvel Cinematic Universe films\nAfter Stephen Strange, the "
                                                 "world's top neurosurgeon, is involved in a car accident, he sets out."}
    with pytest.raises(NothingToAsk):
        _fallback({"passages": [films]})


def test_fallback_asks_only_what_a_passage_answers_and_else_fails_explicitly():
    """"What is World War I?" was asked of a passage about observation balloons: the fallback definition goes to
    the passage that defines its page's subject, and with none the attempt fails with a reason (no generic "What
    else should I know about this topic?" for the verifier to pass or reject)."""
    from agents.synth.offline.questioning import _fallback
    balloons = {"doc_id": "w", "title": "World War I",
                "text": "World War I\nManned observation balloons , floating high above the trenches , were used ."}
    cup = {"doc_id": "c", "title": "Stanley Cup",
           "text": "Stanley Cup\nThe Stanley Cup ( French : La Coupe Stanley ) is the championship trophy ."}
    assert _fallback({"passages": [balloons, cup]})[:2] == (2, "What is the Stanley Cup?")
    with pytest.raises(ValueError, match="no question left"):
        _fallback({"passages": [balloons]})
    # a passage that opens with its subject is about it: asked when none defines it
    climate = {"doc_id": "d", "title": "Dasht-e Kavir", "text": "Dasht-e Kavir\nThe Dasht-e Kavir 's climate is arid . Little rain falls on the Dasht-e Kavir ."}
    assert _fallback({"passages": [balloons, climate]})[:2] == (2, "What is the Dasht-e Kavir?")


SUPER_BOWL = {"doc_id": "sb", "title": "Super Bowl XXVII",
              "text": "Super Bowl XXVII was played in 1993 in Pasadena. The game was won by Dallas. The halftime show "
                      "featured Michael Jackson. It drew a record audience of 133 million viewers."}


def test_an_elliptical_request_about_something_new_inside_the_context():
    """"What about the halftime show?" / "And the halftime show?" asked inside a conversation about Super Bowl
    XXVII: the rewrite is a request with the context, and the answer is what the passage says about it, from the
    first sentence that names it, which the verifier accepts."""
    from agents.synth.offline import questioning
    from agents.synth.offline.answering import answer, check
    from agents.synth.offline.qgen import passage_questions, well_formed
    show = next(qa for qa in passage_questions(SUPER_BOWL["text"], SUPER_BOWL["title"])
                if qa.topic == "the halftime show" and qa.qtype == "who")
    asked, standalone = questioning._request(show, "Super Bowl XXVII", [])
    assert asked in ("What about the halftime show?", "And the halftime show?")
    assert standalone == "What can you tell me about the halftime show in Super Bowl XXVII?"
    assert well_formed(standalone) is None and well_formed("What did the coach tell me?") is not None
    got = answer(asked, standalone, SUPER_BOWL)
    assert got == "The halftime show featured Michael Jackson. It drew a record audience of 133 million viewers."
    assert check({"question": asked, "standalone_question": standalone, "answer": got, "passage": SUPER_BOWL})[
        "reasons"] == []
    # no request about a pronoun or a quantifier, about the context itself, or one the conversation asked already
    assert questioning._request(replace(show, topic="it"), "Super Bowl XXVII", []) is None
    assert questioning._request(replace(show, topic="many fans"), "Super Bowl XXVII", []) is None
    assert questioning._request(replace(show, topic="Super Bowl XXVII"), "Super Bowl XXVII", []) is None
    assert questioning._request(show, "Super Bowl XXVII", [standalone]) is None
    # inside the segment's context, with the share, the follow-up is asked as the request
    seg = [{"question": "Where was Super Bowl XXVII played?", "standalone_question": "Where was Super Bowl XXVII "
            "played?", "answer": "Pasadena. Super Bowl XXVII was played in 1993 in Pasadena.",
            "title": "Super Bowl XXVII", "gold_text": SUPER_BOWL["text"]}]
    from agents.synth.offline.discourse import context_candidates, segment_topics
    got = questioning._follow_up(show, 0, [SUPER_BOWL], seg, segment_topics(seg), context_candidates(seg),
                                 DiscourseShares(request=1.0), ["Where was Super Bowl XXVII played?"])
    assert got == (asked, standalone, True)
    assert questioning._follow_up(show, 0, [SUPER_BOWL], seg, segment_topics(seg), context_candidates(seg),
                                  DiscourseShares(request=0.0), ["Where was Super Bowl XXVII played?"])[1] != standalone


def test_a_request_needs_a_specific_subject_and_is_answered_by_a_sentence_about_it():
    from agents.synth.offline import questioning
    from agents.synth.offline.answering import answer
    from agents.synth.offline.qgen import QA
    wave = QA(question="What kept increasing?", qtype="what", answer="x", sentence="", topic="the wave")
    assert questioning._request(wave, "the Berlin Wall", []) is None          # "What about the wave?" of what?
    assert questioning._request(replace(wave, topic=""), "the Berlin Wall", []) is None     # a question with no topic
    east = QA(question="What did East Germany seal?", qtype="what", answer="x", sentence="", topic="East Germany")
    assert questioning._request(east, "the Berlin Wall", [])[1] == \
        "What can you tell me about East Germany in the Berlin Wall?"
    p = {"doc_id": "v", "title": "", "text": "However, the router provides no next-generation firewall add-ons. The "
         "firewall of the gateway blocks unknown traffic. It logs every rule."}
    assert answer("What about the firewall?", "What can you tell me about the firewall in IBM Cloud?", p) == \
        "The firewall of the gateway blocks unknown traffic. It logs every rule."


def test_an_event_context_is_asked_during_and_in_it_only_for_a_task_in_a_product():
    """The implicit context is named with the preposition people use: "during" for an event or a period
    ("... arrest during the Quit India Movement?"); its pronoun form is "during it", or "in it" for a task done
    in a product ("How do I publish my bot in it?"); other questions leave it implicit rather than end in an
    odd "in it" ("What did the production star in it?"), or name a part of it "its" part
    (:func:`agents.synth.offline.questioning._context_possessive`)."""
    from agents.synth.offline.discourse import is_event, with_context
    from agents.synth.offline.questioning import _context_pronoun
    for p in ("World War II", "the Quit India Movement", "the Qing dynasty", "British rule", "the Battle of Gettysburg",
              "Operation Barbarossa", "the Fall of the Western Roman Empire", "Mughal rule", "the Partition of India"):
        assert is_event(p), p
    for p in ("the Soviet Union in World War II", "the history of India", "Mars", "IBM Cloud", "Friends",
              "Fall Out Boy", "egg donation", "Warsaw", "the firewall rule", "an access rule", "the disk partition"):
        assert not is_event(p), p
    assert with_context("How many leaders did the government arrest?", "the Quit India Movement") == \
        "How many leaders did the government arrest during the Quit India Movement?"
    assert with_context("How do I create a database?", "IBM Cloudant") == "How do I create a database in IBM Cloudant?"
    assert with_context("What did the army capture in China?", "World War II") == \
        "What did the army capture in China during World War II?"
    assert _context_pronoun("What did the army capture?", "World War II") == "What did the army capture during it?"
    assert _context_pronoun("How do I publish my bot?", "Microsoft Teams") == "How do I publish my bot in it?"
    assert _context_pronoun("What did the production star?", "Romeo and Juliet") is None
    # no "in it" on another question ("Who watched the retrospective episode in it?"); a part of it is "its" part
    assert _context_pronoun("Who watched the retrospective episode?", "Friends") == \
        "Who watched its retrospective episode?"
    assert _context_pronoun("Who watched the episode?", "Friends") is None
    assert _context_pronoun("What happened during the siege?", "World War II") is None       # has a during already


def test_a_name_the_conversation_gave_is_left_out_of_the_phrase_it_modifies():
    from agents.synth.offline.discourse import elide_given
    given = ["jewish wedding", "ibm cloud", "hudson", "cashew"]
    assert elide_given("How many stages does the Jewish wedding process have?", given) == \
        "How many stages does the process have?"
    assert elide_given("Does a traditional Jewish wedding ceremony take place under a canopy?", given) == \
        "Does the traditional ceremony take place under a canopy?"
    assert elide_given("How do I open the IBM Cloud console?", given) == "How do I open the console?"
    assert elide_given("What did the Jewish wedding's rituals include?", given) is None     # a possessive
    assert elide_given("What is the Jewish wedding?", given) is None                        # the name is the head
    assert elide_given("Is the top end of the cashew apple attached?", given) is None       # one common word
    assert elide_given("What has the Hudson River region seen?", given) is None              # inside a longer name
    assert elide_given("What did the Jewish wedding people do?", given) is None              # "the people" says nothing
    assert elide_given("How many stages does the Jewish wedding process have?", []) is None


def test_an_elided_follow_up_keeps_the_name_in_its_standalone_form():
    from agents.synth.offline.discourse import context_candidates, segment_topics
    from agents.synth.offline.questioning import _follow_up
    p = [{"doc_id": "w2", "title": "Jewish wedding", "text": "The bride wears a veil under the Jewish wedding canopy."}]
    seg = [{"question": "What is a Jewish wedding?", "standalone_question": "What is a Jewish wedding?",
            "answer": "A Jewish wedding is a wedding ceremony that follows Jewish laws and traditions.",
            "title": "Jewish wedding", "gold_text": "A Jewish wedding is a wedding ceremony that follows Jewish laws."}]
    qa = QA(question="What does the bride wear under the Jewish wedding canopy?", qtype="what", answer="A veil",
            sentence="", template="What does {T} wear under the Jewish wedding canopy", topic="the bride")
    shares = DiscourseShares(pronoun=0.45, short=0.45, ellipsis=0.09)      # asked in full 1% of the time
    asked, standalone, leans = _follow_up(qa, 0, p, seg, segment_topics(seg), context_candidates(seg), shares,
                                          ["What is a Jewish wedding?"])
    assert (asked, standalone, leans) == ("What does the bride wear under the canopy?",
                                          "What does the bride wear under the Jewish wedding canopy?", True)


def test_an_opening_question_names_what_it_is_about(monkeypatch):
    import agents.synth.offline.questioning as questioning
    wall = {"doc_id": "g1", "title": "Great Wall of China", "text": "The Great Wall of China is a series of "
            "fortifications. The gates were opened in 1644 by the commanding general. The Great Wall of China was "
            "built to protect the states against raids."}
    names = questioning.subject_names(wall)
    assert questioning.names_subject("Why was the Great Wall of China built?", names)
    assert not questioning.names_subject("When were the gates opened?", names)
    opener = questioning.ask({"passages": [wall], "segment": [], "used_gold": []})[1]
    assert questioning.names_subject(opener, names), opener
    monkeypatch.setattr(questioning, "OPENER_NAMES_BONUS", 0.0)
    monkeypatch.setattr(questioning, "VAGUE_OPENER_COST", 0.0)     # (the other opener names nothing either)
    assert not questioning.names_subject(questioning.ask({"passages": [wall], "segment": [], "used_gold": []})[1], names)


def test_a_phrase_that_only_says_which_one_is_no_context():
    from agents.synth.offline.discourse import context_candidates
    seg = [{"question": "How do I specify a new JWT at the beginning of each session?",
            "answer": "Now that you have implemented a function to generate a signed JWT, you must update the web chat "
                      "integration. Whenever the existing JWT expires, generate a new one. The Jewish wedding is long."}]
    got = context_candidates(seg)
    assert not {"signed jwt", "existing jwt", "new jwt", "each session"} & set(got), got
    assert "jewish wedding" in got and "web chat integration" in got, got      # names and noun compounds stay


def test_history_need_is_the_gold_ranks_gain_from_the_asked_form_to_the_standalone_form():
    """1 / log2(1 + rank) of the gold passage in the corpus search's top 10, standalone minus asked, times the
    weight; nothing for a follow-up asked in full; each query searched once; off without a search or a weight."""
    import math
    from types import SimpleNamespace

    import pytest

    from agents.synth.config import SynthConfig
    from agents.synth.questioner import NEED_K, history_need
    hits = {"When was it built?": ["x", "y"], "When was the Berlin Wall built?": ["wall", "x"],
            "When was the wall built?": ["x", "y", "wall"], "And in 1961?": ["wall"]}
    asked = []

    def search(q, k):
        asked.append((q, k))
        return hits.get(q, [])
    ctx = SimpleNamespace(need_search=search, need_hits={}, cfg=SynthConfig(offline_history_need_weight=2.0))
    need = history_need(ctx)
    assert need("wall", "When was it built?", "When was the Berlin Wall built?") == 2.0      # found only in full
    assert need("wall", "When was the wall built?", "When was the Berlin Wall built?") == pytest.approx(2.0 * (1 - 0.5))
    assert need("wall", "And in 1961?", "When was it built?") == -2.0           # the rewrite loses what the question finds
    assert need("wall", "When was the Berlin Wall built?", "When was the Berlin Wall built?") == 0.0   # asked in full
    assert sorted(asked) == sorted({(q, NEED_K) for q in hits})                      # each query once
    assert 1.0 / math.log2(2 + 2) == 0.5
    assert history_need(SimpleNamespace(need_search=None, need_hits={}, cfg=SynthConfig())) is None
    assert history_need(SimpleNamespace(need_search=search, need_hits={},
                                        cfg=SynthConfig(offline_history_need_weight=0.0))) is None


def _super_bowl_follow_up(yesno: float) -> dict:
    """The questioner's input for a follow-up of "Where was Super Bowl XXVII played?" on SUPER_BOWL."""
    seg = [{"question": "Where was Super Bowl XXVII played?", "standalone_question": "Where was Super Bowl XXVII "
            "played?", "answer": "Pasadena. Super Bowl XXVII was played in 1993 in Pasadena.",
            "title": "Super Bowl XXVII", "gold_text": SUPER_BOWL["text"]}]
    return {"passages": [SUPER_BOWL], "segment": seg, "used_gold": ["sb"], "attempt": 0,
            "previous_standalone": ["Where was Super Bowl XXVII played?"], "previous_questions": [],
            "discourse": {"pronoun": 0.4, "short": 0.4, "ellipsis": 0.1, "request": 0.35, "yesno": yesno}}


def test_a_follow_up_the_search_finds_only_with_the_conversation_ranks_first():
    """Of the rendered follow-ups, the one whose passage the corpus search finds only through its standalone form
    is asked, over the questioner's first choice when that one's own words find its passage."""
    from agents.synth.offline import questioning
    x = _super_bowl_follow_up(yesno=0.0)
    first = questioning.ask(x)
    leaning = []

    class Need:
        weight = 3.0

        def __call__(self, gold, asked, standalone):
            leaning.append((asked, standalone))
            return 0.0 if asked == first[1] else 3.0 * (asked != standalone)
    second = questioning.ask({**x, "need": Need()})
    assert any(a != first[1] and a != s for a, s in leaning)       # another follow-up leans on the conversation
    assert second[1] != first[1] and second[1] != second[2]
    assert (second[1], second[2]) in leaning


def test_a_yes_no_follow_up_its_own_words_find_loses_to_one_that_needs_the_conversation():
    """A yes/no follow-up copies its passage's clause, so its own words find the passage ("Was the game won by
    Dallas?"): one whose rewrite finds its passage no better than its asked form loses ``YESNO_ALONE_COST``, and
    one that needs the conversation to be found keeps its place (people's yes/no follow-ups need it most)."""
    from agents.synth.offline import questioning
    x = _super_bowl_follow_up(yesno=1.0)

    class Need:
        weight = 3.0

        def __init__(self, yesno: float):
            self.yesno = yesno

        def __call__(self, gold, asked, standalone):
            # every leaning follow-up is found as well in either form, or a yes/no one better through its rewrite
            return self.yesno if asked != standalone and asked.split()[0] in ("Did", "Was", "Is") else 0.0
    kept = questioning.ask({**x, "need": Need(1.0)})
    assert kept[1].startswith(("Did ", "Was ")) and kept[1] != kept[2], kept      # the yes/no the ranking put first
    alone = questioning.ask({**x, "need": Need(0.0)})
    assert not alone[1].startswith(("Did ", "Was ", "Is ")), alone                 # now a wh-question or a request
    assert alone[1] != alone[2], alone                                             # that leans as well


def test_the_history_need_is_searched_only_while_a_candidate_can_still_be_picked():
    """Skipping the candidates whose score plus the largest need is below the attempt-th best so far picks the same
    follow-up as adding every candidate's need (and taking YESNO_ALONE_COST from every yes/no one that does not need
    the conversation), with fewer searches."""
    import random

    from agents.synth.offline.qgen import QA
    from agents.synth.offline.questioning import YESNO_ALONE_COST, _with_need
    rng = random.Random(7)
    wh = QA(question="q", qtype="what", answer="a", sentence="")
    yesno = QA(question="q", qtype="yesno", answer="Yes", sentence="")
    saved = 0
    for trial in range(600):
        n = rng.randint(1, 14)
        values = {f"a{j}": rng.choice([-1.0, 0.0, 0.37, 1.0]) * 1.5 for j in range(n)}
        head = [(round(rng.uniform(0, 6), 1), 0, yesno if rng.random() < 0.4 else wh,
                 (f"a{j}", f"s{j}" if rng.random() < 0.7 else f"a{j}", True)) for j in range(n)]

        class Need:
            weight = 1.5
            calls = 0

            def __call__(self, gold, asked, standalone):
                Need.calls += 1
                return 0.0 if asked == standalone else values[asked]
        attempt = rng.randint(0, 3)
        if attempt >= n:
            continue
        gain = lambda r: values[r[0]] if r[0] != r[1] else 0.0       # noqa: E731 - asked in full: no need
        full = [(s + gain(r) - (YESNO_ALONE_COST if q.qtype == "yesno" and gain(r) <= 0 else 0.0), i, q, r)
                for s, i, q, r in head]
        got = _with_need(head, Need(), [{"doc_id": "g"}], attempt)
        pick = lambda h: sorted(h, key=lambda e: -e[0])[attempt][3]      # noqa: E731 - the questioner's sort
        assert pick(got) == pick(full), trial
        saved += n - Need.calls
    assert saved > 0


def test_groups_of_people_are_no_context_and_a_title_with_its_own_in_is_not_added():
    from agents.synth.offline.discourse import context_candidates, context_phrase
    seg = [{"question": "Who ruled the province?", "standalone_question": "Who ruled the province?",
            "answer": "The Roman authorities. The Roman authorities ruled the province, and the Axis powers later "
                      "occupied it, as the Byzantine Empire also knew.",
            "title": "", "gold_text": ""}]
    cands = context_candidates(seg)
    assert "roman authorities" not in cands and "axis powers" not in cands, cands
    assert "byzantine empire" in cands, cands
    # only the title has it: not "What did horse artillery units use in horses in warfare?"
    assert context_phrase("What did horse artillery units use?", {
        "title": "Horses in warfare", "text": "Horse artillery units generally used lighter pieces."},
        ["horses in warfare"]) == ""
    # a name the text writes is kept
    assert context_phrase("How many locations does the chain have?", {
        "title": "Jack in the Box", "text": "Jack in the Box is an American fast-food chain. The chain has 2,200 "
                                            "locations."}, ["jack in the box"]) == "Jack in the Box"


def test_a_follow_up_moves_on_to_a_related_passage_not_to_an_unrelated_one():
    """A shown passage of another page whose MiniLM cosine with every passage the segment read is below 0.2 is
    unrelated, and a follow-up never asks of it: with nothing else shown, the attempt fails (NothingToAsk)."""
    import agents.synth.offline.questioning as questioning
    wall = {"doc_id": "w", "title": "Berlin Wall", "text": "The Berlin Wall was a guarded concrete barrier that "
            "physically and ideologically divided Berlin from 1961 to 1989. Construction of the wall was commenced by "
            "the German Democratic Republic on 13 August 1961."}
    silicon = {"doc_id": "s", "title": "Polycrystalline silicon", "text": "Polycrystalline silicon is a high purity "
               "form of silicon used as a raw material by the solar photovoltaic and electronics industry. It is "
               "produced from metallurgical grade silicon by a chemical purification process called the Siemens "
               "process, which was introduced in 1953."}
    border = {"doc_id": "g", "title": "Inner German border", "text": "Checkpoint Charlie was the best-known crossing "
              "point between East Berlin and West Berlin during the Cold War."}
    other_wall = {"doc_id": "w2", "title": "Berlin Wall", "text": "Paint and graffiti covered the western side."}
    seg = [{"question": "When was the Berlin Wall built?", "standalone_question": "When was the Berlin Wall built?",
            "answer": "1961. Construction of the wall was commenced by the German Democratic Republic on 13 August "
                      "1961.", "title": "Berlin Wall", "gold_text": wall["text"]}]
    # another page's unrelated passage only; the same page counts as related whatever its words
    assert questioning._unrelated([wall, silicon, border, other_wall], seg) == {1}
    assert questioning._unrelated([silicon], []) == set()
    # after an unanswerable turn (no passage) the turn before it is the one to stay related to
    unanswerable = {"question": "Who designed it?", "standalone_question": "Who designed the Berlin Wall?",
                    "answer": "I could not find that.", "title": "", "gold_text": ""}
    assert questioning._unrelated([wall, silicon, border, other_wall], seg + [unanswerable]) == {1}
    x = {"passages": [silicon, border], "segment": seg, "used_gold": ["w"], "attempt": 0,
         "previous_standalone": ["When was the Berlin Wall built?"], "previous_questions": [],
         "discourse": {"pronoun": 0.5, "short": 0.35, "ellipsis": 0.1, "request": 0.35, "yesno": 0.5},
         "thread_looks": questioning.THREAD_LOOKS}     # (asked in full once the looks at other passages are spent)
    assert questioning.ask(x)[:2] == (2, "Was Checkpoint Charlie the best-known crossing point?")
    # with only the unrelated passage shown there is nothing to ask: the next attempt is shown other passages
    import pytest
    from agents.synth.questioner import NothingToAsk
    with pytest.raises(NothingToAsk):
        questioning.ask({**x, "passages": [silicon]})
    assert questioning.ask({**x, "passages": [silicon], "segment": []})[0] == 1     # an opening question may


def test_the_focus_drops_the_titles_disambiguation_and_a_person_page_is_no_context():
    from agents.synth.offline.discourse import context_candidates, focus
    seg = [{"question": "Who is Ryan Howard?", "standalone_question": "Who is Ryan Howard?", "title":
            "Ryan Howard (The Office)", "answer": "Ryan Howard is a fictional character. Ryan Howard starts as a temp "
            "at Dunder Mifflin.", "gold_text": "Ryan Howard is a fictional character in The Office. Ryan Howard "
            "starts as a temp at Dunder Mifflin, and Kelly Kapoor dates him."}]
    assert focus(seg) == "Ryan Howard"
    got = context_candidates(seg)
    assert not any(c.startswith("ryan howard") for c in got), got     # no "What does Kelly flaunt in Ryan Howard?"
    seg[0]["title"] = "Wonder Woman (2017 film)"
    assert focus(seg) == "Wonder Woman"


def test_a_quantified_phrase_is_no_context_and_a_mass_noun_page_takes_no_article():
    from agents.synth.offline.discourse import context_candidates, context_phrase
    seg = [{"question": "Who built sewer systems?", "standalone_question": "Who built sewer systems?",
            "title": "Sanitation", "answer": "Numerous American cities. In the 1850s numerous American cities built "
            "sewer systems, and Chicago built the first one.", "gold_text": "In the 1850s numerous American cities "
            "built sewer systems, and Chicago built the first one."}]
    got = context_candidates(seg)
    assert "sewer systems" in got and "numerous american cities" not in got, got     # not "... for numerous ...?"
    apoptosis = {"title": "Apoptosis", "text": "Apoptosis\nApoptosis is a process of programmed cell death that occurs "
                 "in multicellular organisms. Between 50 and 70 billion cells die each day due to apoptosis."}
    seg = [{"question": "What is apoptosis?", "standalone_question": "What is apoptosis?", "title": "Apoptosis",
            "answer": "A process of programmed cell death. Apoptosis is a process of programmed cell death.",
            "gold_text": apoptosis["text"]}]
    assert context_phrase("How many cells die each day?", apoptosis, context_candidates(seg)) == "apoptosis"
    cashew = {"title": "Cashew", "text": "Cashew\nThe cashew tree is a tropical evergreen. The cashew seed is a nut."}
    seg = [{"question": "What is the cashew?", "standalone_question": "What is the cashew?", "title": "Cashew",
            "answer": "A tropical evergreen. The cashew tree is a tropical evergreen.", "gold_text": cashew["text"]}]
    assert context_phrase("Is the seed considered a nut?", cashew, context_candidates(seg)) == "the cashew"


def test_a_word_of_a_longer_name_is_no_context():
    # "Prejudice", the most frequent name of a passage about "Pride and Prejudice and Zombies", gave
    # "What did Michael Wearing of the BBC commission in Prejudice?"
    from agents.synth.offline.discourse import context_candidates
    text = ("Pride and Prejudice and Zombies (stylised as Pride + Prejudice + Zombies) is a 2016 parody film based on "
            "the novel Pride and Prejudice and Zombies, which parodies the novel Pride and Prejudice by Jane Austen.")
    seg = [{"question": "Who directs Pride and Prejudice and Zombies?",
            "standalone_question": "Who directs Pride and Prejudice and Zombies?", "answer": "Burr Steers.",
            "title": "Pride and Prejudice and Zombies (film)", "gold_text": text}]
    cands = context_candidates(seg)
    assert "pride and prejudice and zombies" in cands and "prejudice" not in cands, cands
    # a one-word name that also stands alone in the text stays a context beside the longer name
    mars = ("Mars has been explored by spacecraft. NASA's Mars Odyssey orbiter entered Mars orbit in 2001. Dust covers "
            "much of the surface of Mars. Mars is the fourth planet. On Mars the dust storms are large.")
    seg = [{"question": "When did NASA's Mars Odyssey orbiter enter Mars orbit?",
            "standalone_question": "When did NASA's Mars Odyssey orbiter enter Mars orbit?", "answer": "In 2001.",
            "title": "Exploration of Mars", "gold_text": mars}]
    assert "mars" in context_candidates(seg), context_candidates(seg)


def test_refer_back_leaves_half_of_a_pair():
    # "How do I pass context from it to node?" (rewrite "... from node to node?")
    from agents.synth.offline.discourse import refer_back
    seg = [{"standalone_question": "How do I add context variables to a dialog node?",
            "answer": "Open the dialog node and add the context variable to the node.", "title": "", "gold_text": ""}]
    got = refer_back("How do I pass context from dialog node to dialog node?", seg)
    assert got is None or "from it to" not in got, got
    assert refer_back("How do I delete Container Registry resources?", REG) == "How do I delete them?"


def test_the_page_the_conversation_is_on_is_a_topic_to_refer_back_to():
    """On the Non-cooperation movement page after a turn about the Swaraj Party, "Was the Non-Cooperation Movement a
    significant phase ...?" was asked in full: the page's subject was no topic (only the segment's first page and
    the questions' noun phrases were). The page of the previous turn is one now."""
    from agents.synth.offline.discourse import coreferable
    seg = [{"question": "When was the massacre?", "standalone_question": "When was the Jallianwala Bagh Massacre?",
            "answer": "In 1919.", "title": "Jallianwala Bagh massacre"},
           {"question": "Who formed the Swaraj Party?", "standalone_question": "Who formed the Swaraj Party?",
            "answer": "Motilal Nehru.", "title": "Non-cooperation movement"}]
    topics = segment_topics(seg)
    assert topics[1] == "noncooperation movement", topics
    qa = QA(question="Was the non-cooperation movement a significant phase of the independence movement?",
            qtype="yesno", answer="Yes", sentence="", template="Was {T} a significant phase of the independence movement",
            topic="the non-cooperation movement", topic_kind="SING")
    assert coreferable(qa, topics) == 1


def test_a_topic_with_its_phrase_has_no_short_form_of_the_phrases_noun():
    # "potential difficulties with primary sources" was shortened to "the sources": "Do the sources have the result?"
    from agents.synth.offline.discourse import _short_form
    qa = QA(question="Do potential difficulties with primary sources have drawbacks?", qtype="yesno", answer="Yes",
            sentence="", template="Do {T} have drawbacks", topic="potential difficulties with primary sources",
            topic_kind="PLUR")
    assert _short_form(qa) is None
    wall = QA(question="When was the Berlin Wall built?", qtype="when", answer="1961", sentence="The wall was built.",
              template="When was {T} built", topic="the Berlin Wall", topic_kind="SING")
    assert _short_form(wall, "the wall fell") == "When was the wall built"


def test_a_context_name_gets_the_article_and_case_a_rewrite_needs():
    # rewrites read "... in United States?", "... in Economy of India?", "... in Berlin Wall?", "... for Football?"
    # from a page title or a name the passage writes without its article
    from agents.synth.offline.discourse import _as_phrase, context_phrase
    hudson = {"title": "Hudson River", "text": "Hudson River\nThe Erie Canal became an important transportation "
                                                 "artery for the early-19th-century United States."}
    said = "Why did the Patriots win? The Patriots founded the United States of America."
    assert context_phrase("What did the area inspire?", hudson, ["united states"], said) == "the United States"
    # the passage alone gives no article; a plural or a head English names with "the" gets one
    assert context_phrase("What did the area inspire?", hudson, ["united states"]) == "the United States"
    wall = {"title": "Berlin Wall", "text": "Berlin Wall\nThe longtime leader of East Germany resigned in 1989."}
    assert context_phrase("When did the leader resign?", wall, ["berlin wall"]) == "the Berlin Wall"
    assert _as_phrase("Seattle Seahawks", "Seattle Seahawks\nThe NFL gave the city a franchise.", "") == \
        "the Seattle Seahawks"
    # a title's sentence case undone
    india = {"title": "Economy of India under the British Raj",
             "text": "Economy of India under the British Raj\nHistorians have blamed the colonial rule."}
    assert context_phrase("What have historians blamed?", india, ["economy of india"]) == "the economy of India"
    # names written bare stay bare
    assert _as_phrase("Imperial Japan", "The navy of Imperial Japan attacked.", "") == "Imperial Japan"
    assert _as_phrase("Romeo and Juliet", "Romeo and Juliet\nThe play ends.", "") == "Romeo and Juliet"
    assert _as_phrase("Franklin D. Roosevelt", "Franklin D. Roosevelt\nHe was elected.", "") == "Franklin D. Roosevelt"


def test_a_one_word_page_written_in_lower_case_is_a_common_noun_context():
    from agents.synth.offline.discourse import context_phrase
    football = {"title": "Football", "text": "Football\nStudents played a game called football. In 1888 the Football "
                                             "League was founded, and football spread."}
    assert context_phrase("What did Yale University ban in 1860?", football, ["football"]) == "football"


def test_a_sentence_initial_adjective_phrase_is_no_context():
    from agents.synth.offline.discourse import context_phrase
    libya = {"title": "Libya", "text": "Libya\nThe Empire returned. Unpopular Byzantine governors imposed taxes, and "
                                       "Cyrenaica took on a military character."}
    assert context_phrase("What did Cyrenaica take on?", libya, ["unpopular byzantine governors"]) == ""


def test_a_one_word_page_name_the_conversation_said_is_the_context_of_its_passage():
    # "What did the state have in 2012?" on the page Oklahoma, in a conversation about Oklahoma, was asked in full
    from agents.synth.offline.discourse import context_phrase
    ok = {"title": "Oklahoma", "text": "Oklahoma\nThe state had 85,500 farms in 2012, with $4.3 billion in animal "
                                       "products."}
    assert context_phrase("What did the state have in 2012?", ok, ["oklahoma"]) == "Oklahoma"


def test_a_named_storm_is_an_event():
    from agents.synth.offline.discourse import with_context
    assert with_context("What did the French armed forces fly?", "Hurricane Irma") == \
        "What did the French armed forces fly during Hurricane Irma?"


def test_a_title_with_its_own_in_phrase_is_no_context_where_only_the_title_line_says_it():
    # "Does the waste water percolate in the soil in Environmental issues in India?"
    from agents.synth.offline.discourse import context_phrase
    p = {"title": "Environmental issues in India", "text": "Environmental issues in India\nThe waste water percolates "
                                                           "in the soil."}
    assert context_phrase("Does the waste water percolate?", p, ["environmental issues in india"]) == ""
    p = {"title": "Jack in the Box", "text": "Jack in the Box\nThe chain of Jack in the Box sells burgers."}
    assert context_phrase("What does the chain sell?", p, ["jack in the box"]) == "Jack in the Box"


def test_a_person_the_passage_names_is_no_context_even_when_the_answers_do_not_say_the_full_name():
    # "What can you tell me about the next president in Adolf Hitler?", "What did Daniels and Roosevelt institute in
    # Franklin D. Roosevelt?": the person's page title came through as the context
    from agents.synth.offline.discourse import context_candidates
    seg = [{"question": "Who was appointed chancellor?", "standalone_question": "Who was appointed chancellor?",
            "title": "Adolf Hitler", "answer": "Hitler was appointed chancellor in 1933.",
            "gold_text": "Adolf Hitler\nAdolf Hitler was a German politician. Hitler was appointed chancellor in 1933. "
                         "Hindenburg died in 1934."}]
    got = context_candidates(seg)
    assert not any("hitler" in c.split() for c in got), got
    seg = [{"question": "Who was Romeo and Juliet written by?", "standalone_question":
            "Who was Romeo and Juliet written by?", "title": "Romeo and Juliet",
            "answer": "Romeo and Juliet was written by William Shakespeare.",
            "gold_text": "Romeo and Juliet\nRomeo and Juliet is a tragedy written by William Shakespeare. Juliet "
                         "falls in love with Romeo."}]
    assert "romeo and juliet" in context_candidates(seg)      # a title that joins names is no person


def test_a_group_of_people_is_no_context():
    # "Did Phillip II's enemies become Portugal's enemies in the Dutch?", "How many people attempted to escape in East
    # Germans?": a nationality the conversation mentioned came through as the context
    from agents.synth.offline.discourse import context_candidates
    seg = [{"question": "Who were Portugal's enemies?", "standalone_question": "Who were Portugal's enemies?",
            "title": "Iberian Union", "answer": "During the Iberian Union, Portugal's enemies, such as the Dutch, became "
                                                "enemies of Spain. Many East Germans fled.",
            "gold_text": "Iberian Union\nThe Iberian Union lasted sixty years. Portugal's enemies became the enemies of "
                         "Spain, such as the Dutch. The Dutch Republic attacked Portuguese colonies."}]
    got = context_candidates(seg)
    assert "dutch" not in got and "east germans" not in got, got
    assert "iberian union" in got


def test_an_elided_name_leaves_the_phrases_own_possessive():
    # "How do I generate or view credentials for the my instance?"
    from agents.synth.offline.discourse import elide_given
    assert elide_given("How do I generate or view credentials for my Netezza Performance Server instance?",
                       ["netezza performance server"]) == "How do I generate or view credentials for my instance?"


def test_an_opening_question_names_something(monkeypatch):
    # "What does the law require?", "How many plays were directed?": openers that name nothing, where the passage
    # had a question about something named
    import agents.synth.offline.questioning as questioning
    assert questioning.vague("What does the law require?") and questioning.vague("How many plays were directed?")
    assert not questioning.vague("When did Japanese officials leave for Manila?")
    assert not questioning.vague("What is Escape 2 Africa?")
    assert questioning.vague("When were the gates opened in 1644?")          # a date names nothing
    donation = {"doc_id": "e1", "title": "Egg donation", "text": "Egg donation\nThe law mandates a waiting period "
                "of six months. In 2005, the FDA introduced new tissue rules for egg donors."}
    opener = questioning.ask({"passages": [donation], "segment": [], "used_gold": []})[1]
    assert not questioning.vague(opener), opener
    monkeypatch.setattr(questioning, "VAGUE_OPENER_COST", 0.0)
    assert questioning.vague(questioning.ask({"passages": [donation], "segment": [], "used_gold": []})[1])


def test_a_title_that_starts_with_the_keeps_its_capital_in_a_rewrite():
    # "When did the season premiere in the Office?": the passage writes "The Office" inside its sentences
    from agents.synth.offline.discourse import context_phrase
    p = {"title": "The Office (U.S. season 9)", "text": "The Office (U.S. season 9)\nThe ninth season of The Office "
         "premiered on NBC. The season was the last of the series."}
    assert context_phrase("When did the season premiere?", p, ["office"]) == "The Office"
    p = {"title": "Berlin Wall", "text": "Berlin Wall\nThe Berlin Wall was a guarded barrier. Construction of the "
                                         "Berlin Wall began in 1961."}
    assert context_phrase("When did construction begin?", p, ["berlin wall"]) == "the Berlin Wall"


def test_a_context_name_with_a_possessive_is_found_in_its_passage():
    # "What does a dynamic mutation produce?" on the page Huntington's disease was asked in full: the normalised
    # candidate "huntingtons disease" never matched the passage's "Huntington's disease"
    from agents.synth.offline.discourse import context_phrase
    p = {"title": "Huntington's disease", "text": "Huntington's disease\nHuntington's disease (HD) is an inherited "
         "disorder. A dynamic mutation produces longer repeats in HD."}
    assert context_phrase("What does a dynamic mutation produce?", p, ["huntingtons disease"]) == "Huntington's disease"


def test_a_rewrite_names_in_full_what_its_passage_calls_by_a_shorter_name():
    # "Did it develop a mixed relationship?" was rewritten "Did the Empire develop a mixed relationship?" in a
    # conversation about the Byzantine Empire: no standalone question
    from agents.synth.offline.discourse import full_name
    from agents.synth.offline.qgen import passage_questions
    text = "The Byzantine Empire lasted a thousand years. The Empire developed a mixed relationship with the West."
    qa = next(q for q in passage_questions(text, "") if q.question == "Did the Empire develop a mixed relationship?")
    assert full_name(qa, ["byzantine empire"], text, "") == "Did the Byzantine Empire develop a mixed relationship?"
    # where the passage names another thing of the kind, "the river" is left as it is
    text = "The Delaware River lies to the south. The Hudson River is long. The river is named after Henry Hudson."
    qa = next(q for q in passage_questions(text, "") if q.topic == "the river")
    assert full_name(qa, ["hudson river"], text, "") is None
    # a conjunct is no shorter name: "Does Juliet compare Romeo and death?" was rewritten "Does Romeo and Juliet
    # compare Romeo and death?" in a conversation about the play
    text = "Romeo and Juliet is a tragedy. Juliet later erotically compares Romeo and death."
    qa = next(q for q in passage_questions(text, "") if q.question.startswith("Does Juliet"))
    assert full_name(qa, ["romeo and juliet"], text, "") is None


def test_a_shorter_name_of_another_thing_of_the_kind_is_not_the_conversations_topic():
    # "Is it named after Henry Hudson?" in a conversation about the Delaware River, from a passage about the Hudson
    import agents.synth.offline.questioning as questioning
    from agents.synth.offline.discourse import misrefers
    from agents.synth.offline.qgen import passage_questions
    text = "The Hudson River flows south to New York. The river is named after Henry Hudson."
    qa = next(q for q in passage_questions(text, "") if q.topic == "the river")
    assert misrefers(qa, "delaware river", text) and not misrefers(qa, "hudson river", text)
    seg = [{"question": "Where does the Delaware River rise?", "standalone_question": "Where does the Delaware River "
            "rise?", "answer": "In the Catskill Mountains. The Delaware River rises in the Catskill Mountains.",
            "title": "Delaware River", "gold_text": "The Delaware River rises in the Catskill Mountains."}]
    asked, standalone, _ = questioning._follow_up(qa, 0, [{"doc_id": "h", "title": "Hudson River", "text": text}], seg,
                                                  ["delaware river"], [], questioning.DiscourseShares(), [])
    assert "it" not in asked.lower().split() and asked == standalone, (asked, standalone)


def test_a_task_or_a_compound_noun_is_no_vague_opener():
    # the vague-opener cost had turned Cloud openers from "How do I create a lock on the current secret version?" to
    # "How do I create locks with the API?" (API: a proper noun); a manual's things are named by compounds
    import agents.synth.offline.questioning as questioning
    assert not questioning.vague("How do I create a lock on the current secret version?")
    assert not questioning.vague("What does the dialog skill orchestrate?")
    assert questioning.vague("What do many countries have?")


def test_a_button_or_a_value_is_no_context():
    # "What does the default tab of the dashboard list in Create Database?", "Does the service create a standard key in
    # the ID value?": a button label and a field value came through as the context
    from agents.synth.offline.discourse import context_candidates
    seg = [{"question": "How do I create a database?", "standalone_question": "How do I create a database?",
            "title": "", "answer": "Click Create Database and supply the name of the database to create.",
            "gold_text": "The dashboard has a number of tabs. To create a database, click Create Database and supply "
                         "the name of the database to create. Click Create Database again for a second one. The "
                         "Create Database window closes."}]
    got = context_candidates(seg)
    assert not any(c.startswith("create ") for c in got), got
    seg = [{"question": "What does a successful POST response return?", "title": "",
            "standalone_question": "What does a successful POST response return for my key?",
            "answer": "The ID value. A successful POST response returns the ID value for your key in Key Protect.",
            "gold_text": "A successful POST response returns the ID value for your key in Key Protect."}]
    got = context_candidates(seg)
    assert "id value" not in got and "key protect" in got, got


def test_unanswerable_shift_asks_no_time_place_or_reason_of_a_state_and_keeps_a_names_capital():
    # "When does the yellow marrow have fatty connective tissue?", "Why does the engineering industry of India include
    # its growing car?": a state has no time, place or reason of its own; "kill florence for revenge" lost a capital
    from agents.synth.offline.questioning import ask
    from agents.synth.questioner import NothingToAsk

    def asked(text):
        out = set()
        for attempt in range(4):
            try:
                out.add(ask({"unanswerable": True, "passages": [{"doc_id": "d1", "title": "", "text": text}],
                             "segment": [], "attempt": attempt})[1])
            except NothingToAsk:
                pass
        return out
    assert asked("The yellow marrow of adults has fatty connective tissue. The industry includes the car sector.") \
        == set()
    got = asked("Wellington and Forsythia killed Florence for revenge with a bag of canary seeds.")
    assert got and all("Florence" in q for q in got if "lorence" in q), got
    assert any("lorence" in q for q in got), got


def test_refer_back_replaces_no_phrase_that_goes_on_past_its_chunk():
    # "Is it feature beta functionality?" from "Is the speaker labels feature beta functionality?" (the parser read
    # "feature" as the verb)
    from agents.synth.offline.discourse import refer_back
    seg = [{"question": "How many speakers can speaker labels handle?", "answer": "The speaker labels handle two.",
            "standalone_question": "How many speakers can the speaker labels handle?"}]
    assert refer_back("Is the speaker labels feature beta functionality?", seg) is None
    assert refer_back("Do the speaker labels support Czech?", seg) == "Do they support Czech?"


def test_a_one_word_page_the_conversation_writes_as_a_name_keeps_its_capital():
    # "What does the first season introduce in friends?": the page "Friends" is in its passage's title line only
    from agents.synth.offline.discourse import _context_phrase
    p = {"title": "Friends", "text": "Friends\nThe first season introduces the six main characters."}
    q = "What does the first season introduce?"
    assert _context_phrase(q, p, ["friends"], "The cast of Friends won awards. Rachel is on Friends.") == "Friends"
    assert _context_phrase(q, p, ["friends"], "She met her friends. Friends matter.") == "friends"



def test_a_pointing_phrase_is_no_context():
    # "What does the retrieveSubscriptionsWithCompletionHandler API return in the following Swift method?"
    from agents.synth.offline.discourse import context_candidates
    seg = [{"question": "What does the API return?", "title": "", "standalone_question": "What does the API return?",
            "answer": "A list of subscriptions. Call the following Swift method to list the subscriptions.",
            "gold_text": "Call the following Swift method to list the subscriptions in Event Notifications."}]
    assert not any("following" in c for c in context_candidates(seg)), context_candidates(seg)


def test_refer_back_says_there_of_a_place_and_never_splits_a_phrase_or_a_particle_verb():
    # "Did the 4th Texas Infantry lose its flag at it?", "Is it estuary the site of wetlands?", "Did the Texans call out
    # them?"
    from agents.synth.offline.discourse import refer_back
    seg = [{"question": "What happened at Sharpsburg?", "standalone_question": "What happened at Sharpsburg in Maryland?",
            "answer": "The battle of Antietam was fought at Sharpsburg, Maryland, by the Hudson River and Tar Heels."}]
    assert refer_back("Did the 4th Texas Infantry lose its flag at Sharpsburg?", seg) == \
        "Did the 4th Texas Infantry lose its flag there?"
    seg[0]["standalone_question"] = "Why does the Hudson River have Tar Heels?"
    assert refer_back("Is the Hudson River estuary the site of wetlands?", seg) is None
    assert refer_back("Did the Texans call out Tar Heels?", seg) is None
    assert refer_back("Does the Hudson River flow into the sea?", seg) == "Does it flow into the sea?"


def test_a_quality_before_a_name_or_a_list_is_no_context():
    # "... in low F1 scores?", "... in aggressive CSS resets?", "... for Slack, Email?"
    from agents.synth.offline.discourse import _context_phrase, context_candidates
    p = {"title": "", "text": "If you see low F1 scores, retrain the model. The model in Watson Assistant improves."}
    assert _context_phrase("How do I improve the model?", p, ["low f1 scores", "watson assistant"]) == \
        "Watson Assistant"
    seg = [{"question": "What do aggressive CSS resets break?", "title": "", "gold_text": "",
            "standalone_question": "What do aggressive CSS resets break in Watson Assistant?",
            "answer": "The web chat. Aggressive CSS resets can break the web chat for Slack, Email of Watson Assistant."}]
    got = context_candidates(seg)
    assert "aggressive css resets" not in got and not any("," in c or "slack email" in c for c in got), got


def test_no_context_from_a_word_of_a_longer_name_or_from_the_answer():
    # "What do Alice and the Knave of Hearts visit in Rabbit?" (a White Rabbit passage); "What did the new states join
    # in the United Nations?" (the answer: "the United Nations")
    from agents.synth.offline.discourse import _context_phrase
    from agents.synth.offline.qgen import QA
    from agents.synth.offline.questioning import _follow_up
    from agents.synth.offline.discourse import DiscourseShares
    p = {"title": "White Rabbit", "text": "White Rabbit\nAlice follows the White Rabbit down the hole. Later, the White "
                                          "Rabbit and Alice visit the Queen."}
    assert _context_phrase("What do Alice and the Knave of Hearts visit?", p, ["rabbit"]) == ""
    seg = [{"question": "What does the United Nations coordinate?", "standalone_question":
            "What does the United Nations coordinate?", "answer": "Aid. The United Nations coordinates aid.",
            "title": "United Nations", "gold_text": "The United Nations coordinates aid."}]
    qa = QA(question="What did the new states join?", qtype="what", answer="the United Nations", sentence="",
            template="What did {T} join", topic="the new states", topic_kind="PLUR", topic_role="subj", verb="join")
    passages = [{"doc_id": "d", "title": "Decolonisation", "text": "After 1960 the new states joined the United "
                                                                    "Nations."}]
    asked, standalone, _ = _follow_up(qa, 0, passages, seg, ["united nations"], ["united nations"],
                                      DiscourseShares(), [])
    assert "United Nations" not in standalone, standalone


def test_context_wording_planets_count_nouns_and_aspect_pages():
    # "... in Earth?", "... in photo booth?", "... in the Causes of World War II?"
    from agents.synth.offline.discourse import _article_as_written, title_name, with_context
    assert with_context("What do local differences cause?", "Earth") == "What do local differences cause on Earth?"
    assert _article_as_written("photo booth", "Photo booths are vending machines. A photo booth has a camera.") == \
        "the photo booth"
    assert _article_as_written("apoptosis", "Apoptosis is a process of programmed cell death.") == "apoptosis"
    assert title_name("Causes of World War II") == "the causes of World War II"
    assert title_name("Sons of Anarchy") == "Sons of Anarchy"


def test_an_unanswerable_follow_up_leaves_the_segments_context_implicit_like_the_answerable_ones():
    text = ("The Hudson River flows through eastern New York. The Troy Federal Dam was completed in 1916. "
            "Commercial fishing was banned in 1976.")
    seg = [{"question": "Where does the Hudson River flow?", "standalone_question": "Where does the Hudson River flow?",
            "answer": "Eastern New York. The Hudson River flows through eastern New York.", "title": "Hudson River",
            "gold_text": text}]
    for attempt in range(3):
        x = {"unanswerable": True, "passages": [{"doc_id": "h1", "title": "Hudson River", "text": text}],
             "segment": seg, "previous_standalone": ["Where does the Hudson River flow?"], "attempt": attempt,
             "discourse": {"pronoun": 0.5, "short": 0.35, "ellipsis": 0.1, "yesno": 0.5, "request": 1.0}}
        import agents.synth.offline.questioning as questioning
        idx, asked, standalone, _ = questioning.ask(x)
        # the slot no passage fills ("Why ...?", "How ...?"), asked inside the conversation's subject; the rewrite
        # names it; never a request ("What about ...?" asks what the passage does say)
        assert idx == 0 and asked.startswith(("Why", "How")) and "Hudson" not in asked
        assert standalone.endswith("the Hudson River?") and standalone.startswith(asked[:-1]), (asked, standalone)


def test_an_award_or_its_category_is_no_context_and_a_counted_page_takes_the():
    from agents.synth.offline.discourse import context_candidates, context_phrase
    text = ("The Crown\nThe series received nine Golden Globe Award nominations and won the Screen Actors Guild "
            "Award for Best Actress. The series was praised by critics.")
    seg = [{"question": "What has the series received?", "standalone_question": "What has the series received?",
            "answer": "Nine Golden Globe Award nominations. The series received nine Golden Globe Award nominations "
                      "and won the Screen Actors Guild Award for Best Actress and the Outstanding Drama prize.",
            "title": "The Crown", "gold_text": text}]
    cands = context_candidates(seg)
    assert not any("award" in c or "best" in c.split()[0] or "prize" in c for c in cands), cands
    # "in the photo booth", not "in photo booth": the page's common noun phrase, counted in its text
    booth = {"title": "Photo booth", "text": "Photo booth\nSome booths can produce stickers. A photo booth is common."}
    assert context_phrase("When can some booths produce stickers?", booth, ["photo booth"]) == "the photo booth"


def test_a_persons_shorter_name_is_a_surname_the_texts_use_alone():
    from agents.synth.offline.discourse import _short_form
    show = QA(question="Did Gossip Girl continue to see a decrease?", qtype="yesno", answer="Yes",
              sentence="Gossip Girl continued to see a decrease in viewers.", template="Did {T} continue to see a decrease",
              topic="Gossip Girl", topic_kind="PERSON", topic_role="subj")
    assert _short_form(show, "Gossip Girl was a show. Gossip Girl aired on the CW.") is None      # no "Did Girl ...?"
    gandhi = QA(question="When did Mahatma Gandhi return?", qtype="when", answer="1915",
                sentence="Mahatma Gandhi returned in 1915.", template="When did {T} return", topic="Mahatma Gandhi",
                topic_kind="PERSON", topic_role="subj")
    assert _short_form(gandhi, "Gandhi led the movement.") == "When did Gandhi return"


def test_an_implicit_context_is_referred_to_by_a_possessive_of_its_part():
    """People ask about a part of what they discuss with "its": "What does its web chat integration undergo?"
    (in Watson Assistant). Only a subject or object ``the M N`` named with a modifier becomes ``its M N``: a bare
    "the state" may be the context itself (Oklahoma), a definition, a superlative, a coordination, a person's or a
    coordinated context, or a question that has a pronoun already keep their implicit context."""
    from agents.synth.offline.questioning import _context_possessive, _context_pronoun
    assert _context_pronoun("What does the web chat integration undergo on a regular basis?", "Watson Assistant") == \
        "What does its web chat integration undergo on a regular basis?"
    assert _context_pronoun("What replaced the error event?", "Microsoft Internet Explorer") == \
        "What replaced its error event?"
    assert _context_possessive("When were the first trees planted?", "the cherry blossom") == \
        "When were its first trees planted?"
    assert _context_possessive("Where do the private worker agents request data?", "Satellite clusters") == \
        "Where do their private worker agents request data?"
    for q, ctx in (("How many farms did the state have in 2012?", "Oklahoma"),          # bare: the context itself
                   ("What is the best storage class?", "IBM Cloud"),                    # superlative
                   ("What is the web chat integration?", "Watson Assistant"),           # a definition
                   ("What must the service user and the administrator complete?", "Kubernetes"),
                   ("When was the project's final completion announced?", "the Great Wall of China"),
                   ("What did the production crew star?", "Romeo and Juliet"),          # coordinated context
                   ("What did the campaign staff plan?", "Barack Obama"),              # a person
                   ("What does the river water carry?", "the Hudson River"),            # the context's own head
                   ("Why did its new owner sell the old mill?", "the Hudson River"),     # a pronoun already
                   ("Is the web chat integration free?", "Watson Assistant"),           # not a wh-question
                   ("What is the version of the web chat integration?", "Watson Assistant")):
        assert _context_possessive(q, ctx) is None, q


def test_a_context_without_a_shorter_name_falls_back_to_its_pronoun():
    """The forms' order falls back from the short form to the pronoun (as :func:`render` does): a context has no
    shorter name, so a follow-up drawn for the short form refers to it as "in it" rather than leaving it
    implicit; the ellipsis share leaves it implicit."""
    from agents.synth.offline.discourse import context_candidates, segment_topics
    from agents.synth.offline.questioning import _follow_up
    p = [{"doc_id": "wa1", "title": "Watson Assistant", "text": "To publish your bot in Watson Assistant, open the "
          "Integrations page. You publish your bot from the Integrations page."}]
    seg = [{"question": "What is Watson Assistant?", "standalone_question": "What is Watson Assistant?",
            "answer": "Watson Assistant is a service for building chat bots.", "title": "Watson Assistant",
            "gold_text": "Watson Assistant is a service for building chat bots."}]
    qa = QA(question="How do I publish my bot?", qtype="how", answer="open the Integrations page",
            sentence="", template="How do I publish {T}", topic="my bot", topic_role="obj")
    short = DiscourseShares(pronoun=0.0, short=0.999, ellipsis=0.0, request=0.0)
    asked, standalone, leans = _follow_up(qa, 0, p, seg, segment_topics(seg), context_candidates(seg), short,
                                          ["What is Watson Assistant?"])
    assert (asked, standalone, leans) == ("How do I publish my bot in it?",
                                          "How do I publish my bot in Watson Assistant?", True)
    implicit = DiscourseShares(pronoun=0.0, short=0.0, ellipsis=0.999, request=0.0)
    assert _follow_up(qa, 0, p, seg, segment_topics(seg), context_candidates(seg), implicit,
                      ["What is Watson Assistant?"])[0] == "How do I publish my bot?"


def test_a_follow_up_about_an_unintroduced_thing_costs_ranking_points():
    from agents.synth.offline.qgen import QA
    from agents.synth.offline.questioning import unintroduced
    qa = QA(question="Does the operation cause an overflow?", qtype="yesno", answer="Yes", sentence="",
            template="Does {T} cause an overflow", topic="the operation", topic_kind="SING", topic_role="subj")
    seg = [{"question": "How do I scale a cluster?", "standalone_question": "How do I scale a cluster?",
            "answer": "Use the resize command."}]
    assert unintroduced(qa, qa.question, seg)
    # the conversation said it: "the operation" refers back
    said = [{**seg[0], "answer": "Run the resize operation."}]
    assert not unintroduced(qa, qa.question, said)
    assert not unintroduced(qa, qa.question, [{**seg[0], "answer": "Both operations are slow."}])
    # the standalone form says which one; a question that names something is no vague one
    assert not unintroduced(qa, "Does the operation cause an overflow in IBM Cloud Databases?", seg)
    named = QA(question="Does the operation cause an overflow in Kubernetes?", qtype="yesno", answer="Yes",
               sentence="", template="Does {T} cause an overflow in Kubernetes", topic="the operation",
               topic_kind="SING", topic_role="subj")
    assert not unintroduced(named, named.question, seg)


def test_an_http_status_phrase_is_no_passages_main_name():
    # "What protocols do data transfers use in Bad Request?": an error-code table repeats "400 Bad Request"
    from agents.synth.offline.discourse import main_name
    table = ("Data transfers use many standard protocols.\n"
             "EntityTooSmall Your proposed upload is smaller than the minimum allowed size. 400 Bad Request\n"
             "EntityTooLarge Your proposed upload exceeds the maximum allowed size. 400 Bad Request\n"
             "InlineDataTooLarge Inline data exceeds the maximum allowed size. 400 Bad Request\n"
             "IBM Cloud Object Storage returns these codes. IBM Cloud Object Storage logs them.")
    assert main_name(table) == "IBM Cloud Object Storage"


def test_no_pronoun_for_a_topic_the_user_never_heard_of():
    # "Does it block my account?" for IBM Cloudant, the main name of the first turn's passage, in a conversation whose
    # questions and answers said only "IBM Cloud"
    from agents.synth.offline.discourse import DiscourseShares, render, said_in_conversation
    from agents.synth.offline.qgen import QA
    gold = ("You can use IBM Cloudant for free. The limit of IBM Cloudant is 1 GB. IBM Cloud offers a free tier of "
            "Cloud Foundry application usage.")
    seg = [{"question": "What tier does IBM Cloud offer?", "standalone_question": "What tier does IBM Cloud offer?",
            "answer": "A free tier. IBM Cloud offers a free tier of Cloud Foundry application usage.", "title": "",
            "gold_text": gold}]
    qa = QA(question="Does IBM Cloudant block my account?", qtype="yesno", answer="Yes", sentence="",
            template="Does {T} block my account", topic="IBM Cloudant", topic_kind="SING", topic_role="subj")
    pronoun = DiscourseShares(pronoun=0.999, short=0.0, ellipsis=0.0)
    assert not said_in_conversation("IBM Cloudant", seg)
    assert render(qa, seg, pronoun, 0.5) == ("Does IBM Cloudant block my account?", "explicit")
    heard = [{**seg[0], "answer": seg[0]["answer"] + " You can use IBM Cloudant for free."}]
    assert said_in_conversation("IBM Cloudant", heard) and said_in_conversation("the Cloudant", heard)
    # a name is heard as a name, not as a common word that shares its letters
    pieces = [{"question": "How many pieces of theme music does the series use?", "answer": "37 pieces."}]
    assert not said_in_conversation("One Piece", pieces) and said_in_conversation("the piece", pieces)
    assert render(qa, heard, pronoun, 0.5) == ("Does it block my account?", "pronoun")
