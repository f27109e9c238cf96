"""Each stage of the offline generator on small hand-written passages of several genres, with the questions it must
and must not produce. No test pins a corpus's output: the passages are written here, and the assertions are about
the kind of question (its intent, its concept, its words), not a whole generated text."""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.synth.offline import lexicon as lx
from agents.synth.offline.concepts import mentions, same
from agents.synth.offline.discourse import Segment, Shares, ask, read
from agents.synth.offline.forms import render
from agents.synth.offline.intents import passage_offers

ENCYCLOPEDIA = ("The Golden Gate Bridge is a suspension bridge spanning the Golden Gate strait. It was opened in 1937 "
                "and was designed by Joseph Strauss. The bridge cost $35 million to build. It is located in San "
                "Francisco, California.")
MANUAL = ("To create a bucket, open the Object Storage console and click Create bucket. Bucket names must be unique "
          "across the whole service and can contain up to 63 characters. You can delete a bucket only when it is "
          "empty. Deleting a bucket takes a few minutes.")
FORUM = ("I'd pay off the credit card before investing. The interest on a credit card is usually 20% or more, which "
         "is higher than what the stock market returns on average. If you carry a balance, you lose money every "
         "month. You should also keep an emergency fund of three to six months of expenses.")
NOTICE = ("Applicants must be residents of the state for at least one year. The program provides grants of up to "
          "$5,000 for home repairs. Applications are accepted until March 31. Funds cannot be used for new "
          "construction.")
TICKET = ("My laptop won't connect to the VPN after the update. The error says the certificate has expired. "
          "Resetting the network adapter did not help. The support agent recommended reinstalling the VPN client, "
          "which fixed the issue.")
GENRES = {"encyclopedia": ENCYCLOPEDIA, "manual": MANUAL, "forum": FORUM, "notice": NOTICE, "ticket": TICKET}


def _offers(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for o in passage_offers(text):
        out.setdefault(o.intent, []).append(o)
    return out


def _questions(text: str) -> list[str]:
    qs = []
    for o in passage_offers(text):
        for kind in ("full", "pronoun", "ellipsis"):
            q = render(o, kind)
            if q:
                qs.append(q)
    return qs


# -- stage 1: concepts --------------------------------------------------------------------------------------------

def test_concepts_need_no_title_or_name():
    """A forum answer and a ticket (no title, no proper names to speak of) still have concepts to ask about."""
    assert {"credit card", "emergency fund"} <= {c.text for c in mentions(FORUM).concepts}
    assert {"network adapter", "certificate"} <= {c.text for c in mentions(TICKET).concepts}


def test_concepts_drop_determiners_and_vague_heads():
    texts = {c.text for c in mentions(MANUAL).concepts}
    assert "bucket" in texts and "bucket names" in texts         # a noun before a vague head makes it specific
    assert not any(t.split()[0] in ("the", "a", "these") for t in texts)
    assert not {"way", "number", "thing"} & texts


def test_a_sentence_start_capital_is_not_a_name():
    c = next(c for c in mentions(MANUAL).concepts if c.key.startswith("bucket name"))
    assert c.text == "bucket names" and not c.proper


def test_same_concept_by_a_shorter_name():
    cs = {c.text: c for c in mentions(ENCYCLOPEDIA).concepts}
    assert same(cs["Golden Gate Bridge"], cs["Golden Gate Bridge"])
    assert not same(cs["Golden Gate strait"], cs["Golden Gate Bridge"])


# -- stage 2: intents ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,intent,concept", [
    (ENCYCLOPEDIA, "definition", "Golden Gate Bridge"),
    (ENCYCLOPEDIA, "time", "Golden Gate Bridge"),       # "It was opened in 1937": the pronoun is the subject
    (ENCYCLOPEDIA, "cost", "bridge"),
    (MANUAL, "procedure", "bucket"),
    (MANUAL, "limit", "bucket names"),
    (MANUAL, "duration", "deleting a bucket"),          # an activity as the subject
    (FORUM, "advice", "emergency fund"),
    (NOTICE, "requirement", "applicants"),
    (NOTICE, "time", "applications"),
    (TICKET, "fix", "laptop"),
])
def test_each_genre_offers_what_its_sentences_say(text, intent, concept):
    assert concept in {o.concept.text for o in _offers(text).get(intent, [])}


def test_a_negated_sentence_offers_no_purpose_but_may_offer_a_limit():
    offers = _offers("Funds cannot be used for new construction. The grants help families repair their homes.")
    assert not any("construction" in o.sentence for o in offers.get("purpose", []))


def test_a_person_is_not_fixed_or_priced():
    for o in passage_offers(TICKET):
        assert not (o.concept.person and o.intent in ("fix", "cost", "procedure", "duration")), o


# -- stage 3: forms -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("genre", list(GENRES))
def test_every_form_is_a_short_question_in_common_words(genre):
    qs = _questions(GENRES[genre])
    assert qs, genre
    for q in qs:
        assert q[0].isupper() and q.endswith("?") and q.count("?") == 1, q
        assert 2 <= len(q.split()) <= 18, q
        assert "{" not in q and " i'd " not in f" {q.lower()} ", q


def test_forms_ask_for_the_need_not_the_sentence():
    """The sentence's own words beyond the concept stay out: no "Was the bridge designed by Joseph Strauss?"."""
    qs = _questions(ENCYCLOPEDIA)
    assert "How much does the bridge cost?" in qs
    assert not any("Strauss" in q or "1937" in q or "35 million" in q for q in qs)


