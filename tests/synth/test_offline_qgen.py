"""Offline question generation: parsed structure -> wh-questions whose answer is a span of the
sentence, and the parser-based well-formedness check (hand-checked expectations)."""
import pytest

from agents.synth.offline.nlp import detokenize
from agents.synth.offline.qgen import passage_questions, well_formed

WALL = ("The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989. "
        "It was built by East Germany in 1961. About 5,000 people escaped over the wall.")


def test_detokenize_undoes_tokenised_spacing():
    assert detokenize("divided ( East Germany ) , they 're 1 , 000 `` Byzantine '' Cummings ' summers .") == \
        "divided (East Germany), they're 1,000 \"Byzantine\" Cummings' summers."


@pytest.mark.parametrize("q,reason", [
    ("whats At the same time , the country?", "capital"),
    ("How many people visited they last year?", "pronoun"),
    ("What happened in ( East Germany )?", "tokenised"),
    ("When was the wall built", "question mark"),
    ("When was the the wall built?", "repeated"),
    ("The wall was built in 1961 by the East German state?", "interrogative"),
    ("Who built the wall in the?", "ends in"),
    ("When did it?", "words"),
    ("How do I getting started with object lock?", "base-form"),
    ("What do Knowledge Studio choose?", "agreement"),
    ("What is IBM Cloudant IBM Cloudant?", "repeated phrase"),
    ("What they use in the cluster?", "auxiliary"),
    ("How does the users log in?", "agreement"),
    ("What does IBM Cloudant providen't at our data centers?", "negation glued"),
    ("Does they maintain a worldwide set of DNS resolvers?", "does not agree"),
    ("Is they a global service in IBM Cloud?", "does not agree"),
    ("What do they resolvers support for public domains?", "base-form"),
    ("Does he sacrifice himself in order?", "cut off"),                       # "... in order to save her"
    ("Does it search for a way?", "cut off"),
    ("What've people got of the law?", "contracted"),
    ("Did Various expeditions fail to find the source?", "capital"),
    ("Do domain they specify a list of IP addresses?", "inside a noun phrase"),   # "domain lockdown rules" half replaced
    ("Was Vespasian an effective it?", "predicate"),
    ("Did the fall of the Wall pave the way in 1990?", "cut off"),
    ("Did the president congratulate Modi on behalf?", "cut off"),             # "on behalf of the industry"
    ("Were the first triumphal arches set up in the time?", "cut off"),
    ("What can user applications can change to a finite value?", "modal twice"),   # "can then can change"
    ("When did they account for?", "dangling preposition"),                    # an adjunct wh-word strands nothing
    ("Is highlight' parameter a boolean?", "unbalanced quotes"),               # of "'highlight' parameter"
    ("Is it the 'passages parameter?", "unbalanced quotes"),
])
def test_well_formed_rejects_broken_surfaces(q, reason):
    assert reason in (well_formed(q) or "")


@pytest.mark.parametrize("q", ["When was the Berlin Wall built?", "How many people escaped over the wall?",
                               "Where did guinea pigs originate?", "Can I store images in IBM Cloudant?",
                               "Why doesn't the cluster start at boot time?", "Does it replicate data across zones?",
                               "Are they available in the basic plan?", "What did they read in 1990?",
                               "Where did the Celts come from?", "What did the settlers look for?",
                               "How many people did it account for?", "Is the 'highlight' parameter a boolean?",
                               "Did the players' union strike?", "Is rock 'n' roll popular?"])
def test_well_formed_accepts_questions(q):
    assert well_formed(q) is None


def test_followups_may_be_short_or_elliptical():
    assert well_formed("When was it built?") is not None          # 4 words: too short standalone
    assert well_formed("When was it built?", followup=True) is None
    assert well_formed("And its population?", followup=True) is None
    assert well_formed("What about the wall?", followup=True) is None
    assert well_formed("And?", followup=True) is not None


def test_questions_from_the_parse_with_answer_spans():
    got = {qa.question: (qa.qtype, qa.answer, qa.topic) for qa in passage_questions(WALL, "Berlin Wall")}
    assert got["What was the Berlin Wall?"] == ("define", "a guarded concrete barrier", "the Berlin Wall")
    # the pronoun subject "It" is resolved to the earlier sentence's subject
    assert got["Who built the Berlin Wall in 1961?"] == ("who", "East Germany", "the Berlin Wall")
    assert got["When was the Berlin Wall built by East Germany?"] == ("when", "1961", "the Berlin Wall")
    assert got["How many people escaped over the wall?"][:2] == ("how_many", "About 5,000 people")
    assert got["Was the Berlin Wall built by East Germany in 1961?"][:2] == ("yesno", "Yes")
    for q, (qtype, answer, _) in got.items():
        # every answer is a span of the passage (a yes/no question's is Yes/No)
        assert answer.lower() in WALL.lower() or (qtype == "yesno" and answer in ("Yes", "No"))
        assert well_formed(q) is None


def test_every_candidate_on_the_example_corpus_is_well_formed():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "examples" / "wiki"
    n = 0
    for f in sorted(root.glob("*.md"))[:4]:
        for qa in passage_questions(f.read_text()[:4000], f.stem.replace("_", " ").title()):
            n += 1
            assert well_formed(qa.question) is None, qa.question
            assert 5 <= len(qa.question.split()) <= 16 and qa.question.endswith("?")
            assert " ," not in qa.question and "( " not in qa.question
    assert n >= 10


FAQ = """Why was my credit card declined?

What's happening

An issue occurred that caused your credit card to decline. This error might prompt a message.

Why it's happening

You have a credit card on file and it was declined because the card expired.

How to fix it

Update your credit card information on the Payments page.

Parallel multipart transfers

Parallel multipart transfers split an upload into many parallel parts. They improve throughput.
"""


def test_faq_headings_are_asked_with_the_answer_of_their_sub_section():
    from agents.synth.offline.qgen import passage_questions
    qs = {q.question: q for q in passage_questions(FAQ, "")}
    why = qs["Why was my credit card declined?"]
    assert why.qtype == "why" and why.answer.startswith("You have a credit card on file")
    assert "What's happening?" not in qs and "How to fix it?" not in qs          # generic sub-headings


def test_noun_phrase_headings_become_definitions_about_their_section():
    from agents.synth.offline.qgen import passage_questions
    qs = {q.question: q for q in passage_questions(FAQ, "")}
    mt = qs["What are parallel multipart transfers?"]
    assert mt.qtype == "define" and mt.answer.startswith("Parallel multipart transfers split") and mt.topic_kind == "PLUR"


def test_be_agreement_and_quoted_speech_are_malformed():
    from agents.synth.offline.qgen import well_formed
    assert "agreement" in well_formed("What were the growing commerce contributing in the decision?")
    assert well_formed("Where were the soldiers stationed?") is None
    assert well_formed("What is the media saying about it?") is None          # either number
    assert "quoted speech" in well_formed("How many months has disillusioned me regarding the supposed merits?")
    assert well_formed("How do I give my team access to the bucket?") is None


def test_sentence_initial_capitals_of_common_words_are_dropped_and_agents_are_who():
    qs = {qa.question for qa in passage_questions("Common citizens could worship private statues of gods in their homes.", "")}
    assert "What could common citizens worship in their homes?" in qs
    qs = {qa.question for qa in passage_questions("Microsoft acquired GitHub in 2018 for 7.5 billion dollars.", "")}
    assert "Who acquired GitHub in 2018 for 7.5 billion dollars?" in qs          # an organisation acting: who
    assert "Did Microsoft acquire GitHub in 2018 for 7.5 billion dollars?" in qs  # a name keeps its capital


def test_a_manuals_instruction_becomes_the_readers_own_question():
    qs = [qa.question for qa in passage_questions("To define your own intents, see Defining intents. It is easy.", "")]
    assert "How do I define my own intents?" in qs and not any("your" in q for q in qs)


def test_idiom_objects_are_not_asked_and_a_pronoun_is_no_predicate():
    qs = [qa.question for qa in passage_questions("Yichud can take place anywhere, from a rabbi's study to a classroom.", "")]
    assert not any(q.startswith("What can Yichud take") for q in qs)          # "take place": "place" is no answer
    assert "predicate" in (well_formed("Was Vespasian it?", followup=True) or "")
    assert well_formed("Is the answer in it?", followup=True) is None


def test_a_product_or_command_tagged_org_is_what_and_an_expletive_it_is_not_resolved():
    qs = [qa.question for qa in passage_questions(
        "If no alert is configured, the first PUT will create the Index Rate Alert automatically.", "")]
    assert "What will create the Index Rate Alert automatically?" in qs and not any(q.startswith("Who") for q in qs)
    qs = [qa.question for qa in passage_questions("This topic describes key deletion. As part of a testing and "
                                                  "development process, it is normal to create and delete keys often.", "")]
    assert not any("normal to create" in q for q in qs)      # "it is normal to ...": no "Is this topic normal to ...?"


def test_a_sentence_initial_ordinal_loses_its_capital():
    qs = [qa.question for qa in passage_questions("First McDonald's restaurant opened in 1940 in San Bernardino.", "")]
    assert qs and not any(" First " in q for q in qs)


def test_names_are_not_cut_and_misparsed_or_pointing_clauses_are_not_asked():
    qs = {qa.question: qa.answer for qa in passage_questions(
        "The Government of India Act 1935 was a major success in this regard.", "")}
    assert "What was the Government of India Act 1935?" in qs and "What was the Government of India?" not in qs
    # two objects of one verb (a misparse of "not only ..., but also ..."): nothing is asked
    assert not passage_questions("The National Origins Formula of 1921 (and its final form in 1924) not only restricted "
                                 "the number of immigrants who might enter the United States, but also assigned slots "
                                 "according to quotas based on national origins.", "")
    # "this song" / "such donors" point into the passage: neither an answer nor part of a question
    for text in ("The Mormon Tabernacle Choir performed this song during their weekly broadcast of Music and the "
                 "Spoken Word on June 25th.",
                 "In most countries other than the US and UK, the law requires such donors to remain anonymous.",
                 "This ephemeris second is the basis of the time scale."):
        assert not passage_questions(text, ""), text
    # a subject "This" is an event or a claim, not the previous sentence's subject
    qs = [qa.question for qa in passage_questions("Romeo met a girl at the Capulet feast. This, according to critics, "
                                                  "took out the love at first sight moment at the Capulet feast.", "")]
    assert qs and not any("take out" in q for q in qs)
    qs = [qa.question for qa in passage_questions("The Berlin Wall was built by East Germany in 1961 for this reason.", "")]
    assert "When was the Berlin Wall built by East Germany?" in qs and not any("this" in q for q in qs)


def test_names_capitals_coordinations_and_complements_survive_into_the_question():
    def qs(text):
        return [qa.question for qa in passage_questions(text, "")]
    # a sentence-initial capital the passage also writes mid-sentence is a name; one it does not is dropped
    friends = qs("Friends received acclaim throughout its run. All ten seasons of Friends ranked within the top ten.")
    assert "Did Friends receive acclaim throughout its run?" in friends
    assert "When did trade grow between the two cities?" in qs("Trade grew between the two cities in 1700.")
    # a coordinated subject keeps both conjuncts; "between" keeps its two things or is not asked
    assert "What did Wellington and Forsythia kill for revenge?" in qs(
        "Wellington and Forsythia killed Florence for revenge with a bag of canary seeds.")
    assert not any("between" in q for q in qs("Several other border crossings existed between West Berlin and "
                                               "surrounding East Germany."))
    # a post-nominal adjective loses its complement with it ("relationships similar in the Gaul")
    gaul = qs("Patron-client relationships similar to those of Roman society are also described by Caesar and "
              "others in the Gaul of the 1st century BC.")
    assert gaul and not any("similar" in q for q in gaul)
    assert not any(q.startswith("What does Phoebe give") for q in qs(
        "Phoebe gives birth to triplets in the show's 100th episode."))          # "give birth": no object to ask
    # "they" is not resolved to a subject that itself points back ("... of these regions")
    assert not qs("Roman local government of these regions was studied. They depict a pre-Christian Iron Age "
                  "Celtic social structure.")


def test_amounts_keep_what_they_count_and_a_verbs_own_preposition_keeps_its_object():
    def qs(text):
        return [qa.question for qa in passage_questions(text, "")]
    # "a series" / "52.1%" say nothing without their "of" phrase; "%" is a word, not punctuation
    assert "Was the Empire struck by a series of epidemics?" in qs(
        "During the 6th and 7th centuries, the Empire was struck by a series of epidemics, which greatly devastated "
        "the population.")
    assert any("by 4% since the 1980s" in q for q in qs("Infertility rates have increased by 4% since the 1980s."))
    # "accounted for <too long to ask>": no "account for?" / "account for in 2009?"
    assert not any(" for?" in q or "for in" in q for q in qs(
        "Agricultural and allied sectors accounted for about 52.1% of the total workforce in 2009."))
    # "a number of times" is an amount, not an object: no "What did Cummings return to Paris?"
    assert not any(q.startswith("What did Cummings") for q in qs(
        "During the rest of the 1920s and 1930s, Cummings returned to Paris a number of times."))


def test_money_keeps_its_currency_and_half_a_subject_or_object_is_not_asked():
    def qas(text):
        return {qa.question: qa.answer for qa in passage_questions(text, "")}
    pay = qas("From 1789 to 1815, members of Congress received only a daily payment of $6 while in session.")
    assert "$6" in pay.values() and "6" not in pay.values()
    # the first of two coordinated subjects with a plural verb: "What are the FIBA Basketball World Cup?"
    assert not qas("The FIBA Basketball World Cup and Men's Olympic Basketball Tournament are the major international "
                   "events of the sport.")
    # an adjective predicate without its complement ("the next (to last state)"), an object read as a modifier
    assert not qas("The State of North Carolina was the next to last state to secede from the United States.")
    assert not qas("In 2016, Turkey scrapped winter time, by switching to New Turkey Time.")   # "Did Turkey scrap by ...?"


def test_an_object_pronoun_points_into_the_passage():
    qs = [qa.question for qa in passage_questions(
        "Although Crane and Kauffman did not want LeBlanc, the network told the series creators to cast him in 1994.", "")]
    assert not any(" him" in q for q in qs)                     # "What told the series creators to cast him?"
    assert not passage_questions("Microsoft acquired it in 2018 for 7.5 billion dollars.", "")


def test_definition_list_terms_that_are_sentences_give_no_task_and_answers_lose_the_marker():
    from agents.synth.offline.nlp import clean_passage
    from agents.synth.offline.qgen import passage_questions
    text = ("Creating contextual entities is easier\n: The process you use to annotate entity mentions from intent "
            "user examples was improved.\n\nUpdating CDN configuration details\n: You can update the origin and "
            "the cache settings of a CDN in the console.")
    assert clean_passage(text).split("\n")[1].startswith("The process you use")
    qs = {q.question: q for q in passage_questions(text, "")}
    assert not any("contextual entities is" in q for q in qs)          # "How do I create contextual entities is easier?"
    task = qs["How do I update CDN configuration details?"]
    assert task.answer.startswith("You can update the origin")
    assert not any(q.answer.startswith(":") for q in qs.values())


def _asked(sentence: str) -> dict[str, str]:
    return {qa.question: qa.answer for qa in passage_questions(sentence, "")}


def test_passive_agent_questions_keep_the_modal_and_the_irregular_past():
    assert _asked("One dialog skill can be used by more than one assistant.")[
        "What can use one dialog skill?"] == "more than one assistant"
    assert "What will replace the old bridge?" in _asked("The old bridge will be replaced by a new steel bridge.")
    got = _asked("During the early modern period, an age of discovery and trade was undertaken by the Western "
                 "European nations.")
    assert "What undertook an age of discovery and trade?" in got
    assert not any("undertaked" in q or "What used" in q for q in got)


def test_no_agent_question_from_a_manner_phrase_or_a_negated_subject():
    assert not any(q.startswith(("What disables", "Who disables")) for q in
                   _asked("The search refinement feature is disabled by default."))
    assert _asked("No special characters within the quotation marks are parsed by the API.") == {}


def test_people_are_who_and_a_duration_is_how_long():
    got = _asked("The retrospective episode was watched by fewer than 36 million viewers.")
    assert "Who watched the retrospective episode?" in got and not any(q.startswith("What watched") for q in got)
    got = _asked("The Byzantine Empire lasted a thousand years.")
    assert got["How long did the Byzantine Empire last?"] == "a thousand years"
    assert "What did the Byzantine Empire last?" not in got


def test_no_question_on_a_phrase_whose_content_was_cut():
    from agents.synth.offline.qgen import cut_short
    assert cut_short("A habit of having") and cut_short("A tendency to") and cut_short("the rise of") \
        and cut_short("A taste somewhere")
    assert not cut_short("the Western European nations") and not cut_short("in 1961")
    got = _asked("Willie has a tendency to see the worst in everything. Armstrong was the first person to walk on "
                 "the Moon. The Nile is the longest river in Africa.")
    # "Does Willie have a tendency?", "Was Armstrong the first person?", "Is the Nile the longest river?" say
    # nothing or claim what the sentence does not
    assert not any(q in got for q in ("Does Willie have a tendency?", "Was Armstrong the first person?",
                                      "Is the Nile the longest river?", "What does Willie have?"))
    assert "Is Lyme disease the most common tick-borne disease?" in _asked(
        "Lyme disease is the most common tick-borne disease.")          # a rank with no scope to lose


def test_a_definition_answer_defines_the_thing_asked_about():
    from agents.synth.offline.answering import _defines
    assert _defines("What is IBM Cloudant?", ["IBM Cloudant, a distributed database from IBM, is a managed service."])
    assert not _defines("What is Super Bowl ring?", [
        "Mike Pope won all four of his Super Bowl rings as the long time coach for New York Giants Ken Norton, who "
        "was a linebacker."])


def test_a_list_page_is_no_thing_to_ask_about():
    from agents.synth.offline.discourse import title_name
    assert title_name("List of Madagascar (franchise) characters") == ""
    assert title_name("Timeline of the Berlin Wall") == ""
    assert title_name("American Pie (song)") == "American Pie"


def test_no_question_pointing_into_the_passage_and_no_one_word_instruction():
    assert _asked("Your account wasn't enabled to create resources of that type after you applied the code.") == {}
    assert _asked("Use ( ) to enclose a logical grouping of multiple expressions using Boolean operators.") == {}
    assert _asked("To delete a bucket, open the console and click Delete.")[
        "How do I delete a bucket?"] == "open the console and click Delete."
    got = _asked("From the 2nd century AD, many examples of the arcus quadrifrons were built in North Africa.")
    assert "Where were many examples of the arcus quadrifrons built?" in got
    assert "Where were many examples built?" not in got            # "many examples" of what?


def test_a_page_title_is_no_task_and_a_final_connective_is_dropped():
    text = "Eating disorder\nAccording to one study, 40% of young girls are already dieting to lose weight."
    assert not any(q.startswith("How do I eat") for q in (qa.question for qa in passage_questions(text, "Eating disorder")))
    manual = "Creating buckets\nYou create a bucket in the console by clicking Create bucket."
    assert "How do I create buckets?" in {qa.question for qa in passage_questions(manual, "")}
    assert "Can nights be quite cool in summer?" in _asked("Nights can be quite cool even in summer, though.")


def test_past_of_prefixed_irregular_verbs():
    from agents.synth.offline.qgen import _verb_past
    assert [_verb_past(v) for v in ("undertake", "rebuild", "withdraw", "overcome", "relay", "create")] == \
        ["undertook", "rebuilt", "withdrew", "overcame", "relayed", "created"]