def test_pronouns_agree_with_the_concept():
    plural = next(o for o in passage_offers(MANUAL) if o.intent == "limit")
    assert render(plural, "pronoun") == "Is there a limit on them?"
    single = next(o for o in passage_offers(ENCYCLOPEDIA) if o.intent == "cost")
    assert render(single, "pronoun") == "How much does it cost?"


def test_every_rule_has_an_example_in_its_docstring():
    for stage in lx.STAGES:
        for r in lx.rules(stage):
            assert r.__doc__ and '"' in r.__doc__, f"{stage}.{r.__name__} has no example"


def test_the_lexicon_names_no_corpus_content():
    """Word lists are general English: every template word is a function word, a question word or an intent's
    word; the concept comes only from its slot."""
    for intent in lx.lexicon().intents.values():
        for t in (*intent.full, *intent.pronoun, *intent.ellipsis):
            assert t.count("?") == 1 and t.endswith("?"), t


# -- stage 4: discourse -------------------------------------------------------------------------------------------

def _turn(text: str, offer) -> dict:
    q = render(offer, "full")
    return {"question": q, "standalone_question": q, "answer": offer.sentence, "gold_text": text}


def test_a_segment_is_read_back_from_its_standalone_questions():
    cost = next(o for o in passage_offers(ENCYCLOPEDIA) if o.intent == "cost")
    seg = read([_turn(ENCYCLOPEDIA, cost)])
    assert seg.focus.key == cost.concept.key and seg.last_intent == "cost"
    assert ("cost", cost.concept.key) in seg.asked


def test_a_follow_up_on_the_concept_leans_and_its_rewrite_names_it():
    offers = passage_offers(ENCYCLOPEDIA)
    first = next(o for o in offers if o.intent == "time")
    seg = read([_turn(ENCYCLOPEDIA, first)])
    location = next(o for o in offers if o.intent == "location" and same(o.concept, first.concept))
    asked = ask(location, seg, Shares(pronoun=1.0, ellipsis=0.0, short=0.0), u=0.1)
    assert asked.leans and asked.question.startswith("Where is it")
    assert "Golden Gate Bridge" in asked.standalone and "Golden Gate Bridge" not in asked.question


def test_an_ellipsis_asks_a_new_intent_of_the_same_concept():
    offers = passage_offers(ENCYCLOPEDIA)
    seg = read([_turn(ENCYCLOPEDIA, next(o for o in offers if o.intent == "location" and o.concept.text == "bridge"))])
    cost = next(o for o in offers if o.intent == "cost")
    asked = ask(cost, seg, Shares(pronoun=0.0, ellipsis=1.0, short=0.0), u=0.5)
    assert asked.form == "ellipsis" and "bridge" not in asked.question and "bridge" in asked.standalone


def test_an_opening_question_is_asked_in_full():
    o = next(o for o in passage_offers(FORUM) if o.intent == "advice")
    asked = ask(o, None, Shares(), u=0.0)
    assert asked.question == asked.standalone and not asked.leans


def test_a_new_concept_is_asked_in_full_without_an_invented_context():
    offers = passage_offers(MANUAL)
    seg = read([_turn(MANUAL, next(o for o in offers if o.intent == "procedure"))])
    limit = next(o for o in offers if o.intent == "limit")
    asked = ask(limit, seg, Shares(), u=0.9)
    assert asked.standalone == render(limit, "full")        # nothing added the conversation did not say
    assert isinstance(seg, Segment)


SERVICE = ("IBM Cloud Kubernetes Service is a managed container service. It runs containerized apps on worker nodes. "
           "You can create clusters in six regions.")
NODES = ("To update a worker node in IBM Cloud Kubernetes Service, run the update command. Worker nodes cost $0.50 per "
         "hour in IBM Cloud Kubernetes Service.")
OTHER_NODES = "To update a worker node in Red Hat OpenShift, run the upgrade command. Worker nodes cost $0.60 per hour."


def test_a_new_concept_leaves_the_named_focus_to_the_conversation_and_the_rewrite_adds_it():
    """"How much does the worker node cost?" after turns on IBM Cloud Kubernetes Service: the rewrite adds the focus,
    which the gold passage names; a passage that does not name it gets no context (no invented one)."""
    seg = read([_turn(SERVICE, next(o for o in passage_offers(SERVICE) if o.intent == "definition"))])
    cost = next(o for o in passage_offers(NODES) if o.intent == "cost")
    asked = ask(cost, seg, Shares(), u=0.95, text=NODES)
    assert asked.form == "context" and asked.leans
    assert asked.question == "How much does the worker node cost?"
    assert asked.standalone == "How much does the worker node cost in IBM Cloud Kubernetes Service?"
    back = read([_turn(SERVICE, next(o for o in passage_offers(SERVICE) if o.intent == "definition")),
                 {"standalone_question": asked.standalone, "gold_text": NODES, "answer": cost.sentence}])
    assert back.last.key == cost.concept.key and back.last_intent == "cost"      # read back without the context
    other = next(o for o in passage_offers(OTHER_NODES) if o.intent == "cost")
    assert ask(other, seg, Shares(), u=0.95, text=OTHER_NODES).standalone == render(other, "full")


def test_a_person_is_no_context_to_add():
    """"When was the song released in Bruno Mars?" is no rewrite: a person's name is never added as a context (a
    common noun neither: see test_a_new_concept_is_asked_in_full_without_an_invented_context)."""
    from agents.synth.offline.discourse import in_context
    text = "Ada Lovelace was an English mathematician. Her notes on the Analytical Engine were published in 1843."
    person = next(c for c in mentions(text).concepts if c.text == "Ada Lovelace")
    notes = next(o for o in passage_offers(text) if o.concept.text != "Ada Lovelace")
    assert person.person and in_context(notes, Segment(focus=person, turns=1), text) is None
    text = "The URI names the resource. Responses to the URI must be JSON. Tekton runs pipelines for the URI."
    uri = next(c for c in mentions(text).concepts if c.text == "URI")
    assert all(in_context(o, Segment(focus=uri, turns=1), text) is None for o in passage_offers(text))
    cost = next(o for o in passage_offers(NODES) if o.intent == "cost")
    from agents.synth.offline.concepts import Concept
    surname = Concept("Strange", "strange", "strange", False, True, "")         # a lone name the parser cannot place
    assert in_context(cost, Segment(focus=surname, turns=1), NODES + " Strange said so.") is None
    service = next(c for c in mentions(SERVICE).concepts if c.text == "IBM Cloud Kubernetes Service")
    assert in_context(cost, Segment(focus=service, turns=1), NODES) == "IBM Cloud Kubernetes Service"


def test_what_about_only_repeats_the_previous_question_of_another_concept():
    text = ("The annual fee was raised in 2019. The late fee was raised in 2021. The card was launched in 2005. "
            "The late fee was introduced in 2010.")
    offers = passage_offers(text)
    annual = next(o for o in offers if o.intent == "time" and o.concept.text == "annual fee")
    seg = read([_turn(text, annual)])
    late = next(o for o in offers if o.intent == "time" and o.concept.text == "late fee")
    asked = ask(late, seg, Shares(), u=0.1)
    assert asked.form == "shift" and asked.question == "What about the late fee?"
    assert asked.standalone == "When was the late fee raised?"
    card = next(o for o in offers if o.intent == "time" and o.concept.text == "card")
    asked = ask(card, seg, Shares(), u=0.1)     # "launched": a verb the conversation did not say
    assert asked.form == "full" and asked.question == "When was the card launched?"


def test_code_lines_and_identifiers_offer_nothing_to_ask():
    text = ("POST /v5/ibm/deployments/:deployment_id/users/:user_type creates a user.\n"
            "The <br> table | lists every user_type and its role.\n"
            '"type": "object", "properties": { "name": "Example Account" } is the schema.\n'
            'ibmcloud dns custom-resolver update f1aba936b94213e5b8dc --enabled true -i "dns-demo" updates it.\n'
            "Run the command to log in, and/or check the settings.")
    assert passage_offers(text) == ()       # mostly code: looked up, not asked about
    one_name = "Set the max_connections parameter to 100 in the configuration file."
    assert any(o.concept.text == "configuration file" for o in passage_offers(one_name))   # one code word is prose
    prose_text = text + ("\nThe settings page lists the region, the plan and the billing contact of the account. "
                         "You can change the plan at any time, and the new plan applies from the next billing cycle. "
                         "Deleting the account removes every resource and cannot be undone.")
    offers = passage_offers(prose_text)
    assert offers, "the prose sentences still offer"
    assert all(o.sentence.startswith(("Run the", "The settings", "You can", "Deleting")) for o in offers)
    for o in offers:
        assert not any(c in o.concept.text for c in "/:_<>|"), o.concept


def test_a_concept_the_previous_answer_named_is_asked_by_its_head():
    text = ("The company opened the Scranton branch in 1990. The Scranton branch was closed in 2013. "
            "The company was founded in 1949.")
    offers = passage_offers(text)
    first = next(o for o in offers if o.intent == "time" and o.concept.text == "company")
    turn = _turn(text, first) | {"answer": "The company opened the Scranton branch in 1990."}
    seg = read([turn])
    closed = next(o for o in offers if o.intent == "time" and o.concept.text == "Scranton branch")
    asked = ask(closed, seg, Shares(shift=0.0), u=0.5)
    assert asked.leans and asked.form == "short" and "the branch" in asked.question
    assert "Scranton branch" in asked.standalone and "Scranton" not in asked.question
    # two branches in the answer: "the branch" would not say which, so it is asked in full
    seg = read([turn | {"answer": "The company opened the Scranton branch and the Stamford branch in 1990."}])
    assert ask(closed, seg, Shares(shift=0.0), u=0.5).form == "full"



@pytest.mark.parametrize("text, question", [
    ("The novel was written by Charles Dickens in 1859. It is set in London and Paris.", "Who wrote the novel?"),
    ("The open source project is maintained by the Apache Software Foundation. It has many contributors.",
     "Who maintains the open source project?"),
    ("The standard is published by the International Organization for Standardization. It covers safety.",
     "Who publishes the standard?"),
])
def test_who_asks_in_the_tense_of_the_passive(text, question):
    """A passive in the present is asked in the present ("is maintained by" -> "Who maintains"), one in the past in
    the past; a passive with a modal ("can be changed by") says who may, not who does, and offers no "who"."""
    assert question in [render(o, "full") for o in _offers(text).get("agent", [])]
    assert not _offers("The policy can be changed by Microsoft at any time. It covers refunds.").get("agent")