def test_a_subject_is_singular_or_plural_as_its_verb_agrees():
    from agents.synth.offline.qgen import passage_questions
    kube = [qa for qa in passage_questions(
        "IBM Cloud Kubernetes Service is a managed service. Kubernetes manages containers across a cluster of machines.")
            if qa.topic == "Kubernetes"]
    assert kube and all(qa.topic_kind == "SING" for qa in kube)      # the tagger reads a plural noun; "manages"
    panthers = [qa for qa in passage_questions("The Panthers were founded in 1993 in Charlotte.")
                if qa.topic == "the Panthers"]
    assert panthers and all(qa.topic_kind == "PLUR" for qa in panthers)


def test_an_of_phrase_stays_with_its_head_and_a_measure_needs_it():
    from agents.synth.offline.qgen import passage_questions
    qs = [qa.question for qa in passage_questions(
        "Usage charges come from the use of the resources and services that are provisioned in the account.")]
    assert any("the use of the resources" in q for q in qs) and not any(q.endswith("the use?") for q in qs)
    qs = [qa.question for qa in passage_questions(
        "Guinea pigs are rodents. They live an average of four to five years in captivity.")]
    assert not any(q.startswith("What do") and "live" in q for q in qs)     # no "What do guinea pigs live?"


def test_an_instruction_misparsed_with_a_subject_gives_no_question():
    from agents.synth.offline.qgen import passage_questions
    qs = [qa.question for qa in passage_questions(
        "You can enable the dialog feature. In the confirmation that displays, click Activate dialog again.")]
    assert not any("displays" in q for q in qs), qs


def test_an_agent_named_by_a_peoples_noun_is_asked_with_who():
    from agents.synth.offline.qgen import passage_questions
    qs = [qa.question for qa in passage_questions(
        "The Great Wall of China is long. The gates were opened in 1644 by the commanding general.")]
    assert "Who opened the gates in 1644?" in qs and not any(q.startswith("What opened") for q in qs), qs


def test_a_manuals_your_is_asked_as_the_readers_own():
    from agents.synth.offline.qgen import passage_questions
    qas = passage_questions("Web chat security is optional. When you enable security, your assistant takes an "
                            "additional step to verify that messages originate from the web chat.")
    assert [qa.question for qa in qas] == ["Does my assistant take an additional step?"]
    assert qas[0].topic == "my assistant" and "your" not in qas[0].template


def test_a_negated_object_is_asked_yes_no_with_answer_no_and_never_with_a_wh_word():
    got = _asked("The religion had no founder and was not the creation of an inspired teacher.")
    assert got == {"Did the religion have any founder?": "No"}, got      # not "What did the religion have?"
    assert _asked("The treaty had no effect on the war.") == {"Did the treaty have any effect?": "No"}
    assert not any(q.startswith("What") for q in _asked("The law requires nothing from the donors."))


def test_a_verb_parsed_with_two_subjects_or_two_predicates_gives_no_question():
    # the parser reads "paintings" and "Scotland" (and "the" and "Special") both as the subject of "had"
    qs = [qa.question for qa in passage_questions(
        'Two paintings, "Winter Landscape with a Bird Trap" and "The Hunters in the Snow" (both dated 1565) by '
        "Pieter Bruegel the Elder depict Flemish peasants curling, albeit without brooms; Scotland and the Low "
        "Countries had strong trading and cultural links during this period.")]
    assert not any("paintings" in q for q in qs), qs
    qs = [qa.question for qa in passage_questions(
        "Episode 8 is The Women Tell All Special. Episode 10, the After the Final Rose Special had the highest "
        "rated number ever in this special episode in The Bachelor history.")]
    assert not any(q.startswith("Did the have") for q in qs), qs
    assert _asked("The child was named Sita, the Sanskrit word for furrow.") == {}    # two predicates of "named"


def test_a_hyphenated_word_stays_whole_and_trademark_signs_are_not_asked():
    got = _asked("IBM Cloud® Functions offers a powerful plug-in for the IBM Cloud CLI.")
    assert got["What does IBM Cloud Functions offer?"] == "a powerful plug-in", got      # not "in", not "Cloud ®"
    assert not any("®" in q for q in got)


def test_a_phrase_whose_object_says_nothing_without_its_clause_is_left_out():
    got = _asked("Mussolini entered World War II on the side of Adolf Hitler with plans to enlarge Italy's "
                 "territorial holdings.")
    assert got["Who entered World War II on the side of Adolf Hitler?"] == "Mussolini", got    # no "... with?"
    got = _asked("Mussolini also mentioned to Italo Balbo his ambitions of capturing British and French territories, "
                 "in the hope that Italy could establish a colony on the Atlantic coast of Africa.")
    assert got and not any(q.rstrip("?").endswith(("with", "in the hope")) for q in got), got


def test_a_piece_of_a_split_word_is_no_subject_and_for_example_is_no_part_of_a_question():
    assert _asked("If you're storing time-series data, encoding time at the start of your _id sorts the primary index "
                  "by time, for example, 001j40Ox1b2c1B2ubbtm4CsuLB4L35wQ.") == {}     # no "Does d sort ...?"
    got = _asked("The index sorts the documents by time, for example.")
    assert got["What does the index sort by time?"] == "the documents", got


def test_an_instructions_bracketed_acronym_is_left_out_and_a_pointer_into_the_page_is_no_answer():
    got = _asked("To sign a JSON Web Token (JWT), use the private key of the service.")
    assert got == {"How do I sign a JSON Web Token?": "use the private key of the service."}, got   # not "... Token JWT?"
    assert _asked("Use the following methods to calculate a date.") == {}     # the steps are elsewhere on the page


def test_a_path_split_at_its_slashes_is_rejoined_and_a_count_per_thing_is_no_how_many():
    assert detokenize("A successful POST /v2 / keys response uses GET /api / v1 / items / {id} and / or TCP / IP") == \
        "A successful POST /v2/keys response uses GET /api/v1/items/{id} and / or TCP / IP"
    got = _asked("A successful POST /v2/keys response returns the ID value for your key, along with other metadata.")
    assert got["What does a successful POST /v2/keys response return for my key?"] == "the ID value", got
    got = _asked("After reindexing is finished, the collections will contain several hundred documents each.")
    assert not any(q.startswith("How many") for q in got), got       # no "How many documents each will ...?"
    assert _asked("The collections will contain several hundred documents.")[
        "How many documents will the collections contain?"] == "several hundred documents"


def test_a_tables_header_row_is_no_task_heading():
    from agents.synth.offline.qgen import heading_questions
    text = ("Provisioning instructions Description\n\nProvisioning public instances on the console takes a few "
            "minutes.\n\nProvisioning public instances\n\nYou can provision a public instance from the catalog.")
    asked = [q.question for q in heading_questions(text)]
    assert asked == ["How do I provision public instances?"], asked       # not "How do I provision instructions ...?"


def test_a_heading_about_its_topic_is_no_task_heading():
    from agents.synth.offline.qgen import heading_questions
    text = ("Pricing FAQs\n\nThe following FAQs provide an overview of the pricing plans.\n\nPricing your plan\n\n"
            "You can price your plan from the catalog page.")
    asked = [q.question for q in heading_questions(text)]
    assert asked == ["How do I price my plan?"], asked       # not "How do I price FAQs?"


def test_an_instruction_to_do_the_task_itself_is_no_method():
    assert _asked("Try again to import the edited skill.") == {}           # no "How do I import ...?" -> "Try again"
    assert _asked("Use the CLI to create a bucket.") == {"How do I create a bucket?": "Use the CLI"}
    assert "Does the service continue to support legacy keys?" in _asked("The service continues to support legacy keys.")


def test_the_writers_we_is_not_the_askers():
    assert _asked("IBM Cloud provides further details at our data centers.") == {}     # whose? the writer's
    assert _asked("But our show really did cross the line between funny and really serious.") == {}   # a quote
    assert _asked("IBM Cloud provides further details at the data centers.")


def test_a_heading_is_asked_about_as_its_text_writes_it():
    from agents.synth.offline.qgen import as_written, np_heading_questions
    got = np_heading_questions(["Default Spark configuration",
                                "The service sets a default Spark configuration for every job.", "x"])
    assert [q.question for q in got] == ["What is default Spark configuration?"]      # not "What is Default ..."
    got = np_heading_questions(["Cross River gorilla",
                                "The population of the Cross River gorilla declined as gorilla habitats shrank.", "x"])
    assert [q.question for q in got] == ["What is the Cross River gorilla?"]
    # a demonym keeps its capital (not "What is american popular music?")
    got = np_heading_questions(["American popular music",
                                "American popular music has had a formative influence on world music.", "x"])
    assert [(q.question, q.topic) for q in got] == [("What is American popular music?", "American popular music")]
    got = np_heading_questions(["New Helpful links tab", "The Helpful links tab has links to the tab docs.", "x"])
    assert not any("New" in q.question for q in got), got      # the tagger's "New Helpful" is no demonym
    assert as_written("World War I", "World War I began in 1914. During World War I, ...") == "World War I"
    assert as_written("IBM Cloud Backup", "Use IBM Cloud Backup to back up.") == "IBM Cloud Backup"
    assert as_written("North Carolina", "It is home to the North Carolina Tar Heels.") == "North Carolina"
    assert as_written("Default Spark configuration", "You can specify default Spark configurations.") == \
        "default Spark configuration"


def test_a_number_after_its_noun_is_a_label_not_a_count():
    got = _asked("Versions 4.11 and later include support for Kubernetes pod security admission.")
    assert not any(q.startswith("How many") for q in got), got      # no "How many Versions include support?"
    got = _asked("About 5,000 people escaped over the wall.")
    assert got["How many people escaped over the wall?"] == "About 5,000 people", got


def test_an_amount_as_the_subject_is_asked_about_by_no_question():
    assert _asked("Despite this, only one-sixth of India's population lived in cities by 1951.") == {}   # no "sixth"


def test_a_name_opening_with_a_number_keeps_its_capital():
    text = ("One Piece is an anime series from the manga of the same title. The fans of One Piece follow Luffy. "
            "One Piece made its U.S. premiere on September 18, 2004.")     # (written with its capital mid-sentence)
    got = [q.question for q in passage_questions(text, "List of One Piece episodes")]
    assert "Is One Piece an anime series?" in got, got           # not "Is one Piece ...?"
    assert not any("one Piece" in q for q in got), got