def test_a_link_the_text_names_again_is_one_concept():
    """Scraped documentation links a name and then writes it: "[Object Storage](url) Object Storage is ..." names
    Object Storage once, with its capitals, not "Object Storage Object Storage"."""
    text = ("[Object Storage](https://example.com/docs/cos) Object Storage is a service that stores data as objects. "
            "See [the pricing page](https://example.com/p) for the prices.")
    names = [c.text for c in mentions(text).concepts]
    assert "Object Storage" in names
    assert not any("Storage Object" in n or n == "object Storage" for n in names)


LONG_MANUAL = ("To create a bucket, open the Object Storage console and click Create bucket. Bucket names must be "
               "unique across the whole service. " + "The console lists your buckets by region and by storage "
               "class, with their size and their last change. " * 5 + "A retention policy costs $0.01 per rule "
               "each month.")


def test_the_lead_is_what_a_long_page_is_about():
    """A concept named in the title or the first words of a passage is in its lead; one first named 80 words down
    is a detail of the page; a short passage is all lead."""
    from agents.synth.offline.concepts import in_lead
    cs = {c.text: c for c in mentions(LONG_MANUAL).concepts}
    assert in_lead(cs["bucket names"], LONG_MANUAL) and in_lead(cs["Object Storage console"], LONG_MANUAL)
    assert not in_lead(cs["retention policy"], LONG_MANUAL)
    assert in_lead(cs["retention policy"], LONG_MANUAL, title="Retention policy pricing")
    assert all(in_lead(c, MANUAL) for c in mentions(MANUAL).concepts)


def test_lead_weight_ranks_the_lead_before_a_detail():
    """With ``lead_weight`` the first question of a long page asks about what its lead names; without it, a detail
    first named 80 words down wins on its intent (a cost)."""
    from agents.synth.offline.questioning import ask as ask_question
    text = ("You can open the web console from the menu. " + "The console lists items by region and by class, with "
            "their size and their last change. " * 4 + "An archive bucket costs $0.02 per gigabyte each month. Deleting "
            "an archive bucket takes a few minutes.")

    def first(lead_weight: float) -> str:
        x = {"passages": [{"doc_id": "m", "title": "", "text": text}], "previous_questions": [],
             "offline": {"lead_weight": lead_weight}}
        return ask_question(x)[2]
    assert "archive bucket" in first(0.0)
    assert "archive bucket" not in first(1.0) and "console" in first(1.0)


def test_a_recurring_date_is_no_time_to_ask_when_about():
    """"costs $0.02 each month" tells how often, not when: no "When does the archive bucket cost ...?"; a date that
    happened once still offers its "when"."""
    recurring = "An archive bucket costs $0.02 per gigabyte each month. Deleting an archive bucket takes a few minutes."
    assert not _offers(recurring).get("time")
    assert [render(o, "full") for o in _offers("The museum opened in May 2001. It shows modern art.")["time"]] == [
        "When did the museum open?"]


def test_a_linking_verb_is_asked_with_its_complement():
    """"became a republic" is asked as "become a republic", "became the capital of a unified Germany" as "become
    the capital" (the phrase up to its head); never "When did Berlin become?" (it says nothing)."""
    assert "When did India become a republic?" in [render(o, "full") for o in _offers(
        "In 1947, India became a republic. It has a parliament.")["time"]]
    long = [render(o, "full") for o in _offers("In 1990, Berlin became the capital of a unified Germany. The city "
                                               "has many museums.").get("time", [])]
    assert "When did Berlin become the capital?" in long and not any(q.endswith("become?") for q in long)


def test_a_caption_is_no_clause_and_a_name_is_whole():
    """A list of "X founded in 1998" entries (a participle without its auxiliary) offers no "When did X found?",
    and the parser's whole name of an organisation is its concept, not its first word."""
    text = "University of New York in Prague founded in 1998. It offers degrees in business."
    assert not _offers(text).get("time")
    cs = {c.text: c for c in mentions(text + " New York is big.").concepts}
    assert "University of New York" in cs and "University" not in cs
    assert cs["University of New York"].head == "university" and not same(cs["University of New York"], cs["New York"])


def test_history_is_no_problem_to_fix():
    """A fix is asked of a problem someone has: told in the present, or by the person who has it; a third-person
    past is history."""
    assert not _offers("The boycott movement began to fail by 1770. Merchants resumed trade.").get("fix")
    assert "printer" in {o.concept.text for o in _offers("My printer failed after the update. I use Linux.")["fix"]}
    assert "printer" in {o.concept.text for o in _offers("The printer fails after the update. It is old.")["fix"]}


def test_a_date_or_an_amount_is_no_concept_nor_a_comparison():
    """"March" of "In March 2015" is an answer, not a concept; "more than 10 km" is an amount, not a comparison;
    "longer than the river path" is one."""
    assert "March" not in {c.text for c in mentions("In March 2015 the new sections were discovered.").concepts}
    assert "summer festival" in {c.text for c in mentions("The summer festival is popular. It is free.").concepts}
    assert not _offers("The trail is more than 10 km long. Hikers like it.").get("comparison")
    assert "river path" in {o.other.text for o in _offers("The trail is longer than the river path. It is steep.")[
        "comparison"]}


def test_otherwise_is_a_risk_only_as_a_clause():
    """"..., otherwise you lose the changes" warns of a risk; "an otherwise decent movie" does not."""
    assert _offers("Save the file before you quit, otherwise you lose the changes. Saving takes a second.").get("risk")
    assert not _offers("An otherwise decent movie has a terrible ending. Viewers complain.").get("risk")


def test_an_instruction_drops_articles_but_a_mass_noun_is_bare_in_prose():
    """"Enter passcode in the field" writes a countable noun without its article (an instruction, a heading): it is
    asked as "the passcode"; "You can buy insurance online" is a mass noun in a sentence with a subject."""
    cs = {c.text: c for c in mentions("Enter passcode in the field and click Save. You can buy insurance online.")
          .concepts}
    assert cs["passcode"].said == "the passcode" and cs["insurance"].said == "insurance"


def test_a_name_keeps_its_words_and_a_judgement_leaves_the_phrase():
    """"New" of "New York" and "Great" of "the Great Wall" belong to the name; "New" of "New features" and the
    judgement of "an otherwise decent movie" do not ("the movie")."""
    texts = {c.text for c in mentions("The Great Wall of China is long. New York is big. New features include tags. "
                                      "The Second World War ended in 1945.").concepts}
    assert {"Great Wall of China", "New York", "features", "Second World War"} <= texts
    assert not {"Wall", "York", "World War"} & texts
    assert {c.said for c in mentions("An otherwise decent movie has a terrible ending.").concepts} == {
        "the movie", "the ending"}


def test_kinds_and_examples_are_asked_of_a_plural_or_mass_concept_only():
    """"What kinds of plans are there?", "What kinds of support are there?", never "What kinds of the plus plan are
    there?" nor "What are some examples of the plus plan?" (one thing has no kinds and no examples)."""
    from agents.synth.offline.concepts import Concept
    from agents.synth.offline.intents import Offer

    def kinds(text, plural, article):
        c = Concept(text, text, text.split()[-1], plural, False, article)
        return render(Offer("example", c, 0, "x"), "full", 1), render(Offer("example", c, 0, "x"), "full", 0)
    assert kinds("plans", True, "") == ("What kinds of plans are there?", "What are some examples of plans?")
    assert kinds("support", False, "")[0] == "What kinds of support are there?"
    assert kinds("support", False, "")[1] == "What are some examples of support?"
    assert kinds("plus plan", False, "the") == (None, None)


def test_a_named_person_is_asked_who_and_a_plural_makes_no_mass_noun():
    """"Who is Ada Lovelace?", not "What is Ada Lovelace?"; "Administrators can reset passwords" (a plural, bare
    as every plural is) leaves "an administrator" countable: "What is an administrator?"."""
    assert "Who is Ada Lovelace?" in [render(o, "full") for o in _offers(
        "Ada Lovelace was an English mathematician. She wrote the first program.")["definition"]]
    text = "An administrator is a person who manages the system. Administrators can reset passwords."
    assert [render(o, "full") for o in _offers(text)["definition"]] == ["What is an administrator?"]
    assert "English mathematician" in {c.text for c in mentions("Ada Lovelace was an English mathematician.").concepts}


@pytest.mark.parametrize("text, said", [
    ("You can use SDK to call the service. Install the SDK first.", "the SDK"),       # a name written with "the"
    ("The Nile flows north. Egypt depends on the Nile.", "the Nile"),
    ("IBM Cloud offers storage. You can sign up for IBM Cloud.", "IBM Cloud"),
    ("Version 2.0 adds support for tokens. The version is free.", "the version"),   # bare before its number
    ("Data is encrypted at rest. You can export data at any time.", "data"),        # a mass noun, bare in prose
])
def test_the_article_a_question_gives_a_concept(text, said):
    assert said in {c.said for c in mentions(text).concepts}


def test_who_is_asked_only_of_what_is_written_as_a_persons_name():
    """A name the parser calls a person but that is no person's name (lower case, an acronym in it) is asked "What
    is ...?": "Who is IBM Cloud Backup?" is nonsense."""
    from agents.synth.offline.forms import _person_name
    assert _person_name("Ada Lovelace") and _person_name("J. K. Rowling") and _person_name("Jean-Luc Picard")
    assert not _person_name("json") and not _person_name("IBM Cloud Backup") and not _person_name("006D man")


@pytest.mark.parametrize("text, asked", [
    ("Backups are kept for 30 days after the instance is deleted.", "How long are backups kept?"),
    ("The trial plan can be used for 30 days by new customers.", "How long can the trial plan be used?"),
    ("The migration of the database took about two hours.", "How long did the migration take?"),
    (MANUAL, "How long does deleting a bucket take?"),
])
def test_how_long_asks_with_the_verb_the_span_is_said_of(text, asked):
    """"How long" asks with the sentence's own verb and tense ("How long are backups kept?"), never a verb the
    passage does not say ("How long do backups last?")."""
    assert asked in [render(o, "full") for o in _offers(text).get("duration", [])]


@pytest.mark.parametrize("text", [
    "The report covers the last 12 months of sales.",           # a period covered is no span the report lasts
    "Write the 30-day report before the meeting ends.",          # no span said of a subject
    "The passages were read in 5 days of testing by reviewers.",  # "in 5 days": when, not how long
])
def test_a_number_of_days_is_no_duration_unless_said_of_the_subject(text):
    assert not _offers(text).get("duration"), [render(o, "full") for o in _offers(text).get("duration", [])]


@pytest.mark.parametrize("text, concept", [
    ("Low F1 scores are common with small training sets, and adding examples usually fixes them.", "low F1 scores"),
    ("My laptop won't connect to the VPN after the update.", "laptop"),
    ("The nightly job fails when the disk is full, so free some space first.", "nightly job"),
])
def test_a_fix_is_asked_of_a_problem(text, concept):
    assert concept.lower() in {o.concept.text.lower() for o in _offers(text).get("fix", [])}