def test_a_shortened_phrase_keeps_a_compound_name_whole():
    got = _asked("One Piece made its U.S. premiere on September 18, 2004, on the Fox network's Fox Box "
                 "programming block, and also began airing on the Cartoon Network's Toonami block in April 2005.")
    qs = " ".join(got)
    assert "Fox Box programming block" in qs, got               # not "on Box programming block"
    assert " on Box " not in qs, got


def test_an_object_hung_on_the_verb_across_a_conjunction_is_not_asked():
    got = [q.question for q in passage_questions(
        "The nineteenth season began broadcasting in Japan on April 9, 2017. It deals with Luffy and his small team "
        "rescuing Sanji from his arranged marriage to finalize a political alliance between his own family, the "
        "Vinsmoke's, and Big Mom's family.")]
    assert not any("deal with" in q for q in got), got    # not "What does it deal with Luffy?", "... Luffy Big Mom's family?"
    assert "What did Octavian take from Lepidus in 36 BC?" in _asked("Octavian took Africa from Lepidus in 36 BC.")


def test_a_bare_existential_read_as_a_clause_is_not_asked():
    # the parser reads "There are" as a complement and "themed" as the verb of "two Friends ... cafes"
    got = _asked("There are two Friends themed cafes in Pakistan as well -- one in Lahore, Punjab known as "
                 "\"Friends Cafe\" and the other in Peshawar, Khyber Pakhtunkhwa called \"Central Perk\".")
    assert not any("theme" in q for q in got), got     # not "Where did two Friends theme cafes?"
    # an existential with its own noun phrase is a clause of its own: the main clause is still asked
    assert "Were Italian tales very popular among theatre-goers?" in _asked(
        "There was a trend among writers and playwrights to publish works based on Italian novelles -- Italian tales "
        "were very popular among theatre-goers -- and Shakespeare may well have been familiar with William Painter's "
        "1567 collection of Italian tales titled Palace of Pleasure.")


def test_an_adjective_standing_for_a_noun_said_before_is_no_subject():
    got = _asked("Two designs were proposed in 1890. The first was built in Paris by Gustave Eiffel's company. "
                 "The latest called forth a strong reaction from the Imperial Japanese Army in Manchuria.")
    assert not any(" the first" in q or "the latest" in q for q in got), got    # "Who built the first in Paris?"
    assert "When were two designs proposed?" in got
    # a partitive says which one
    assert "When did most of Macedonia come under the control of the Empire?" in _asked(
        "Most of Macedonia came under the control of the Empire in 1246.")


def test_an_instruction_read_as_a_statement_is_not_asked():
    # "Toggle custom" read as the subject of "attributes": an instruction, no fact to check
    assert _asked("Toggle custom attributes to Enabled in the App ID dashboard.") == {}
    assert _asked("Fix queries with no results by adding more data.") == {}
    # a statement whose verb stays a verb when read after "You" is still asked
    assert "What do slack integrations require?" in _asked("Slack integrations require a title.")


def test_do_support_without_a_subject_is_malformed():
    assert well_formed("Does toggle custom attribute to Enabled?") == "no subject after do-support"
    assert well_formed("Does submit test user query through a client application?") == "no subject after do-support"
    for ok in ("Does step 3 contain a response?", "Does sickle cell disease show normal red blood cells?",
               "Did mainstream Christianity become the official religion of the Roman Empire?"):
        assert well_formed(ok) is None, ok


def test_a_time_is_no_subject_to_define():
    got = _asked("The second half of the 20th century was the golden age of virus discovery.")
    assert "What was the second half of the 20th century?" not in got, got
    assert "Was the second half of the 20th century the golden age of virus discovery?" in got
    assert "What was the Marshall Plan?" in _asked("The Marshall Plan was an American initiative to aid Western Europe.")


def test_a_shortened_phrase_keeps_its_article_and_a_measure_keeps_what_it_measures():
    got = _asked("The Moon is a relatively large, terrestrial, planet-like natural satellite, with a diameter about "
                 "one-quarter of Earth's.")
    assert "Is the Moon a planet-like natural satellite?" in got, got        # not "Is the Moon planet-like ...?"
    assert "Is the Moon planet-like natural satellite?" not in got
    got = _asked("Palaces were decorated with hundreds of kilograms of these very expensive metals.")
    assert not any("kilograms" in q for q in got), got      # no "... with hundreds of kilograms?"
    assert "Were palaces decorated with hundreds of kilograms of gold?" in _asked(
        "Palaces were decorated with hundreds of kilograms of gold.")
    # an article that no longer fits is left out: "an reputation", "a minutes"
    got = _asked("The ballet version has attained an \"immense\" reputation among critics.")
    assert got and not any("an reputation" in f"{q} {a}" for q, a in got.items()), got


def test_a_reflexive_that_does_not_agree_with_the_asker_is_malformed():
    assert well_formed("How do I improve itself?") == "a reflexive pronoun that does not agree with its subject"
    assert well_formed("Can I sign up for themselves?") is not None
    for ok in ("How does the model improve itself?", "Can I protect the cluster itself?", "How do I protect myself from phishing?",
               "Does the service restart itself after a failure?"):
        assert well_formed(ok) is None, ok


def test_a_time_asked_of_a_person_is_malformed():
    assert well_formed("When was the real-life murderer Ed Gein?") == "a time asked of a person"
    assert well_formed("When was Napoleon?", followup=True) == "a time asked of a person"
    for ok in ("When was the Battle of Hastings?", "When was the coronation of Napoleon?", "Where was Napoleon Bonaparte born?",
               "When was Napoleon crowned emperor?", "When was Zidane Ligue 1 Player of the Year?",
               "When was the first Super Bowl appearance of Vinatieri?"):
        assert well_formed(ok) is None, ok


def test_a_description_of_the_page_subject_is_asked_by_its_name():
    # "The film" on a page about a film is that film: a question cut from the sentence must name it (the
    # conversation's rewrite names it too), and so must a later "it"
    text = ("Incredibles 2 is a 2018 American computer-animated superhero film produced by Pixar Animation Studios. "
            "The film passed $1 billion at the worldwide box office on July 30. It was released in June.")
    qs = [qa.question for qa in passage_questions(text, "Incredibles 2")]
    assert any(q.startswith("How much did Incredibles 2 pass at the worldwide box office") for q in qs), qs
    assert "When was Incredibles 2 released?" in qs, qs
    assert not any("the film" in q for q in qs), qs
    # the title's disambiguation says what kind of thing the page is about, on any passage of the page
    qs = [qa.question for qa in passage_questions("The film is directed by Burr Steers.",
                                                  "Pride and Prejudice and Zombies (film)")]
    assert "Who directs Pride and Prejudice and Zombies?" in qs, qs
    # the text's sentence-initial "The" before a name is an article
    qs = [qa.question for qa in passage_questions(
        "The Hudson River is a 315-mile river that flows from north to south. The river drains into the Atlantic.",
        "Hudson River")]
    assert "Where does the Hudson River drain?" in qs or any(q.startswith("Does the Hudson River drain") for q in qs), qs
    # not for another film the page mentions, nor on a page whose subject is of another kind, nor a relational noun
    qs = [qa.question for qa in passage_questions(
        "Doctor Strange is a fictional superhero appearing in comic books. The film was released in 2016.",
        "Doctor Strange")]
    assert not any("Doctor Strange released" in q or "Doctor Strange was released" in q for q in qs), qs
    qs = [qa.question for qa in passage_questions("Kyoto is the name of a city. The name means capital.", "Kyoto")]
    assert not any("Kyoto mean" in q for q in qs), qs


def test_the_pages_name_split_by_the_parser_is_asked_whole():
    # the parser hangs "in the Box" on "Jack": the subject is the page's name, never "Is Jack an American ...?"
    qs = [qa.question for qa in passage_questions(
        "Jack in the Box is an American fast-food restaurant chain founded in 1951.", "Jack in the Box")]
    assert "Is Jack in the Box an American fast-food restaurant chain?" in qs, qs
    assert not any(q.startswith("Is Jack an") for q in qs), qs


def test_a_purpose_keeps_every_to_but_its_infinitive_marker():
    # "To customize the cluster to your needs, ..." gave "How do I customize the cluster my needs?"
    assert "How do I customize the cluster to my needs?" in _asked(
        "To customize the cluster to your needs, edit the configuration file.")
    assert "How do I connect to the database?" in _asked("To connect to the database, use the service credentials.")


def test_an_amount_of_money_says_its_currency():
    # the tagger's MONEY on an issue number gave "How much did the character make in October 2003?" -> "1"
    got = _asked("The character made her debut in The Walking Dead #1 in October 2003.")
    assert not any(q.startswith("How much") for q in got), got
    assert _asked("The film grossed $300 million in North America.").get("How much did the film gross?") == "$300 million"
    assert _asked("The bridge cost 2 million pounds to build.").get("How much did the bridge cost?") == "2 million pounds"


def test_they_is_resolved_only_to_the_previous_sentences_subject():
    # two sentences after "the inmates", "they" is Rick's group: no "What do the inmates meet?"
    text = ("Rick and the group settle into the prison. After this event, the inmates try to assimilate with the group. "
            "Rick meets the katana-wielding woman Michonne. At the town they meet a man called The Governor.")
    assert not any("the inmates meet" in q for q in _asked_in(text)), _asked_in(text)
    text = "The inmates try to assimilate with the group. They meet a man called The Governor."
    assert any(q.startswith("Do the inmates meet a man") for q in _asked_in(text)), _asked_in(text)


def _asked_in(text: str) -> list[str]:
    return [qa.question for qa in passage_questions(text, "")]