@pytest.mark.parametrize("text", [
    "The response code is 404 when an error occurs in the request.",        # names an error; the code is no problem
    "The change log lists the bugs fixed in each release of the product.",  # history of fixes, not a problem
    "Piper says that the crash was caused by the old driver.",               # a person is never fixed
])
def test_no_fix_is_asked_of_what_is_no_problem(text):
    fixes = _offers(text).get("fix", [])
    assert not any(o.concept.text.lower() in ("response code", "change log", "piper") for o in fixes), \
        [render(o, "full") for o in fixes]


@pytest.mark.parametrize("text, intent, concept", [
    ("Continuous replication can result in many internal calls.", "risk", "continuous replication"),
    ("Back up your keys regularly, otherwise you could lose your data.", "risk", "keys"),
    ("Bucket names can contain up to 63 characters.", "limit", "bucket names"),
    ("If you exceed 100 requests a minute, the requests are throttled.", "limit", "requests"),
    ("Restriction: Only three machine learning models can be trained at a time.", "limit", "machine learning models"),
])
def test_a_risk_or_limit_said_in_the_main_clause_or_its_condition_is_offered(text, intent, concept):
    assert concept in {o.concept.text.lower() for o in _offers(text).get(intent, [])}, _offers(text)


@pytest.mark.parametrize("text, intent, concept", [
    ("Strange was a skilled neurosurgeon before nerve damage impaired his hands.", "risk", "strange"),
    ("The settlers crossed the basin that the guide book described, detailing the dangers of the river.", "risk",
     "settlers"),
    ("Although it is often regarded as an Americanism, there are at least two theories about its origin.", "limit",
     "americanism"),
])
def test_no_risk_or_limit_of_a_concept_the_clause_saying_it_is_not_about(text, intent, concept):
    assert concept not in {o.concept.text.lower() for o in _offers(text).get(intent, [])}, \
        [render(o, "full") for o in _offers(text).get(intent, [])]


def test_a_clause_does_not_name_its_own_subject_again():
    """"Why did they choose the service?" is asked; "Why did the service choose the service?" (the anaphor read as
    the passage's subject, which the clause also names) is not."""
    text = ("Acme Cloud Service runs containers for small teams. Thus, they chose Acme Cloud Service because it "
            "simplifies infrastructure management.")
    qs = [render(o, k) for o in _offers(text).get("cause", []) for k in ("full", "pronoun")]
    assert not any(q and q.lower().count("acme cloud service") > 1 for q in qs), qs


def test_an_amount_of_money_names_its_currency():
    """The parser tags the issue number of "UTS #46" as money; a cost is asked only of an amount with its currency."""
    assert not _offers("UTS #46 will convert this into lower case before the IDNA conversion.").get("cost")
    assert "gold plan" in {o.concept.text.lower() for o in _offers("The Gold plan costs 20 euros a month.")["cost"]}


def test_a_word_with_a_quote_inside_is_code_not_a_concept():
    """'use "tzlocal"to get the name' (a quote run into the next word) gives no concept 'tzlocal"to'."""
    from agents.synth.offline.nlp import code_like
    assert code_like('"tzlocal"to') and not code_like('"name"') and not code_like("timezone")
    assert not any('"' in o.concept.text for o in passage_offers(
        'You can also use "tzlocal"to get the name of your local timezone.'))


def test_a_concept_its_cost_cue_names_is_asked_how_much_it_is():
    """"The annual fee is $95." asks "How much is the annual fee?" (not nothing, not "How much does the annual fee
    cost?"); a bare cue word names nothing to price ("The price is 12 euros." offers no cost)."""
    fee = [o for o in passage_offers("The annual fee is $95. It is charged every January.") if o.intent == "cost"]
    assert [render(o, "full") for o in fee] == ["How much is the annual fee?"]
    assert render(fee[0], "pronoun") == "How much is it?"
    assert [render(o, "full") for o in passage_offers("Late fees are 25 dollars per month.")
            if o.intent == "cost"] == ["How much are late fees?"]
    assert not [o for o in passage_offers("The price is 12 euros for adults.") if o.intent == "cost"]
    assert "How much does the bridge cost?" in _questions(ENCYCLOPEDIA)      # a concept of its own keeps its form


@pytest.mark.parametrize("text", [
    "For more information about the advantages and disadvantages of these modes, see Access control mechanisms.",
    "For an example of using filters and queries together, see Building combined queries.",
    "Refer to the pricing page for the cost of a bucket.",
    "For more information about the code that is used for this example, see helloworld.",   # (parsed as VBP)
])
def test_a_sentence_that_points_elsewhere_offers_nothing(text):
    assert passage_offers(text) == ()


def test_a_sentence_whose_subject_sees_something_still_offers():
    text = "You can see your current usage on the dashboard. The dashboard shows the usage of each bucket."
    assert passage_offers(text)


def test_a_word_that_frames_a_judgement_is_no_concept():
    """"advantages" frames what is said of a concept; it is none itself (no "Are there any downsides to
    advantages?")."""
    keys = {c.key for c in mentions("The advantages of the Lite plan are its price and its limits. The main "
                                    "drawback of the plan is its support.").concepts}
    assert not keys & {"advantage", "advantages", "drawback", "drawbacks"}
    assert any("plan" in k for k in keys)