def test_a_subject_keeps_the_short_phrase_that_says_which_one():
    # "a tornado in the vicinity of Reform" was asked as "Did a tornado damage two homes?": any tornado, anywhere
    qs = _asked_in("In Alabama, a tornado in the vicinity of Reform damaged two homes and destroyed a barn.")
    assert "How many homes did a tornado in the vicinity of Reform damage?" in qs, qs
    assert not any(q.startswith(("Did a tornado damage", "How many homes did a tornado damage")) for q in qs), qs
    qs = _asked_in("For most areas in the state, the temperatures in July are approximately 90 degrees.")
    assert "Are the temperatures in July approximately 90 degrees?" in qs, qs
    # a name says which one alone, and a phrase with a pronoun points into the passage: both as before
    qs = _asked_in("The Berlin Wall in Germany fell in 1989. Children with their parents visited the wall.")
    assert "When did the Berlin Wall fall?" in qs, qs
    assert not any("with their parents" in q for q in qs), qs


def test_an_answer_that_is_only_a_vague_noun_gives_no_question():
    # "What do potential difficulties with primary sources have?" -> "the result" (what result: the clause after it)
    qs = _asked_in("Potential difficulties with primary sources have the result that history is taught using "
                   "secondary sources. The API key includes information about the account.")
    assert not any(q.startswith(("What do potential difficulties", "What does the API key include")) for q in qs), qs
    # a count of them is an answer ("two types")
    assert _asked("IBM Cloudant supports two types of indexes.").get(
        "How many types of indexes does IBM Cloudant support?", "").lower() == "two types"


def test_a_connective_left_at_the_end_is_dropped():
    qs = _asked_in("In addition, the state has 11,037 inland lakes.")
    assert "How many inland lakes does the state have?" in qs, qs
    assert not any(q.endswith("in addition?") for q in qs), qs
    assert _asked_in("The cashew nut yields are about 0.25 metric tons per hectare, in contrast to the dwarf variety.")


def test_no_question_from_an_infobox_or_a_name_cut_by_its_bracket():
    # a flattened infobox gave "What does Specialty Hematology Symptoms Attacks of pain cause?"
    assert _asked_in("Sickle cell disease Synonyms Sickle cell disorder. Specialty Hematology Symptoms Attacks of pain, "
                     "anemia, swelling in the hands and feet cause pain.") == []
    # "The Bachelor of Architecture (B. Arch.) degree" gave "Is degree a professional degree?"
    qs = _asked_in("The Bachelor of Architecture ( B. Arch . ) degree is a professional degree awarded to students "
                   "who complete the course .")
    assert not any(q.startswith("Is degree") for q in qs), qs
    # a bracket after the whole name keeps it
    assert "What is the Stanley Cup?" in _asked_in(
        "The Stanley Cup ( French : La Coupe Stanley ) is the championship trophy awarded annually to the playoff winner .")


def test_no_object_question_on_the_subject_of_a_to_clause():
    # "has enabled women ... to have biological children" gave "What has it enabled to have biological children?"
    qs = _asked_in("The combination of egg donation and surrogacy has enabled gay men , including singer Elton John "
                   "and his partner , to have biological children .")
    assert not any(q.startswith("What has") for q in qs), qs
    assert "What did the company build in 2009?" in _asked_in("The company built a new factory in 2009.")


def test_a_task_heading_is_asked_with_the_american_verb():
    # the tagger lemmatises "Installing" to "instal": "How do I instal Node.js?"
    qs = _asked_in("Installing Node.js\nThe app uses Node.js as the server-side engine to run the code.")
    assert "How do I install Node.js?" in qs, qs


def test_tasks_coordinated_in_a_heading_are_asked_in_the_same_form():
    # "Viewing and downloading your invoice" gave "How do I view and downloading my invoice?"
    from agents.synth.offline.qgen import heading_questions
    body = "\nYou can view and download your invoice from the console by clicking Billing and usage."
    asked = {h: [q.question for q in heading_questions("Invoices are monthly." + f"\n{h}" + body)]
             for h in ("Viewing and downloading your invoice", "Creating and managing buckets",
                       "Installing and configuring the CLI", "Setting up logging and monitoring")}
    assert asked["Viewing and downloading your invoice"] == ["How do I view and download my invoice?"]
    assert asked["Creating and managing buckets"] == ["How do I create and manage buckets?"]      # "managing" tagged a noun
    assert asked["Installing and configuring the CLI"] == ["How do I install and configure the CLI?"]
    assert asked["Setting up logging and monitoring"] == ["How do I set up logging and monitoring?"]   # things, not tasks


def test_a_label_the_tagger_calls_a_person_is_asked_with_what():
    # "The status of the application shows Migrating" gave "Who does the status of the application show?"
    from agents.synth.offline.qgen import passage_questions
    qs = [q.question for q in passage_questions("The status of the application shows Migrating while the migration "
                                                "runs. Tom Hanks married Rita Wilson in 1988.", "")]
    assert "What does the status of the application show?" in qs, qs
    assert not any(q.startswith("Who does the status") for q in qs), qs
    assert "Who did Tom Hanks marry in 1988?" in qs or "Who did Tom Hanks marry?" in qs, qs


def test_a_label_is_no_subject():
    # "--output json : Optional: Prints ..." gave "What does Optional filter out?"
    qs = _asked_in("Optional filters out all logs from the container.\nThe optional field filters out all logs.")
    assert not any(q.startswith("What does Optional") or q.startswith("Does Optional") for q in qs), qs
    assert "What does the optional field filter out?" in qs, qs


def test_a_phrase_left_without_its_complement_at_the_end_is_dropped():
    # "... was produced by Reveille Productions ..., both in association with Universal Television" gave "Who
    # produced the ninth season of the show in association?"
    qs = _asked_in("The ninth season of the show was produced by Reveille Productions and Deedle - Dee Productions , "
                   "both in association with Universal Television .")
    assert not any(q.endswith("in association?") for q in qs), qs


def test_half_of_a_name_joined_by_a_dash_is_no_subject():
    # "The India -- Pakistan nuclear rivalry came to a head in 1998." gave "When did the India come to a head?"
    qs = _asked_in("The India -- Pakistan nuclear rivalry came to a head in 1998 .")
    assert not any("the India" in q for q in qs), qs


def test_a_heading_is_defined_only_by_a_section_about_it():
    # the page's title over a passage about something else gave "What is hot air balloon?" -> "In the United States, a
    # pilot of a hot air balloon must have a pilot certificate ..."
    from agents.synth.offline.qgen import np_heading_questions
    assert np_heading_questions(["Hot air balloon", "In the United States, a pilot of a hot air balloon must have a "
                                 "pilot certificate from the Federal Aviation Administration.", "x"]) == []
    assert np_heading_questions(["American popular music", "Rock has had a formative influence on popular music, as "
                                 "Charlie Gillett argued.", "x"]) == []
    got = np_heading_questions(["Bucket storage classes", "Bucket storage classes set the price of a bucket.", "x"])
    assert [q.question.lower() for q in got] == ["what are bucket storage classes?"]


def test_a_possessor_is_never_cut_from_the_name_it_starts():
    """"the Women's National Basketball Association" shortened at its "'s" became another league: "Have the Chicago
    Sky played in National Basketball Association since 2006?" was answered "Yes". A possessor stays whole with its
    noun, or the phrase is not asked about."""
    from agents.synth.offline.qgen import passage_questions
    sky = passage_questions("The Chicago Sky have played in the Women's National Basketball Association since 2006.",
                            "Chicago Sky")
    assert not any("National Basketball" in q.question and "Women's" not in q.question for q in sky)
    crew = [q.question for q in passage_questions("Big Mom's crew attacked the island of Wano in 1999.", "One Piece")]
    assert "When did Big Mom's crew attack the island of Wano?" in crew


def test_no_question_from_a_franchise_infobox_or_on_a_bare_quantifier():
    # a media franchise's infobox gave "Do theatrical presentations play Fast & Furious Live Audio Original music BT?"
    text = ("The Fast and the Furious Created by Gary Scott Thompson Original work The Fast and the Furious ( 2001 ) "
            "Owner Universal Pictures Films and television Film ( s ) The Fast and the Furious ( 2001 ) Short film ( s ) "
            "Los Bandoleros ( 2009 ) Theatrical presentations Play ( s ) Fast & Furious Live Audio Original music BT "
            "( The Fast and the Furious ) David Arnold ( 2 Fast 2 Furious ) Official website http://www.example.com/")
    assert _asked_in(text) == [], _asked_in(text)
    # "Some hunted dodos only for their gizzards" gave "Did some hunt dodos for their gizzards?": who, the sentence
    # before says
    qs = _asked_in("Some hunted dodos only for their gizzards, as this was considered the most delicious part of the "
                   "bird.")
    assert not any(q.split()[1:2] == ["some"] for q in qs), qs
    # a quantifier with its noun or its partitive says who
    assert any("some sailors" in q.lower() for q in _asked_in("Some sailors hunted dodos for their gizzards in 1598.")), \
        _asked_in("Some sailors hunted dodos for their gizzards in 1598.")
    # a quantifier cut from its set: "the flower of any of several trees" gave "Is it the flower of any?"
    qs = _asked_in("A cherry blossom is the flower of any of several trees of genus Prunus , particularly the Japanese "
                   "cherry .")
    assert not any(q.rstrip("?").endswith(" of any") for q in qs), qs


def test_no_question_from_a_gallery_of_captions():
    # "When does Marble Falls City Hall extend westward?" came from captions run into one sentence
    from agents.synth.offline.qgen import infobox, passage_questions
    captions = ("Marble Falls City Hall, 2011 Marble Falls Public Library, 2011 The Uptown Theater in downtown Marble "
                "Falls, 2011 Texas Ranch to Market Road 1431 in Marble Falls extends westward, 2011")
    assert infobox(captions)
    assert not any("extend" in qa.question for qa in passage_questions("Marble Falls\n" + captions, "Marble Falls"))
    prose = "The library opened in the city hall in 1998, 2004 The Uptown Theater reopened, and the road extends westward."
    assert not infobox(prose)


def test_a_kept_phrase_never_says_half_of_a_range_a_list_a_comparison_or_a_count():
    # "What does the Hudson Valley comprise from the cities of Albany?", "What do many universities offer after the
    # years?", "When did the yarn output ... decline from 419 million pounds?", "What do tidal waters influence from as
    # far north?": the phrase kept in the question had lost its other half
    texts = ["Many universities offer a B.Sc. degree after the first three or four years of study.",
             "The Hudson Valley comprises the valley of the Hudson River, from the cities of Albany and Troy southward "
             "to Yonkers in Westchester County.",
             "The yarn output of the handloom industry, for example, declined from 419 million pounds in 1850 down to "
             "240 million pounds in 1900.",
             "Tidal waters influence the Hudson River from as far north as Troy."]
    got = [qa.question for t in texts for qa in passage_questions(t, "")]
    for bad in ("after the years", "from the cities of Albany?", "decline from 419", "from as far north?"):
        assert not any(bad in q for q in got), (bad, got)
    assert "What does the Hudson Valley comprise?" in got and "What do tidal waters influence?" in got
    # a whole range, list or comparison stays
    got = [qa.question for qa in passage_questions("The population of the town grew from 2,000 to 5,000 after the "
                                                   "railway arrived in the valley in 1870.", "")]
    assert any("grow" in q for q in got), got


def test_no_aside_between_dashes_no_half_hyphenated_word_and_no_bare_noun_cut_from_its_of_phrase():
    # "Who takes the Heart of the Ocean out in her possession all along?", "Did winning 1972 TV movie depict the story
    # of the parents?", "What did Uzbeg raid in service?"
    got = [qa.question for t in (
        "Alone on the stern of Keldysh, Rose takes out the Heart of the Ocean -- in her possession all along -- and "
        "drops it into the sea over the wreck site.",
        "Bill Cosby's Emmy-winning 1972 TV movie, To All My Friends on Shore, depicted the story of the parents of a "
        "child suffering from sickle cell disease.",
        "The Mongols repeatedly raided Thrace in service of Bulgaria's war against Byzantium and Serbia.")
        for qa in passage_questions(t, "")]
    for bad in ("all along", "winning 1972", "in service"):
        assert not any(bad in q for q in got), (bad, got)
    assert "What does Rose take out?" in got and "What did the Mongols raid?" in got


def test_a_name_all_of_whose_words_are_capitalised_keeps_its_first_capital_at_a_sentence_start():
    # "Did one Piece make its U.S. premiere ...?", "What can natural Language Understanding analyze ...?"
    got = [qa.question for t in ("One Piece is a manga series. One Piece made its premiere in 2004.",
                                 "Natural Language Understanding can analyze the text in context.",
                                 "Three Japanese soldiers were killed in the attack in 1944.")
           for qa in passage_questions(t, "")]
    assert "Did One Piece make its premiere in 2004?" in got and \
        "What can Natural Language Understanding analyze?" in got, got
    assert "Were three Japanese soldiers killed in the attack in 1944?" in got, got   # a count stays lower case


def test_no_question_from_an_infinitive_fragment_a_misparsed_coordination_or_a_reason_without_its_clause():
    # "What to Virtual Network Functions support?", "What does the Fleiss Kappa score reach at 1 and worst value at
    # 0?", "Is one reason for cluster maintenance?" (Cloud passages)
    for text in ("Virtual Network Functions in combination with a Network Load Balancers to support a high "
                 "availability and scalability.",
                 "The Fleiss Kappa score reaches its best value at 1 and worst value at 0.",
                 "One reason that an agent might be paused is for cluster maintenance."):
        assert [qa.question for qa in passage_questions(text, "")] == [], text
    assert "What does the code create?" in [qa.question for qa in passage_questions(
        "The code creates a database for you with some indexes (by date and by tag) and some sample data.", "")]


def test_a_numbered_step_is_no_task():
    # "How do I step 3 in it?" from "If you already have an Cloud Functions instance, go to step 3."
    got = [qa.question for qa in passage_questions("If you already have an Cloud Functions instance, go to step 3. "
                                                   "Create a Namespace.", "")]
    assert not any("step 3" in q for q in got), got
    assert "How do I create a bucket?" in [qa.question for qa in passage_questions(
        "To create a bucket, click Create bucket in the console.", "")]


def test_the_pages_kind_named_by_its_title_is_the_page_in_a_question():
    # "Does the river flow through Brazil and Peru?" on the Amazon River page: the question neither said what it is
    # about nor gave a rewrite that does; the title's own head says what "the river" is
    from agents.synth.offline.qgen import page_subject
    amazon = "Amazon River\nIt is the largest river by discharge volume in the world. The river flows through Brazil."
    assert page_subject(amazon, "Amazon River") == ("the Amazon River", frozenset({"river"}))
    assert "Does the Amazon River flow through Brazil?" in [qa.question for qa in passage_questions(amazon,
                                                                                                     "Amazon River")]
    hd = "Huntington's disease\nThe disease is caused by a mutation in the HTT gene."
    assert "Is Huntington's disease caused by a mutation?" in [qa.question for qa in passage_questions(
        hd, "Huntington's disease")]
    # another river named in the passage makes "the river" ambiguous; a head never written in lower case is no kind
    napo = "Amazon River\nThe Napo River joins the Amazon. The river flows through Ecuador."
    assert page_subject(napo, "Amazon River") is None
    assert page_subject("North America\nThe continent is bordered by the Arctic Ocean.", "North America") is None


CHIPOTLE = ("Chipotle Mexican Grill\nChipotle Mexican Grill operates restaurants across the United States. "
            "The company serves approximately 750,000 customers per day.")


def _on_page(text: str, title: str) -> list[str]:
    return [qa.question for qa in passage_questions(text, title)]


def test_the_company_of_a_page_that_the_passage_does_not_define_is_the_page():
    # "How many customers does the company serve?" on the Chipotle page, asked after a turn about Jack in the Box,
    # was read as Jack in the Box's customers: a passage from the middle of a page calls its subject "the company"
    # without defining it, and the question must name it
    from agents.synth.offline.qgen import page_subject
    assert page_subject(CHIPOTLE, "Chipotle Mexican Grill") == ("Chipotle Mexican Grill", frozenset({"company"}))
    got = _on_page(CHIPOTLE, "Chipotle Mexican Grill")
    assert "How many customers does Chipotle Mexican Grill serve?" in got
    assert not any("the company" in q for q in got), got
    dubuque = ("Dubuque, Iowa\nSince its founding, Dubuque has had a strong religious tradition. The city also "
               "played a key role in the expansion of the Church.")
    assert "Did Dubuque play a key role?" in _on_page(dubuque, "Dubuque, Iowa")


def test_the_company_stays_where_the_page_is_no_named_thing_of_that_kind():
    q = "How many customers does the company serve?"
    # a page that is no name, and a one-word title that the text writes in lower case
    assert q in _on_page(CHIPOTLE.replace("Chipotle Mexican Grill", "History of McDonald's"), "History of McDonald's")
    assert q in _on_page("Restaurant\nA restaurant serves food. The company serves approximately 750,000 customers "
                       "per day.", "Restaurant")
    # another company the passage names: which one "the company" is, it does not settle
    assert q in _on_page(CHIPOTLE + " It bought shares of the Acme Company in 2001.", "Chipotle Mexican Grill")
    # a place's page: "the company" is some company there; a person's page: not the person
    michigan = "Michigan\nMany firms moved to Michigan in 1920. Detroit is in Michigan. " + CHIPOTLE.split("\n")[1]
    assert q in _on_page(michigan, "Michigan")
    jobs = ("Steve Jobs\nSteve Jobs founded Apple with Steve Wozniak in 1976. He left in 1985. "
            "The company serves approximately 750,000 customers per day.")
    assert q in _on_page(jobs, "Steve Jobs")


def test_a_names_article_that_belongs_to_the_longer_phrase_is_not_kept():
    # "Was it examined in the Red Hat OpenShift?": the parser split "the [Red Hat OpenShift on IBM Cloud] console",
    # and the cut phrase kept the console's "the"
    assert _on_page("The application was examined in the Red Hat OpenShift on IBM Cloud console.", "") == [
        "Was the application examined in Red Hat OpenShift?"]
    # a name's own article stays
    got = _on_page("The band played at the Royal Albert Hall in London in 1969.", "")
    assert "Did the band play at the Royal Albert Hall in 1969?" in got, got
    assert "Did the Beatles appear on the Ed Sullivan Show in 1964?" in _on_page(
        "The Beatles appeared on the Ed Sullivan Show in 1964.", "")


def test_a_proper_names_own_of_or_for_phrase_stays_with_it():
    # "When has it issued guidelines?" rewritten "... the American Society ..." (of the American Society for
    # Reproductive Medicine); "the Department of Health" of the Department of Health and Human Services
    assert _on_page("The American Society for Reproductive Medicine has issued guidelines for these procedures.",
                    "") == ["What has the American Society for Reproductive Medicine issued?"]
    got = _on_page("The Department of Health and Human Services issued the rules in 2001.", "")
    assert "When did the Department of Health and Human Services issue the rules?" in got, got
    assert not any("Department of Health issue" in q for q in got), got
    # a place after the name is no part of it
    assert "When was the Battle of Bull Run fought?" in _on_page("The Battle of Bull Run in Virginia was fought in "
                                                                 "1861.", "")


def test_a_title_cut_from_its_subtitle_is_no_subject():
    # "When was Fairy Tail released?" answered with the date of the sequel "Fairy Tail: Zeref Awakens"
    got = _on_page("Two sequels have been released. The second, Fairy Tail: Zeref Awakens, was released on March 22, "
                   "2012.", "")
    assert not any("Fairy Tail" in q for q in got), got


def test_a_common_noun_the_tagger_called_a_name_at_a_sentence_start_is_lower_case():
    # "What cells does Marrow contain?" on the page "Bone marrow", whose text writes "bone marrow"
    got = _on_page("At the cellular level, the main component of bone marrow includes the progenitor cells. Marrow "
                   "contains hematopoietic stem cells which give rise to blood cells.", "Bone marrow")
    assert "What cells does marrow contain?" in got, got
    assert "Did Apple release the iPhone in 2007?" in _on_page("Apple released the iPhone in 2007.", "Apple Inc.")