def test_a_paragraph_broken_at_a_fixed_width_is_read_as_sentences():
    """A README or an e-mail broken at 60 columns: the lines of one sentence are one sentence again (no question
    from the fragment "is not a good fit when you resolve names"); a heading and a bullet stay lines of their own."""
    from agents.synth.offline.nlp import clean_passage, sentence_spans
    text = ("The connector only works when you pass in an unresolved name, which\nis not a good fit when you "
            "cache DNS answers or resolve\nnames another way.\n# Installing\nInstall the package with pip.\n"
            "- works with\n- Python 3.9")
    assert clean_passage(text).split("\n") == [
        "The connector only works when you pass in an unresolved name, which is not a good fit when you cache DNS "
        "answers or resolve names another way.", "Installing", "Install the package with pip.", "works with",
        "Python 3.9"]
    assert [s.text for s in sentence_spans(text)][0].startswith("The connector only works")
    assert not any(o.sentence.startswith("is not") or o.sentence.startswith("names") for o in passage_offers(text))


def test_no_word_twice_in_a_row_whatever_its_case_or_mark():
    """A concept cut from "maxItems maxItems MUST be present." is no question: "What are the requirements for
    maxitems maxItems?" repeats a word before its question mark."""
    from agents.synth.offline.forms import no_echo
    o = next(iter(passage_offers(MANUAL)))
    assert not no_echo("What are the requirements for maxitems maxItems?", o)
    assert no_echo("What are the requirements for bucket names?", o)


def test_a_passage_in_another_language_offers_nothing():
    """The offline rules read English: a Korean or a Spanish page of a mixed corpus offers no question (its words
    would be asked as English concepts: "What should I know about 되려면?"); the same page in English does."""
    korean = ("에러 핸들링은 실패 가능성을 처리하는 과정입니다. 예를 들어, 파일을 읽는 데 실패했는데도 그 잘못된 입력을 계속 "
              "사용하는 것은 분명히 문제가 될 것입니다. 이러한 에러를 인지하고 명시적으로 관리하면 프로그램을 보호할 수 있습니다.")
    spanish = ("Un arreglo es una colección de objetos del mismo tipo, almacenado en memoria contigua. Los arreglos se "
               "crean usando corchetes, y su longitud se conoce en tiempo de compilación.")
    english = ("An array is a collection of objects of the same type, stored in contiguous memory. Arrays are created "
               "with square brackets, and their length is known at compile time.")
    assert passage_offers(korean) == () and passage_offers(spanish) == ()
    assert "array" in {o.concept.key for o in passage_offers(english)}


def test_an_answer_the_user_has_read_is_not_asked_again():
    """A candidate whose answer the conversation already gave ("Can you tell me more about it?" answered by the
    words of the turn before) is passed over for one that tells something new; a conversation that has not read
    it is asked it."""
    from agents.synth.offline.questioning import ask as ask_question
    from agents.synth.offline.checks import answer
    passage = {"doc_id": "m", "title": "", "text": MANUAL}
    fresh = {"passages": [passage], "previous_questions": [], "standalone": True}
    _, question, standalone, _ = ask_question(fresh)
    given = answer(question, standalone, passage)
    other = {"history": [["user", "Where are buckets listed?"], ["assistant", "In the console."]]}
    assert ask_question({**fresh, **other})[2] == standalone
    read_it = {"history": [["user", "What is Object Storage?"], ["assistant", given]]}
    _, q2, s2, _ = ask_question({**fresh, **read_it})
    assert s2 != standalone and answer(q2, s2, passage) not in given


def test_an_activity_is_named_by_its_first_conjunct():
    """"Enabling additional target features or changing the target CPU may raise ..." is about enabling the
    features; the activity's name stops before "or" (the parser may hang the second activity on the object)."""
    texts = ["Enabling additional target features or changing the target CPU may raise the required baseline.",
             "Renaming a bucket or moving its objects requires the manager role."]
    assert [o.concept.text for t in texts for o in _offers(t)["requirement"]] == [
        "enabling additional target features", "renaming a bucket"]


def test_a_definition_names_its_concept_in_full_on_a_follow_up():
    """A concept the conversation named in full may be called by its head ("the fee"), but a definition is not
    asked that way: "What is a fee?" asks what the word means, not what the annual fee is."""
    from dataclasses import replace
    from agents.synth.offline.discourse import short_name
    text = "The annual fee is a charge for keeping the card open. The annual fee is $95 for the gold card."
    offers = _offers(text)
    seg = read([_turn(text, offers["cost"][0])])
    definition = offers["definition"][0]
    assert short_name(replace(definition, intent="overview"), seg) == "What can you tell me about the fee?"
    assert short_name(definition, seg) is None
    asked = ask(definition, seg, Shares(shift=0.0), 0.5)
    assert "annual fee" in asked.question and "a fee" not in asked.question


def test_tell_me_more_answers_what_the_conversation_has_not_read():
    """An overview of a concept whose first sentence the user has read is answered by the next sentence that names
    it; with nothing read, by the first."""
    from agents.synth.offline.checks import answer, answers_read
    text = ("The revolt began in the northern provinces in 1857. Farmers joined it within weeks. Many soldiers "
            "refused their orders. The revolt ended after the fall of the capital a year later. Its leaders were "
            "exiled to the islands.")
    passage = {"doc_id": "h", "title": "", "text": text}
    q = "What can you tell me about the revolt?"
    first = answer(q, q, passage)
    assert first.startswith("The revolt began")
    later = answer(q, q, passage, answers_read([["user", "When did it begin?"], ["assistant", first]]))
    assert later.startswith("The revolt ended after the fall")