def test_a_second_verb_left_finite_after_do_support_is_malformed():
    assert well_formed("Did the company buy the factory and sold it?")
    assert well_formed("Does Tex reunite with his daughter and teams up with a team?")     # "teams" read as a noun
    assert well_formed("Does the river rise in the mountains and flows south?")
    assert well_formed("Did the company buy the factory and sell it?") is None
    assert well_formed("Did he meet the leaders and their teams?") is None
    assert well_formed("Did he visit the farm that grows rice and sells fruit?") is None     # a relative clause's verbs


def test_no_verb_as_a_subject_and_no_antecedent_that_needs_one():
    # "Did exemplifies write the special quality of her mind?"; "What does its rotation period present to the
    # planet?" ("it" resolved to the sentence before's subject, itself "its rotation period")
    got = [qa.question for qa in passage_questions(
        'In 1936 Allen Tate wrote, "(The poem) exemplifies better than anything else (Dickinson) wrote the special '
        'quality of her mind...', "")]
    assert not any("exemplifies" in q for q in got), got
    got = [qa.question for qa in passage_questions(
        "The Moon is in synchronous rotation. Its rotation period is the same as its orbital period. As a result, it "
        "always presents the same face to the planet.", "")]
    assert not any("its rotation period" in q.lower() for q in got), got


def test_a_name_whose_question_says_his_is_asked_with_he():
    # "Why has it contributed music to his films?" for Eastwood
    from agents.synth.offline.discourse import _pronoun_form
    qa = next(q for q in passage_questions("Clint Eastwood is an American actor. Eastwood has contributed music to his "
                                           "films since the 1980s.", "") if q.question.startswith("What has Eastwood"))
    assert _pronoun_form(qa) == "What has he contributed to his films since the 1980s"


def test_quotes_pair_left_to_right_when_detokenised():
    # a pattern between the closing quote of one phrase and the opening quote of the next glued them to the words
    # between ('"The One..."except ... finale"The Last One."'), and the parse then lost the "with" of "begin with"
    assert detokenize("Titles begin with `` The One ... '' except the finale `` The Last One . ''") == \
        'Titles begin with "The One..." except the finale "The Last One."'
    assert detokenize('He said " hello " to " me " .') == 'He said "hello" to "me".'
    assert detokenize('an odd " quote here') == 'an odd " quote here'


def test_no_question_keeps_a_measure_as_a_thing_or_a_phrase_without_its_bound_part():
    def qs(text):
        return [qa.question for qa in passage_questions(text, "")]
    # a measure is asked with "How many", not as the object of "What"
    got = qs("Rising in two branches, the Delaware River flows 419 miles (674 km) into Delaware Bay.")
    assert "How many miles does the Delaware River flow into Delaware Bay?" in got
    assert not any(q.startswith("What does the Delaware River flow") for q in got), got
    # a participle misparsed with a subject of its own: "a video game tie-in titled ..." read as "titled X"
    got = qs("Sega announced a video game tie - in titled Captain America : Super Soldier , that was released in 2011 .")
    assert not any("titled" in q for q in got), got
    # "in alliance (with France)" is half a phrase; the rest of the clause is asked without it
    got = qs("The Patriots defeated the British in the American Revolutionary War in alliance with France and others.")
    assert "Did the Patriots defeat the British in the American Revolutionary War?" in got
    assert not any("in alliance" in q for q in got), got
    # nor "from problems (with fecundity)"
    got = qs("Infertility rates have increased by 4% since the 1980s, mostly from problems with fecundity due to an "
             "increase in age.")
    assert not any(q.endswith("from problems?") for q in got), got
    # a rate without what it is a rate of
    got = qs("Elite athletes have a significantly higher rate in eating disorders.")
    assert not any(q.endswith("higher rate?") for q in got), got
    # nor a measure of a comparison: "How many kilometres can smaller riverboats reach higher?"
    got = qs("Smaller riverboats can reach 780 kilometres (480 mi) higher, as far as Achual Point.")
    assert not any(q.startswith(("How many", "What")) for q in got), got
    # a run of titles is no sentence: "Where is the Lamplighter My Bed a Boat?"
    assert qs("Poems include Auntie's Skirts The Land of Counterpane The Land of Nod My Shadow System A Good Boy Escape "
              "at Bedtime Marching Song The Cow Happy Thought and The Lamplighter.") == []
    # a stretch of time is asked with "How long", not as a thing
    got = qs("Feinman spent seven months on the project.")
    assert "How long did Feinman spend on the project?" in got and not any(q.startswith("What") for q in got), got


def test_a_file_names_dot_and_a_cut_possessor_survive():
    # "What do I do if I changed my.bashrc file ...?"; "Who keeps backend pool of worker nodes?" from "the listeners'
    # backend pool of worker nodes" (the possessor cut, no determiner left)
    assert detokenize("I changed my .bashrc file , and 1 , 000 items .") == "I changed my .bashrc file, and 1,000 items."
    got = [qa.question for qa in passage_questions(
        "Even though only the listener worker nodes are reported as healthy, the listeners' backend pool of worker "
        "nodes is kept up-to-date by Red Hat OpenShift on IBM Cloud so that all worker nodes in your cluster can still "
        "receive requests from the VPC load balancer.", "")]
    assert not any("backend pool" in q and "the backend pool" not in q and "listeners" not in q for q in got), got


def test_no_coordinated_clause_in_a_complement_and_no_other_script():
    # "Was it immediately popular and breeding continued?"; "What did poetic and informal names for the wall include
    # s 土 龙, Tǔlóng?"
    got = [qa.question for qa in passage_questions("The dog was immediately popular and breeding continued, using "
                                                   "Dalmatian to increase elegance.", "")]
    assert not any("breeding" in q for q in got), got
    assert "Was the dog immediately popular with breeders?" in [qa.question for qa in passage_questions(
        "The dog was immediately popular with breeders.", "")]
    assert well_formed("What did the names for the wall include in 土 龙?") == "words in another script"
    assert well_formed("What did the names for the wall include in Tǔlóng?") is None
    assert well_formed("Are broadly speaking, offensive linemen similar to backs?") == "an aside before the subject"
    assert well_formed("Does Paris, Texas have a tower?") is None


def test_no_wh_question_of_a_time_as_doer_and_a_hyphenated_name_keeps_its_capitals():
    # "How much did the following spring bring?" (a 55-cent promotion: an amount that describes, and a time as the
    # doer); "What did its five-Year Plans resemble ...?"
    def qs(text):
        return [qa.question for qa in passage_questions(text, "")]
    got = qs("The following spring brought a 55 - cent Big Mac promotion , which many customers rejected .")
    assert not any(q.startswith(("How much", "What")) for q in got), got
    assert not any(q.startswith("What") for q in qs("The 1990s saw a rise in diagnosis.")), qs("The 1990s saw a rise.")
    got = qs("Five - Year Plans of India resembled central planning in the Soviet Union .")
    assert "What did Five-Year Plans of India resemble in the Soviet Union?" in got, got
    assert "How much did Microsoft pay for the land?" in qs("Microsoft paid $6 million for the land.")
    assert not any(q.startswith("How much") for q in qs("The firm offered a 55-cent Big Mac promotion.")), \
        qs("The firm offered a 55-cent Big Mac promotion.")


def test_no_question_from_a_heading_and_no_count_of_a_ranked_phrase():
    # "Who version 4.10 CIS Kubernetes Benchmark?" (a link's label read as a sentence); "How many last results does
    # section return?"
    assert passage_questions("Red Hat OpenShift on IBM Cloud version 4.10 CIS Kubernetes Benchmark", "") == ()
    assert well_formed("Who version 4.10 CIS Kubernetes Benchmark?") is not None
    got = [qa.question for qa in passage_questions("If the offset is 8, the section returns the last two results.", "")]
    assert not any(q.startswith("How many") for q in got), got
    assert "How many watchtowers did the guards build along the wall?" in [
        qa.question for qa in passage_questions("The guards built 302 watchtowers along the wall.", "")]


def test_a_lower_case_word_the_tagger_calls_a_person_is_asked_with_what():
    # "Who has a unique ID?" - "Each dialog node" (spaCy: "node" PERSON)
    got = [qa.question for qa in passage_questions("A valid dialog always satisfies the following criteria. Each "
                                                   "dialog node has a unique ID (the dialog_node property).", "")]
    assert not any(q.startswith("Who") for q in got), got
    assert "Who founded Microsoft in 1975?" in [qa.question for qa in passage_questions(
        "Bill Gates founded Microsoft in 1975.", "")]


def test_no_question_of_a_relative_clauses_subject():
    # "Is use of which a specified fraction of the mean tropical year?"
    got = [qa.question for qa in passage_questions("The tropical year is defined by the mean sun, use of which is a "
                                                   "specified fraction of the mean tropical year.", "")]
    assert not any("which" in q for q in got) and got, got


def test_how_many_names_what_it_counts():
    # "How many did the government arrest?" (of "over 60,000 national and local Congress leaders")
    got = [qa.question for qa in passage_questions("The government immediately arrested over 60,000 national and "
                                                   "local Congress leaders in August 1942.", "")]
    assert not any(q.startswith("How many did") for q in got), got
    assert "When did the government arrest over 60,000 national and local Congress leaders?" in got


def test_a_place_without_its_of_phrase_is_half_said():
    # "What did Stalin leave in the hands?", then "Did Stalin leave most economic wartime management decisions?"
    got = [qa.question for qa in passage_questions(
        "While there is substantial debate whether Stalin helped or hindered these industrial and manpower efforts, "
        "Stalin left most economic wartime management decisions in the hands of his economic experts.", "")]
    assert not any("Stalin" in q for q in got), got
    assert "What did the army reach in December 1941?" in [qa.question for qa in passage_questions(
        "The army reached the outskirts of Moscow in December 1941.", "")]


def test_no_participle_left_as_a_noun():
    # "How many points are awarded to the opposing?" (of "the opposing (usually defending) team")
    got = [qa.question for qa in passage_questions(
        "The uncommon safety is scored if a player causes the ball to become dead in his own end zone; two points are "
        "awarded to the opposing (usually defending) team.", "")]
    assert not any(q.endswith("the opposing?") for q in got), got