def test_tell_me_more_goes_on_with_the_sentence_whose_pronoun_is_the_concept():
    """After the first sentences on the bridge, "Can you tell me more about it?" is answered by the next sentence
    whose subject is its pronoun, and the verifier takes that pronoun as naming it."""
    from agents.synth.offline.checks import answer, answers_read, verify
    text = ("The old bridge opened in 1937. Traffic was heavy from the first day. Ferries stopped running a year "
            "later. It was rebuilt in 1990 after an earthquake damaged its towers.")
    passage = {"doc_id": "b", "title": "", "text": text}
    q, s = "Can you tell me more about it?", "What can you tell me about the old bridge?"
    first = answer(s, s, passage)
    later = answer(q, s, passage, answers_read([["user", s], ["assistant", first]]))
    assert first.startswith("The old bridge opened") and later.startswith("It was rebuilt in 1990")
    answerable, faithful, why = verify({"question": q, "standalone_question": s, "answer": later, "passage": passage})
    assert answerable and faithful, why


def test_a_follow_up_on_the_subject_of_the_previous_answer_may_use_its_pronoun():
    """The subject of the answer just read is what the next question's "it" refers to: after "When did the city
    museum open?" answered "The east wing was added in 2001 ...", the wing may be asked about as "it", and the
    rewrite names the wing. A concept the answer names but not as its subject gets no pronoun."""
    text = ("The city museum opened in 1950. The east wing opened in 2001 and holds modern art. The museum shop "
            "sells prints of the collection.")
    offers = _offers(text)
    opened = next(o for o in offers["time"] if o.concept.text == "city museum")
    turn = _turn(text, opened) | {"answer": "The east wing opened in 2001 and holds modern art."}
    seg = read([turn])
    assert seg.centre is not None and seg.centre.key == "east wing"
    only_pronouns = Shares(pronoun=1.0, ellipsis=0.0, short=0.0, shift=0.0)
    wing = next(o for o in offers["overview"] if o.concept.text == "east wing")
    asked = ask(wing, seg, only_pronouns, u=0.5)
    assert asked.leans and asked.form == "pronoun" and "east wing" in asked.standalone
    art = next(o for o in offers["overview"] if o.concept.text == "modern art")
    assert ask(art, seg, only_pronouns, u=0.5).form != "pronoun"      # (the answer names it: "the art")


def test_what_about_keeps_the_form_of_the_previous_question():
    """After "What does the basic plan cost?", "What about the premium plan?" leaves the same question of another
    plan to the conversation, and its rewrite is that question's form ("What does the premium plan cost?"), whichever form
    the passage's offer would have taken alone. An overview is not shifted: people say "What about X?" in 2% of
    their follow-ups, and "What should I know about X?" is asked of every concept."""
    from dataclasses import replace
    from agents.synth.offline.forms import templates
    text = "The basic plan costs $10 a month. The premium plan costs $25 a month. The service was launched in 2005."
    offers = _offers(text)
    annual = next(o for o in offers["cost"] if o.concept.text == "basic plan")
    late = next(o for o in offers["cost"] if o.concept.text == "premium plan")
    assert len(templates(annual, "full")) > 1
    for v in range(len(templates(annual, "full"))):
        q = render(annual, "full", v)
        seg = read([{"question": q, "standalone_question": q, "answer": annual.sentence, "gold_text": text}])
        asked = ask(late, seg, Shares(), u=0.1)
        assert asked.form == "shift" and asked.question == "What about the premium plan?"
        assert asked.standalone == render(replace(annual, concept=late.concept), "full", v)
    q = render(next(o for o in offers["overview"] if o.concept.text == "basic plan"), "full")
    seg = read([{"question": q, "standalone_question": q, "answer": "The basic plan is cheap.", "gold_text": text}])
    late_overview = next(o for o in offers["overview"] if o.concept.text == "premium plan")
    assert ask(late_overview, seg, Shares(), u=0.1).form != "shift"


def test_a_person_is_referred_to_by_the_pronoun_the_passage_uses():
    """A follow-up on the person the conversation is about says "him" or "her" as the passage does ("Can you tell
    me more about him?"), never "it"; a person the passage refers to by no pronoun is named."""
    only_pronouns = Shares(pronoun=1.0, ellipsis=0.0, short=0.0, shift=0.0)
    for text, pronoun in (("Mary Johnson founded the bakery in 1990. She later opened a school for bakers. Mary "
                           "Johnson won a national prize in 2001.", "her"),
                          ("John Smith joined the band in 1990. He later left to write film music. John Smith won "
                           "a national prize in 2001.", "him"),
                          ("John Smith joined the band in 1990. The band toured Japan. John Smith won a national "
                           "prize in 2001.", None)):
        offers = _offers(text)
        person = next(o for o in offers["overview"] if o.concept.person)
        seg = read([_turn(text, person)])
        again = replace(person, sent_index=person.sent_index + 1)
        asked = ask(again, seg, only_pronouns, u=0.1, text=text)
        if pronoun:
            assert asked.form == "pronoun" and asked.question.endswith(f" {pronoun}?") and " it" not in asked.question
            assert person.concept.text in asked.standalone
        else:
            assert asked.form != "pronoun"