def test_the_latter_points_into_the_passage():
    # "What does the latter contain?"
    assert not any("latter" in qa.question for qa in passage_questions(
        "Use either a view or a query. The latter contains a list of fields.", ""))


def test_a_persons_gender_is_unsure_where_the_pronouns_near_their_sentence_disagree():
    # "Does he compare Romeo and death?" for Juliet, in a passage that says "he" of Romeo and Capulet more often
    text = ("Capulet, when he first discovers the death, describes it as having deflowered his daughter. Romeo says he "
            "will die. Juliet later erotically compares Romeo and death. Right before her suicide, she grabs Romeo's "
            "dagger.")
    qa = next(q for q in passage_questions(text, "") if q.question == "Does Juliet compare Romeo and death?")
    assert qa.extra["gender"] == "they"         # unsure: "she" near her, "he" in the passage
    qa = next(q for q in passage_questions("Romeo Montague is a young man. Romeo Montague loves the daughter of "
                                           "Capulet, and he says so.", "") if q.topic_kind == "PERSON")
    assert qa.extra["gender"] == "he", qa


@pytest.mark.parametrize("sentence,asked,answer", [
    # a light verb says little of its object: the object's kind is asked, the words that tell which are the answer
    ("The 1 seed has home-field advantage throughout the playoffs.",
     "What advantage does the 1 seed have throughout the playoffs?", "home-field advantage"),
    ("Most modern photo booths use video or digital cameras.",
     "What cameras do most modern photo booths use?", "video or digital cameras"),
    ("IBM Cloudant Query uses the text type index.", "What index does IBM Cloudant Query use?",
     "the text type index"),
    ("The service uses a REST API for all requests.", "What API does the service use for all requests?",
     "a REST API"),                                                       # an acronym keeps its capitals
    ("The plan offers a predictable TCO with an all-inclusive flat monthly charge.", "What does the plan offer?",
     "a predictable TCO"),                                                # a quality, not a kind
    # nothing beyond the noun (the answer would be itself), a degree (not a kind), an idiom: the bare "What"
    ("The USAF also used the aircraft for long-range weather reconnaissance.", "What did the USAF use?",
     "the aircraft"),
    ("Some answers have low confidence and are unlikely to be correct.", "What do some answers have?",
     "low confidence"),
    ("Development teams take greater ownership of security in the development cycle.",
     "What do development teams take?", "greater ownership of security"),
])
def test_an_object_of_a_light_verb_is_asked_by_its_kind(sentence, asked, answer):
    qs = {qa.question: qa for qa in passage_questions(sentence)}
    assert asked in qs and qs[asked].answer == answer and qs[asked].qtype == "what"


def test_a_bare_what_of_a_light_verb_ranks_below_the_sentences_other_questions():
    qs = passage_questions("Technically, the Jewish wedding process has two distinct stages.")
    by = {qa.question: qa.score for qa in qs}
    # a count is asked as one ("How many"); "What does it have?" says nothing of what is asked
    assert by["What does the Jewish wedding process have?"] < by["How many distinct stages does the Jewish wedding "
                                                                  "process have?"]
    assert by["What does the Jewish wedding process have?"] < 0.9


@pytest.mark.parametrize("sentence,not_asked", [
    ("Balloons commonly had a crew of two, equipped with parachutes.", "What crew"),          # a count
    ("Photo booths traditionally contain a seat or bench.", "What seat"),                      # two things
    ("However, the surrounding mountains on all sides provide plenty of runoff.", "What plenty"),   # an amount
    ("Different historians had several different dates.", "What dates"),                      # how many, not which
])
def test_an_object_of_a_light_verb_that_is_no_kind_keeps_the_bare_what(sentence, not_asked):
    assert not any(qa.question.startswith(not_asked) for qa in passage_questions(sentence))


def test_no_yes_no_question_ends_in_a_noun_that_says_nothing_alone():
    qs = [qa.question for qa in passage_questions(
        "Potential difficulties with primary sources have the result that history is usually taught in schools "
        "using secondary sources.")]
    assert not any(q.endswith("the result?") for q in qs), qs


def test_a_demonstrative_that_stands_for_things_points_into_the_passage():
    from agents.synth.offline.qgen import points_into_the_passage
    assert points_into_the_passage("Did people connect these together?")
    assert points_into_the_passage("Are those the largest lakes?")
    assert not points_into_the_passage("Did people connect the cameras together?")


@pytest.mark.parametrize("sentence,bad", [
    # a year the parser hung on the subject when the sentence left out its comma
    ("In 1992 Reserve Bank of India issued a 1 rupee commemorative coin to mark the Golden Jubilee.", "1992"),
    # a specificational copula: the indefinite subject is what is said of the definite predicate
    ("A subject of research is the formation of the Moon, some 4.53 Bya.", "Is a subject of research"),
    # a quantifier that says how much is known is no subject to ask about
    ("Little is known of family structure among the Celts.", "little"),
    # "the result" of what, the sentence before says
    ("Due to the colonial policies of the British, the result was a significant transfer of capital from India to "
     "England.", "the result"),
    # "ones" stands for a noun said before
    ("The principal ones include the Ottawa River and the Saint Lawrence River.", "ones"),
    # "its" of a plural subject is something else the passage named
    ("Leaders of the Indian independence movement have blamed colonial rule in its aftermath.", "its aftermath"),
])
def test_no_question_from_a_subject_or_complement_that_points_into_the_passage(sentence, bad):
    qs = [qa.question for qa in passage_questions(sentence)]
    assert not any(bad.lower() in q.lower() for q in qs), qs


def test_a_surname_the_passage_gives_a_person_is_a_person():
    text = ("Franklin D. Roosevelt was the Assistant Secretary of the Navy. After Pearl Harbor, Roosevelt rejected "
            "the possibility of major war jobs for any of these men.")
    qs = {qa.question: qa for qa in passage_questions(text)}
    asked = [qa for q, qa in qs.items() if q.startswith("Did Roosevelt reject")]
    assert asked and all(qa.topic_kind == "PERSON" for qa in asked), [(q, qa.topic_kind) for q, qa in qs.items()]


def test_a_verb_whose_lemma_lost_its_silent_e_is_asked_by_its_base():
    from agents.synth.offline.nlp import _fix_lemma
    asked = _asked("Rebecca Jane Stokes of Den of Geek rated the episode four stars out of five.")
    assert asked and not any(" rat?" in q or " rat " in q for q in asked), asked
    assert any(" rate " in q or q.endswith(" rate?") for q in asked), asked
    assert [_fix_lemma(f, lem) for f, lem in (("hoped", "hop"), ("taping", "tap"), ("planned", "plan"),
                                              ("opened", "open"), ("fixed", "fix"), ("rained", "rain"))] == [
        "hope", "tape", "plan", "open", "fix", "rain"]


def test_a_title_with_and_is_one_thing_when_its_verb_says_so():
    qs = {qa.question: qa for qa in passage_questions(
        "Romeo and Juliet is not considered to be exceedingly psychologically complex. Of Shakespeare's works, "
        "Romeo and Juliet has generated the most -- and the most varied -- adaptations.")}
    asked = qs.get("Is Romeo and Juliet considered to be exceedingly psychologically complex?")
    assert asked is not None and asked.topic_kind == "SING", list(qs)
    assert not any(q.endswith("the most?") for q in qs), list(qs)       # the most what, the aside cut off
    # without a verb that shows its number, a coordination is still two things
    qs = {qa.question: qa for qa in passage_questions("Wellington and Forsythia killed Florence for revenge.")}
    assert all(qa.topic_kind == "PLUR" for qa in qs.values() if qa.topic == "Wellington and Forsythia"), list(qs)


@pytest.mark.parametrize("sentence,bad", [
    ("The Seljuq Turks made their first explorations across the Byzantine frontier into Armenia in 1065 and 1067 . "
     "The emergency lent weight to the military aristocracy in Anatolia , who in 1068 secured the election of one of "
     "their own , Romanos Diogenes , as emperor .", "What did the emergency lend"),                # an idiom
    ("Some scholars employ the idea that identity is fluid and constructed.", "the idea?"),   # the idea that ...
    ("A major.minor update moves up the Kubernetes version of the worker node to the same version as the master.",
     "the same version?"),                                                                   # the same as what
])
def test_no_question_on_an_idiom_object_or_a_noun_cut_from_what_completes_it(sentence, bad):
    qs = [qa.question for qa in passage_questions(sentence)]
    assert not any(bad in q for q in qs), qs


@pytest.mark.parametrize("text,bad", [
    # a name read as the verb
    ("In this case that means using the identity you registered to be the admin of org1, and giving this identity "
     "the name Org1 MSP Admin.", "Org1?"),
    # one end of a range goes with the answer
    ("The Columbia River drops 2,690 feet (820 m) from source to mouth, while the Snake drops over 8,500 feet (2,600 m) "
     "in elevation over a length more than 200 miles (320 km) shorter.", "to mouth?"),
    ("A user or third-party application can change the retention period from indefinite to finite retention that uses "
     "an SDK or REST API.", "from indefinite?"),
    # a noun phrase the passage writes with "the" is no task
    ("If you adjudicate a document, promote the annotations to ground truth. The annotations override the ground "
     "truth established before.", "How do I ground truth?"),
])
def test_no_question_with_a_name_for_a_verb_half_a_range_or_a_noun_for_a_task(text, bad):
    qs = [qa.question for qa in passage_questions(text)]
    assert not any(q.endswith(bad) for q in qs), qs


def test_a_hyphenated_verb_is_not_cut_and_a_copula_read_with_two_predicates_agrees_with_the_first():
    assert not any("ordinate" in qa.question for qa in passage_questions(
        "The Joint United Nations Programme on HIV/AIDS co-ordinates the global response."))
    assert well_formed("Are the future therapeutic potential of experiments a valuable tool?") == \
        "subject-verb agreement ('Are' with 'potential')"
    for ok in ("Are Poe Dameron and Kylo Ren playable add-on characters?", "Are there any other types of photography?",
               "Were the eastern Mediterranean provinces more urbanised than the western?"):
        assert well_formed(ok) is None, ok
