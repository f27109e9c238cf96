"""The offline questioner: over-generate questions from the shown passages, rank them, and ask
the chosen one the way a person continues a conversation.

Ranking (higher first): the generator's slot score; +1 for a passage not used as gold before or, on a
follow-up, of the previous turn's page (its passage again, or the same title);
for a follow-up, +2.5 when the candidate's topic is the segment's focus (or a topic of the
last answer), +1.5 when its passage is about the segment's context although the question does
not name it (:func:`~agents.synth.offline.discourse.context_phrase`) or when it names a phrase
the segment mentioned, so conversations stay on their subject and can refer back to it; for an opening
question, +0.3 when it has a topic to come back to and ``OPENER_NAMES_BONUS`` when it names its passage's subject
(:func:`names_subject`: people open with what they ask about, and the follow-ups can then leave it implicit); a small
preference for early sentences (central content) and 7-12 word questions; and a cost for each word
that is rare in the corpus (idf above 4, :func:`agents.synth.turn.word_idf`) and that no earlier turn said, nor, on an
opening question, the name of its passage's subject (``rare_weight`` per idf unit above 4: people ask in the
conversation's words, the name of what they ask about and common words, so a question copied from its passage with
the passage's rare words is not one of theirs: the MTRAG ClapNQ openers have 0.55 words rare in the corpus, the
offline ones had 1.6-1.7 without the cost on openers and 1.2 with it). The head of the ranking is
rendered as follow-ups (below); one that could only be asked in full (no pronoun, shorter name, ellipsis or implicit
context applies) loses ``EXPLICIT_PENALTY`` points against those that lean on the conversation, and one that leans
gains for needing the conversation to be found (``x["need"]``, :class:`agents.synth.questioner.HistoryNeed`: the
corpus search finds its passage through the standalone form, not through the words asked), and a yes/no one
that does not need it (found as well as asked, or asked in full) loses ``YESNO_ALONE_COST``: a yes/no question
restates its sentence's clause, so its own words find its passage (72 of the 95 leaning yes/no follow-ups of a
ClapNQ run at rank 1), while people's yes/no follow-ups need the conversation most (MTRAG ClapNQ BM25 nDCG@5 0.15
as asked, 0.27 rewritten); one asked in full
leaves out a name the conversation gave where it modifies a phrase (:func:`~agents.synth.offline.discourse.elide_given`:
"the process" for "the Jewish wedding process"). Dropped: questions
that repeat an earlier one (content-word Jaccard >= 0.5 with any earlier standalone or asked
question) and questions whose answer span an earlier answer already gave.
Follow-ups go through the discourse forms (:func:`~agents.synth.offline.discourse.render`);
one asked inside the segment's context that no form applies to refers to the context with a
pronoun where people would (:func:`_context_pronoun`: "How do I delete a bucket in it?" for a task in a
product, "What did the army capture during it?" for an event or a period, "What does its web chat integration
undergo?" for a part of it named with a modifier) or leaves it implicit, by the
shares (the ellipsis share leaves it implicit; the pronoun and short shares refer to it); the standalone form names it ("... in IBM Cloud Object Storage?", "... during World War II?").
When none of the rendered head of a follow-up leans on the conversation, the questioner first looks at other
passages (:class:`~agents.synth.questioner.NoThread`, up to ``THREAD_LOOKS`` selections a turn, using up no attempt;
each look is shown the previous gold's next-nearest passages, :func:`agents.synth.turn.select`)
and asks in full only after that: people's follow-ups stay on the thread (5 of the 68 MTRAG ClapNQ follow-ups that
move to another article are asked in full; the offline ones were asked in full in 38% of the ClapNQ follow-ups that
are no switch, people in 17%). The ``attempt``-th best is asked (a rejected attempt moves to the next). On an extra attempt (``x["extra_attempt"]``:
past ``max_attempts``, the earlier ones had nothing to ask, ``synth.empty_attempts_extra``) only a follow-up that leans
on the conversation and that the corpus search needs the conversation to find is taken; with none the attempt fails. A follow-up never asks of a passage of
another page that is about something else than the previous turn's (:func:`_unrelated`: people move on to a related
article, not to whatever else the cluster holds); when the shown passages hold nothing else, the attempt fails
(:class:`~agents.synth.questioner.NothingToAsk`) and the next one is shown other passages.

Unanswerable turns: a real, well-formed candidate about the segment's topic with its asked-for
slot shifted (``When was X built?`` -> ``Who designed ...`` is not invented: the same clause is
asked with another wh-word: ``Where was X built?``, ``Why was X built?``, ``How many ...``)
where no shown passage fills the new slot; the corpus search of the uniqueness check then
confirms that no passage anywhere does. Only an adjunct slot (when/where/why/how) is shifted; an
object question gets its answer back as the object first (``What did Octavian take from
Lepidus?`` -> ``Why did Octavian take Africa from Lepidus?``), a subject question goes through the
passive (``Who built X?`` -> ``When was X built?``), and a slot the clause already names is not
asked (no ``When was X founded in 1785?``). A follow-up is asked the way the answerable ones are (a pronoun, a shorter
name, the segment's context left implicit, never a request), and of the first ``UNANSWERABLE_RENDERED`` candidates
those that lean on the conversation come first: people ask what the passages do not say in the same words as what
they do (before, 9 of 51 ClapNQ and 6 of 42 Cloud unanswerable follow-ups leaned on the conversation; then 29 of 52
and 12 of 42).
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from agents.synth.offline import compare
from agents.synth.offline.answer_types import REQUEST
from agents.synth.offline.answering import _request_subject
from agents.synth.offline.discourse import (DiscourseShares, context_candidates, context_phrase, context_preposition,
                                            coreferable, elide_given, full_name, history_mentions, history_text,
                                            main_name, misrefers, norm_np,
                                            mentions_history, render, said_in_conversation, segment_topics, title_name,
                                            with_context)
from agents.synth.offline.matching import new_filler, support, windows
from agents.synth.offline.nlp import clean_passage, detokenize, parse
from agents.synth.offline.qgen import QA, _verb_past, as_written, finish, passage_questions, well_formed
from agents.synth.prompt_parts import seed_int
from agents.synth.questioner import NoThread, NothingToAsk
from agents.synth.state import THREAD_LOOKS
from agents.synth.text import content_words, jaccard_words, words


def _cands(text: str, title: str) -> tuple[QA, ...]:
    return passage_questions(text, title)


def _unit(*parts) -> float:
    return seed_int(*parts) / float(1 << 32)


def _repeats(q: str, earlier: list[str]) -> bool:
    """Near-duplicate of an earlier question: content-word Jaccard >= 0.5, or the same content
    words once a follow-up's context is added (``... in <focus>``)."""
    return any(jaccard_words(q, e) >= 0.5 for e in earlier)


def _given(answer: str, history_answers: list[str]) -> bool:
    a = " ".join(words(answer))
    return bool(a) and len(a) > 3 and any(f" {a} " in f" {' '.join(words(h))} " for h in history_answers)


def _said(question: str, history_answers: list[str]) -> bool:
    """An earlier answer already says what a yes/no question checks: every content word of the
    question is in that answer, in any inflection ("Can the Developers deliver incremental updates to their
    users?" after "Incremental updates. The Developers can deliver incremental updates ..."; "Did Feinman spend
    seven months on the project?" after "Feinman. Feinman spent seven months on the project ...")."""
    cw = set(content_words(question))
    if not cw:
        return False
    lemmas = {t.lemma_.lower() for t in parse(question) if t.lower_ in cw and t.pos_ != "AUX"
              and t.lemma_ not in ("do", "be", "have")}     # "Did" asks, it says nothing
    return any(cw <= set(words(h)) or lemmas <= _lemmas(h[:1500]) for h in history_answers)


@lru_cache(maxsize=512)
def _lemmas(text: str) -> frozenset[str]:
    """Lower-cased lemmas of ``text`` (an earlier answer, checked against every yes/no candidate of a turn)."""
    return frozenset(t.lemma_.lower() for t in parse(text))


def ask(x: dict) -> tuple[int, str, str, list[int]]:
    """(1-based doc index (0 = none), question as asked, standalone question, 1-based indexes of
    the further passages a comparison question needs (empty otherwise))."""
    passages = x["passages"]
    if x.get("unanswerable"):
        return (*_unanswerable(x), [])
    used = set(x.get("used_gold") or [])
    segment = [] if x.get("standalone") else list(x.get("segment") or [])
    earlier = list(x.get("previous_standalone") or []) + list(x.get("previous_questions") or [])
    given = [t.get("answer") or "" for t in x.get("segment") or []]
    topics = segment_topics(segment) if segment else []
    mentions = history_mentions(segment) if segment else []
    contexts = context_candidates(segment) if segment else []
    last = segment[-1] if segment else {}
    shares = DiscourseShares(**(x.get("discourse") or {}))
    rare = _rare_cost(x)
    need = x.get("need")
    # a follow-up may check a fact with a yes/no question ("Does it replicate data across zones?") with the
    # configured share (seeded like the forms); a conversation opens with a wh-question
    yesno_ok = bool(segment) and _unit("yesno", *(p["doc_id"] for p in passages), len(earlier)) < shares.yesno
    scored = []
    subjects = [] if segment else [subject_names(p) for p in passages]
    subject_words = [{w for name in names for w in name} for names in subjects]
    unrelated = _unrelated(passages, segment)
    for i, p in enumerate(passages):
        if i in unrelated:
            continue        # a follow-up does not jump to a passage about something else (:func:`_unrelated`)
        # the previous turn's passage or another passage of its page/article: a follow-up that stays there
        # keeps the conversation's subject (people ask several questions of one page)
        same_page = bool(segment) and ((p.get("title") or "") == last.get("title") != ""
                                       or p["text"] == last.get("gold_text"))
        for qa in _cands(p["text"], p.get("title") or ""):
            if any(jaccard_words(qa.question, e) >= 0.5 for e in earlier) or _given(qa.answer, given) \
                    or (qa.qtype == "yesno" and (not yesno_ok or _said(qa.question, given))):
                continue
            s = qa.score + (1.0 if p["doc_id"] not in used or same_page else 0.0)
            if segment:
                rank = coreferable(qa, topics)
                if rank is not None and misrefers(qa, topics[rank], p["text"]):
                    rank = None                      # "the river" of another river than the conversation's
                if rank is not None:
                    s += 2.5 - 0.1 * rank            # stay on the segment's focus
                else:
                    if mentions_history(qa.question, mentions):
                        s += 1.5                     # names something the segment mentioned
                    if context_phrase(qa.question, p, contexts):
                        s += 1.2                     # asked inside the segment's context
            else:
                if qa.template:
                    s += 0.3                     # an opening question with a topic to come back to
                if names_subject(qa.question, subjects[i]):
                    s += OPENER_NAMES_BONUS      # an opening question says what it is about
                elif vague(qa.question):
                    s -= VAGUE_OPENER_COST       # and names something: "What does the law require?" opens nothing
            if rare is not None:
                # words the asker would not have; an opener's asker has the subject's name (what they ask about)
                s -= rare(qa.question, () if segment else subject_words[i])
            n = len(qa.question.split())
            s -= 0.02 * qa.sent_index + (0.05 * (7 - n) if n < 7 else 0.04 * max(0, n - 12))
            scored.append((-round(s, 6), i, qa.sent_index, qa.question, qa))
    if not any(e.startswith(compare.OPENING) for e in earlier):     # one comparison per conversation
        for i, j, qa in compare.candidates(passages):      # (the pair is new: no earlier comparison)
            s = qa.score + (1.0 if {passages[i]["doc_id"], passages[j]["doc_id"]} - used else 0.0)
            if segment:
                if coreferable(qa.extra["x"], topics) is None:
                    continue                         # in a segment, only the focus is compared with something new
                s += 2.5
            scored.append((-round(s - 0.02 * qa.sent_index, 6), i, qa.sent_index, qa.question,
                           replace(qa, extra={**qa.extra, "other": j})))
    scored.sort(key=lambda r: r[:4])
    # near-duplicates by meaning, checked lazily on the head of the ranking only
    head: list[tuple[float, int, QA, tuple[str, str, bool]]] = []
    for neg, i, _, _, qa in scored:
        if qa.qtype != "compare" and _repeats(qa.question, earlier):
            continue
        rendered = _follow_up(qa, i, passages, segment, topics, contexts, shares, earlier) if segment \
            else (qa.question, qa.question, True)
        # a follow-up that leans on the conversation (a pronoun, a shorter name, ellipsis, an implicit
        # context) ranks above one that could only be asked in full, as people's follow-ups do
        if segment and x.get("extra_attempt") and not rendered[2]:
            continue        # an extra attempt (the first ones had nothing to ask) looks for the thread, and a
                            # question asked in full of whatever other passage it is shown is a jump, not a follow-up
        cost = (0.0 if rendered[2] else EXPLICIT_PENALTY) \
            + (UNINTRODUCED_COST if segment and unintroduced(qa, rendered[1], segment) else 0.0)
        head.append((-neg - cost, i, qa, rendered))
        if len(head) >= HEAD + x.get("attempt", 0):
            break
    if need and segment and x.get("extra_attempt"):
        # an extra attempt takes only a follow-up that needs the conversation to be found: the turns it adds are
        # conversational ones, not whatever the rest of an exhausted pool still holds
        head = [h for h in head if h[2].qtype != "compare"
                and need(passages[h[1]]["doc_id"], h[3][0], h[3][1]) > 0]
    if need and segment:
        # and one the corpus search finds only with the conversation above one its own words find
        # (``x["need"]``: :func:`agents.synth.questioner.history_need`)
        head = _with_need(head, need, passages, x.get("attempt", 0))
    if segment and head and not x.get("extra_attempt") and x.get("thread_looks", 0) < THREAD_LOOKS \
            and not any(h[3][2] for h in head):
        raise NoThread(f"no follow-up in the shown passages leans on the conversation (look {x.get('thread_looks', 0) + 1}"
                       f" of {THREAD_LOOKS} at other passages before one is asked in full)")
    if x.get("attempt", 0) >= len(head):
        if segment and x.get("extra_attempt"):
            raise NothingToAsk("no follow-up that leans on the conversation in the shown passages (an extra attempt "
                               "takes no question asked in full)")
        return (*_fallback(x, unrelated), [])
    head.sort(key=lambda r: -r[0])      # stable: ties keep the ranking's order
    _, i, qa, (asked, standalone, _) = head[x.get("attempt", 0)]
    others = [qa.extra["other"] + 1] if qa.qtype == "compare" else []
    return i + 1, asked, standalone, others


def _with_need(head: list, need, passages: list[dict], attempt: int) -> list:
    """The head's scores with each follow-up's history need added (``need.weight`` at most either way), and
    ``YESNO_ALONE_COST`` taken from a yes/no follow-up whose need is 0 or below (its own words, its sentence's clause
    restated, find its passage as well: it checks nothing the conversation says), searched best first and only while
    a candidate could still reach the ``attempt``-th place: one whose score plus the largest need is below the
    ``attempt``-th best so far keeps its score (it cannot be picked either way; the scores so far are final)."""
    out = list(head)
    done: list[float] = []
    for j in sorted(range(len(head)), key=lambda j: -head[j][0]):
        s, i, qa, r = head[j]
        if len(done) > attempt and s + need.weight < sorted(done, reverse=True)[attempt]:
            continue
        if qa.qtype != "compare":
            gain = need(passages[i]["doc_id"], r[0], r[1])
            s += gain - (YESNO_ALONE_COST if qa.qtype == "yesno" and gain <= 0 else 0.0)
        out[j] = (s, i, qa, r)
        done.append(s)
    return out


def _unrelated(passages: list[dict], segment: list[dict]) -> set[int]:
    """Indexes of the shown passages that are about something else than the previous turn's: another page, and a
    MiniLM cosine below ``UNRELATED_COSINE`` with the previous turn's gold passage. People move on to a related
    article: of the MTRAG ClapNQ follow-ups that change page, 9% have a passage below 0.2 with the previous
    one; the offline questioner without this rule 33% (whatever else the cluster held), with it 25%."""
    # the last turn of the segment that has a passage (an unanswerable turn has none: the one before it counts)
    prev = next((t for t in reversed(segment) if t.get("gold_text")), {})
    text = prev.get("gold_text") or ""
    if not text:
        return set()
    from agents.synth.offline.semantic import embed_many
    title = (prev.get("title") or "").strip().lower()
    todo = [i for i, p in enumerate(passages)
            if p["text"] != text and not (title and (p.get("title") or "").strip().lower() == title)]
    if not todo:
        return set()
    ref, *vecs = embed_many([text] + [passages[i]["text"] for i in todo])
    return {i for i, v in zip(todo, vecs) if float(v @ ref) < UNRELATED_COSINE}


UNRELATED_COSINE = 0.2       # below this MiniLM cosine with the previous turn's passage, a passage is unrelated
OPENER_NAMES_BONUS = 1.0     # ranking points: an opening question that names its passage's subject
VAGUE_OPENER_COST = 1.0      # ranking points: an opening question that names nothing at all (:func:`vague`)
UNINTRODUCED_COST = 1.0     # ranking points: a follow-up about "the N" that nothing in the conversation introduced
EXPLICIT_PENALTY = 2.0      # ranking points: a follow-up asked in full that has no dependent form
YESNO_ALONE_COST = 3.0      # ranking points: a yes/no follow-up whose own words find its passage as well as its rewrite
HEAD = 12                   # candidates rendered per turn (the head of the ranking)


def _follow_up(qa: QA, i: int, passages: list[dict], segment: list[dict], topics: list[str], contexts: list[str],
               shares: DiscourseShares, earlier: list[str]) -> tuple[str, str, bool]:
    """(question as asked, standalone question, leans on the conversation or is asked in full by the
    shares' choice) of candidate ``qa`` of passage ``i`` as a follow-up of ``segment``."""
    u = _unit("discourse", *(p["doc_id"] for p in passages), len(earlier), qa.question)
    talk = shares.pronoun + shares.short + shares.ellipsis
    if qa.qtype == "compare":
        # about the segment's focus: "How is it different from Y?" by the shares, else explicit
        asked = compare.follow_up(qa) if coreferable(qa.extra["x"], topics) is not None and u < talk \
            and said_in_conversation(qa.extra["x"].topic or "", segment) else None
        return asked or qa.question, qa.question, bool(asked) or u >= talk
    rank = coreferable(qa, topics)
    ctx = context_phrase(qa.question, passages[i], contexts, history_text(segment)) \
        if rank is None and not _defines_a_name(qa.question) else ""
    if ctx and norm_np(ctx) in norm_np(qa.answer or ""):
        ctx = ""        # the context is what the question asks for: "What did the new states join?" - "the United
                        # Nations" gave the rewrite "What did the new states join in the United Nations?"
    standalone = with_context(qa.question, ctx) if ctx else qa.question
    if well_formed(standalone) is not None:
        standalone = qa.question
    if not ctx:
        # "Is the river named after Henry Hudson?" is no standalone question where the conversation is about the
        # Hudson River: the rewrite names it
        standalone = full_name(qa, topics, passages[i]["text"], history_text(segment)) or standalone
    if rank is not None and misrefers(qa, topics[rank], passages[i]["text"]):
        return qa.question, standalone, False       # asked in full: "it" would be the conversation's river
    asked, form = render(qa, segment, shares, u)
    if form == "explicit" and standalone != qa.question:
        # the context is left implicit (the ellipsis share), referred to with a pronoun ("... in it?", "its web chat
        # integration") by the pronoun share and by the short one (a context has no shorter name: the forms' order
        # falls back to the pronoun, as :func:`render` does), left implicit where no pronoun reads right, else asked
        # explicitly
        request = _request(qa, ctx, earlier) if _unit("request", qa.question, len(earlier)) < shares.request else None
        if request:
            return request[0], request[1], True
        pro = _context_pronoun(qa.question, ctx) if shares.ellipsis <= u < talk \
            and said_in_conversation(ctx, segment) else None
        if pro and well_formed(pro, followup=True) is None:
            asked = pro
        elif u < talk:
            asked = qa.question
        else:
            asked = standalone
    if asked == standalone and u < talk:
        # asked in full: a name the conversation gave, left out of the phrase it modifies ("the process")
        asked = elide_given(standalone, topics + [c for c in contexts if c not in topics]) or asked
    return asked, standalone, asked != standalone or u >= talk


def unintroduced(qa: QA, standalone: str, segment: list[dict]) -> bool:
    """A follow-up about "the <noun>" that the conversation never introduced and its standalone form does not say
    either (no context, no name): "Does the operation cause an overflow?", "Was the switch on 12 am?" - the user has
    heard of no operation, no switch, and "the" says they have. Nouns the segment's questions or answers said
    (singular or plural) are introduced: "the command" after a command was named."""
    m = re.fullmatch(r"the ([a-z]+)", (qa.topic or "").strip())
    if not m or standalone != qa.question or not vague(qa.question):
        return False
    noun = m.group(1)
    said = {w for t in segment for w in words(f"{t.get('question') or ''} {t.get('standalone_question') or ''} "
                                             f"{t.get('answer') or ''}")}
    stem = noun[:-1] if noun.endswith("s") and len(noun) > 3 else noun
    return not ({noun, stem, stem + "s", stem + "es"} & said)


_NOT_A_TOPIC = {"this", "that", "these", "those", "it", "they", "some", "many", "most", "several", "other", "others",
                "such", "each", "all", "both", "any", "another", "one"}


def _request(qa: QA, ctx: str, earlier: list[str]) -> tuple[str, str] | None:
    """(asked, standalone): the candidate's subject asked about as an elliptical request inside the segment's
    context, the way people move on to something new of what they are discussing: "What about the halftime
    show?" or "And the halftime show?", rewritten "What can you tell me about the halftime show in Super Bowl
    XXVII?"; the answer is what the passage says about it (:func:`agents.synth.offline.answering.answer`). None
    when the subject is no phrase of its own (a pronoun, a quantifier) or too vague to ask about alone (one common
    noun: "the wave", "the provider"; a name or two content words are needed), the request repeats an earlier
    one, or a form is not well formed."""
    topic = qa.topic.strip()
    ws = topic.split()
    if not ws:
        return None
    content = [w for w in ws if len(w) >= 4 and w.lower() not in ("the", "a", "an")]
    named = any(w[:1].isupper() for w in ws[1:]) or (ws[0][:1].isupper() and ws[0].lower() not in ("the", "a", "an"))
    if len(ws) > 6 or ws[0].lower() in _NOT_A_TOPIC or not (named or len(content) >= 2) \
            or not re.fullmatch(r"[\w'’ .&-]+", topic) or qa.qtype in ("define", "yesno", "compare") \
            or jaccard_words(topic, ctx) >= 0.5:
        return None
    asked = finish(f"What about {topic}" if len(ws) < 3 or seed_int("request", qa.question) % 2 else f"And {topic}")
    standalone = with_context(f"{REQUEST} {topic}", ctx)
    if well_formed(asked, followup=True) is not None or well_formed(standalone) is not None \
            or any(_request_subject(e) == _request_subject(standalone) for e in earlier):
        return None         # (a request about the same subject was made already)
    return asked, standalone


RARE_IDF = 4.0     # idf above which a word new to the conversation costs a follow-up (df below ~2%)


def _rare_cost(x: dict):
    """question -> ranking points it loses for the rare words it brings into the conversation: the
    questioner's ``rare_weight`` per idf unit above ``RARE_IDF`` of each word of the question
    that is rare in the corpus (``x["rare"]``: word -> idf) and that no earlier turn the asker
    saw (questions and answers) contains. People's follow-ups reuse the conversation's words and
    common ones; a question copied from the passage names what only the passage says, so it
    finds its passage without the history. None when there is nothing to weigh."""
    rare, weight = x.get("rare") or {}, float(x.get("rare_weight") or 0.0)
    if not rare or weight <= 0:
        return None
    said = {w for _role, text in x.get("history") or [] for w in words(text)}

    def cost(question: str, known=()) -> float:
        return weight * sum(max(0.0, rare.get(w, 0.0) - RARE_IDF) for w in set(words(question))
                            if w not in said and w not in known)
    return cost


def subject_names(passage: dict) -> list[list[str]]:
    """What the passage is about, as the content words of each name: its page title as a thing to ask about
    (:func:`~agents.synth.offline.discourse.title_name`: "Great Wall of China", "the cherry blossom") and its most
    frequent name (:func:`~agents.synth.offline.discourse.main_name`: "IBM Cloudant")."""
    from common.text import synthesis_stopwords
    sw = synthesis_stopwords()
    out = []
    for name in (title_name(passage.get("title") or ""), main_name(passage["text"])):
        ws = [w for w in words(name) if len(w) >= 3 and w not in sw]
        if ws and ws not in out:
            out.append(ws)
    return out


def names_subject(question: str, names: list[list[str]]) -> bool:
    """The question names (at least half the content words of) one of ``names`` (:func:`subject_names`):
    people open a conversation with a question that says what it is about ("When was the Great Wall of China
    built?"), not with "When were the gates opened?"; the follow-ups can then leave it implicit."""
    qw = set(words(question))
    return any(2 * sum(w in qw for w in ws) >= len(ws) for ws in names)


_UNNAMING = {"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"}


def vague(question: str) -> bool:
    """The question names nothing: no proper noun, no named entity past its first word other than a date or a number,
    and no noun compound ("What does the law require?", "How many plays were directed?", "What do the families of
    individuals have?"; not "What does the dialog skill orchestrate?", a manual's thing, nor a task: "How do I lock
    secrets?"). People open a conversation with what they ask about; a follow-up may be vague, the conversation says
    what it is about."""
    if question.startswith("How do I "):
        return False        # a task says what it is about: "How do I create a lock on the current secret version?"
    doc = parse(question)
    return not any(t.i > 0 and (t.pos_ == "PROPN" or (t.ent_type_ and t.ent_type_ not in _UNNAMING)
                                or (t.dep_ == "compound" and t.pos_ == "NOUN")) for t in doc)


_PRONOUNS = {"it", "its", "they", "their", "them", "he", "his", "she", "her"}


def _may_add_it(question: str) -> bool:
    """"... in it?" reads naturally only on a short question with no pronoun and no other
    ``in``/``for`` phrase ("Where did X live until its fall in it?" does not)."""
    ws = [w.lower().strip("?,") for w in question.split()]
    if _defines_a_name(question):
        return False        # "What is the Columbia River in it?": a named thing is not defined "in it"
    return len(ws) <= 10 and not ({"in", "for"} | _PRONOUNS) & set(ws)


_PROCEDURE = re.compile(r"^(?:how (?:do|can|should|would|could) (?:i|we|you)|(?:can|do|should|may|could) (?:i|we)|"
                        r"what happens (?:when|if)|where (?:do|can) (?:i|we)|how to)\b", re.IGNORECASE)


def _context_pronoun(question: str, ctx: str) -> str | None:
    """``question`` with the context ``ctx`` it leaves implicit referred to by a pronoun, where that reads
    as people say it: "during it" for an event or a period ("How many Congress leaders did the government
    arrest during it?"), "in it" for a task done in a product or place ("How do I publish my bot in it?"),
    "its" for a part of it named with a modifier (:func:`_context_possessive`: "Who watched its retrospective
    episode?"); None otherwise ("What did the production star in it?", "Who watched the episode in it?" read
    wrong: those are asked with the context left implicit)."""
    if context_preposition(question, ctx) == "during":
        return finish(f"{question.rstrip('?')} during it") if _may_add_it(question) else None
    if _PROCEDURE.match(question):
        return with_context(question, "it") if _may_add_it(question) else None
    return _context_possessive(question, ctx)


# modifiers after which "its" does not replace "the": "the same X", "the best way", "the rest"
_NO_POSSESSIVE = {"same", "other", "following", "next", "former", "latter", "rest", "only", "most", "least", "whole"}


def _context_possessive(question: str, ctx: str) -> str | None:
    """``question`` with the context ``ctx`` it leaves implicit referred to by a possessive, the way people
    ask about a part of what they are discussing: "When were its first trees planted?" (the cherry blossom),
    "What does its web chat integration undergo?" (in Watson Assistant), "Who watched its retrospective episode?"
    (in Friends):
    the first subject or object ``the M N`` (a modifier and a common-noun head, no word of the context's own)
    of a wh-question becomes ``its M N`` (``their`` for a common plural context). None for a definition
    ("What is the bucket?" is not "What is its bucket?"), a superlative or "the same"/"the other" phrase, a
    person or coordinated context, an event or a period (:func:`_context_pronoun` says "during it")."""
    if not re.match(r"^(?:what|who|whom|which|when|where|why|how)\b", question, re.IGNORECASE) \
            or re.search(r"\b(?:and|or|&)\b", ctx) or _defines_a_name(question) \
            or _PRONOUNS & {w.lower().strip("?,") for w in question.split()}:
        return None
    cdoc = parse(ctx)
    if not len(cdoc) or any(e.label_ in ("PERSON", "NORP") for e in cdoc.ents):
        return None
    croot = cdoc[:].root
    poss = "their" if croot.tag_ == "NNS" and croot.text.islower() else "its"
    doc = parse(question)
    for chunk in doc.noun_chunks:
        root = chunk.root
        if chunk[0].lower_ != "the" or chunk.start == 0 or root.tag_ not in ("NN", "NNS") \
                or root.dep_ not in ("nsubj", "nsubjpass", "dobj", "pobj") \
                or (root.dep_ == "pobj" and root.head.lower_ != "of"):
            continue
        if len(chunk) < 3 or chunk[1].lower_ in _NO_POSSESSIVE \
                or any(t.tag_ in ("JJS", "RBS", "POS") for t in chunk) \
                or (chunk.end < len(doc) and doc[chunk.end].lower_ in ("of", "and", "or", "'s", "’s")):
            # "the best way", "the same plan", "the version of the API", "the user and the administrator": no
            # "its"; nor a bare "the state" (Oklahoma is the state: "How many farms did its state have?"), "the
            # film" (Madagascar), "the heat" (of a guinea pig): only a part named with a modifier is its part
            # ("its error event", "its web chat integration", "its first trees")
            return None
        if {t.lemma_.lower() for t in chunk[1:]} & {t.lemma_.lower() for t in cdoc if not t.is_stop} \
                or (chunk.end >= len(doc) - 1 and any(t.lemma_ == "be" and t.i < chunk.start for t in doc)):
            return None       # "the river water" of the Hudson River; "What is the bucket?" defines it
        return finish(f"{doc[:chunk.start].text} {poss} {doc[chunk.start + 1:].text}")
    return None


def _defines_a_name(question: str) -> bool:
    """"What/Who is <a name>?": a named thing is defined without a context ("What is the Stanley
    Cup in Montreal HC?" and "What is the Columbia River in it?" read wrong)."""
    raw = question.split()
    return bool(re.match(r"^(what|who) (is|are|was|were) ", question.lower())) and \
        any(w[:1].isupper() for w in raw[2:])


def _fallback(x: dict, unrelated: set[int] = frozenset()) -> tuple[int, str, str]:
    """No candidate left: a definitional question about a shown passage's subject that the passage answers. The
    first unused passage that defines its page's subject ("The Stanley Cup is the championship trophy ...") comes
    first, then one whose opening sentence is about it ("The Dasht-e Kavir's climate is arid ...") or a passage
    named by its own heading. With none the attempt fails explicitly
    (:class:`~agents.synth.questioner.NothingToAsk`: the next attempt shows other passages, and a turn
    that never finds one records why) rather than ask what the passage does not answer: "What is World
    War I?" was asked of a passage about observation balloons, "What is the history of the Roman Empire?" of one
    about Vespasian's provinces, and a generic "What else should I know about this topic?" was sometimes
    accepted."""
    passages = x["passages"]
    used = set(x.get("used_gold") or [])
    best: tuple[int, int, str] | None = None
    for i, p in enumerate(passages):
        if p["doc_id"] in used or i in unrelated:      # (nor does it jump to an unrelated passage)
            continue
        title = title_name((p.get("title") or "").strip())
        rank = _about(title, p["text"]) if title else None
        if not title:
            name = main_name(p["text"])
            if not name:        # the passage's first line when it is a short heading
                first = clean_passage(p["text"]).split("\n")[0].strip()
                name = first if 2 <= len(first.split()) <= 6 and not first.endswith((".", "?", ":")) \
                    and title_name(first) else ""       # (no "What is List of Marvel Cinematic Universe films?")
            title, rank = name, (1 if name else None)
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, i, as_written(title, p["text"]))      # "What is the Great Wall of China?"
    q = finish(f"What is {best[2]}") if best and len(best[2].split()) <= 6 else ""
    if not q or well_formed(q) is not None:
        raise NothingToAsk("no question left in the shown passages: every candidate repeats an earlier turn, was "
                         "rejected, or no passage defines its subject")
    return best[1] + 1, q, q


def _about(name: str, text: str) -> int | None:
    """0 when the passage's first sentence defines ``name`` ("The Stanley Cup (French: ...) is the championship
    trophy ..."), 1 when it opens with it ("The Dasht-e Kavir's climate is arid ..."), None otherwise."""
    lines = text.strip().split("\n", 1)
    if len(lines) > 1 and jaccard_words(lines[0], name) >= 0.5:
        text = lines[1]         # the page's title line
    body = detokenize(clean_passage(text))
    first = re.split(r"(?<=[.!?])\s+", body.strip(), maxsplit=1)[0]
    n = re.escape(re.sub(r"^the\s+", "", name, flags=re.IGNORECASE))
    if re.match(rf"(?:the\s+)?{n}\b(?:\s*\([^)]*\))?(?:\s*,[^,]{{1,80}},)?\s+(?:is|was|are|were|refers)\b", first,
                re.IGNORECASE):
        return 0
    if re.match(rf"(?:the\s+)?{n}(?:'s|’s)?\b", first, re.IGNORECASE):
        return 1
    return None


_SHIFT = {"when": ["Where", "Why", "How"], "where": ["When", "Why"], "who": ["When", "Where", "Why"],
          "what": ["When", "Where", "Why"], "how_many": ["When", "Where", "Why"], "how_much": ["When", "Why"],
          "why": ["When", "Where"], "how": ["When", "Where"]}
_STATIVE = {"have", "contain", "include", "comprise", "consist", "require", "account", "represent", "mean", "involve",
            "feature", "follow", "constitute", "resemble", "belong", "equal", "lack", "need", "own", "possess", "remain",
            "enable", "allow", "number", "total", "measure", "weigh", "cost", "span", "cover", "list"}
_TYPE_OF = {"When": "when", "Where": "where", "Why": "why", "How": "how"}
_ADJUNCT = {"when", "where", "why", "how"}      # wh-phrases that are no argument of the verb: another one fits


def _with_object(qa: QA) -> str | None:
    """The clause of an object question with its answer put back as the object, right after the
    verb: ``What did {T} take from Lepidus`` + "Africa" -> ``did {T} take Africa from Lepidus``;
    None when the question is not ``What/Who <do|have|modal> {T} <verb> ...``, the topic is not the
    subject, or the answer is no short noun phrase."""
    m = re.match(r"^(?:What|Who) (do|does|did|has|have|had|can|could|will|would|may|might|should) \{T\} (\w+)(.*)$",
                 qa.template)
    ans = re.sub(r"[.;:,!?]+$", "", (qa.answer or "").strip())
    if not m or qa.topic_role != "subj" or not ans or not 1 <= len(ans.split()) <= 6 or re.search(r"[.;:!?()]", ans):
        return None
    if norm_np(ans) == norm_np(qa.topic):
        return None       # the subject again: "Why does the IBM Cloud Pak support the IBM Cloud Pak?"
    doc = parse(ans)
    if not any(t.pos_ in ("NOUN", "PROPN") for t in doc) or doc[0].pos_ in ("VERB", "AUX", "ADP", "SCONJ"):
        return None
    if doc[0].pos_ != "PROPN" and not (len(doc[0].text) > 1 and doc[0].text.isupper()) \
            and not re.search(rf"\w[\s,;]+{re.escape(doc[0].text)}\b", qa.sentence or ""):
        ans = ans[:1].lower() + ans[1:]           # "The beginning" -> "the beginning"; names keep their case, and so
                                                  # does a word the sentence capitalises mid-sentence ("Florence")
    aux, verb, rest = m.groups()
    return f"{aux} {{T}} {verb} {ans}{rest}"


def _named_slots(clause: str) -> set[str]:
    """The wh-words whose slot ``clause`` already fills: ``When`` for a date or year, ``Where`` for
    a place (spaCy entities)."""
    out = set()
    ents = {e.label_ for e in parse(clause).ents}
    if "DATE" in ents or "TIME" in ents or re.search(r"\b(1[0-9]{3}|20[0-9]{2})\b", clause):
        out.add("When")
    if ents & {"GPE", "LOC", "FAC"}:
        out.add("Where")
    return out


def _unanswerable(x: dict) -> tuple[int, str, str]:
    passages = x["passages"]
    segment = list(x.get("segment") or [])
    topics = segment_topics(segment) if segment else []
    earlier = list(x.get("previous_standalone") or []) + list(x.get("previous_questions") or [])
    opts = []
    for p in passages:
        for qa in _cands(p["text"], p.get("title") or ""):
            if not qa.template or qa.qtype not in _SHIFT or (qa.verb or "").lower() in _STATIVE:
                continue        # a state has no time, place or reason of its own to ask: "When does the yellow marrow
                                # have fatty connective tissue?", "Why does the industry include its growing car?"
            body = re.sub(r"^(When|Where|Who|What|Why|How many \w+|How much|How)\s+", "", qa.template)
            m = re.match(r"^(?:Who|What) (\w+) \{T\}$", qa.template)
            passive = bool(m and qa.topic_role == "obj" and qa.verb and m.group(1) == _verb_past(qa.verb))
            if passive:
                # "Who built {T}" -> "When/Where/Why was {T} built"
                be = "were" if qa.topic_kind == "PLUR" else "was"
                body = f"{be} {{T}} {_verb_past(qa.verb)}"
            elif qa.qtype not in _ADJUNCT:
                # the wh-phrase was the verb's object: it goes back in as the answer the passage gives
                # ("What did X confirm?" -> "When did X confirm the merger?"), or the clause is not shifted
                # ("When did X confirm?" would lack the object)
                body = _with_object(qa)
                if body is None:
                    continue
            if body == qa.template or "{T}" not in body or re.fullmatch(r"(?:is|are|was|were) \{T\}", body):
                continue          # (no "When is North America's only land connection?" from a definition)
            if qa.qtype in ("who", "what") and body.startswith(("{T}",)):
                continue
            if not re.match(r"^(is|are|was|were|do|does|did|has|have|had|can|will)\b", body):
                continue          # an inverted clause is needed to ask another slot
            rank = coreferable(qa, topics) if topics else None
            named = _named_slots(body.replace("{T}", qa.topic))
            for wh in _SHIFT[qa.qtype]:
                if wh in named:
                    continue      # "When was X founded in 1785?": the clause already names the slot
                q = finish(f"{wh} {body}".replace("{T}", qa.topic))
                if well_formed(q) is not None or any(jaccard_words(q, e) >= 0.5 for e in earlier):
                    continue
                qtype = _TYPE_OF[wh]
                filled = any(support(q, w) >= 0.6 and new_filler(qtype, w, q) for pp in passages
                             for w in windows(pp["text"]))
                if filled:
                    continue
                opts.append((0 if rank is not None else 1, -qa.score, qa.sent_index, q,
                             replace(qa, question=q, template=f"{wh} {body}", qtype=qtype), passages.index(p)))
    if not opts:
        # no real clause to shift: fail the attempt explicitly rather than ask a generic question
        raise NothingToAsk("no candidate for an unanswerable question in the shown passages")
    opts.sort(key=lambda o: o[:4])
    follow = segment and not x.get("standalone")
    ordered: list[tuple] = [(o, None) for o in opts]
    if follow:
        # asked the way the answerable follow-ups are (a pronoun, a shorter name, the segment's context left
        # implicit: "When does it enter a fjord?"), never as a request ("What about X?" would ask what the passage
        # does say); of the first candidates, those that lean on the conversation first
        shares = replace(DiscourseShares(**(x.get("discourse") or {})), request=0.0)
        contexts = context_candidates(segment)
        head_r = [(o, _follow_up(o[4], o[5], passages, segment, topics, contexts, shares, earlier))
                  for o in opts[:UNANSWERABLE_RENDERED]]
        head_r.sort(key=lambda r: r[1][0] == r[1][1])       # stable: leaning first, then the ranking's order
        ordered = head_r + ordered[UNANSWERABLE_RENDERED:]
    k = min(x.get("attempt", 0), len(ordered) - 1)
    head = ordered[: max(1, min(len(ordered), 4))]
    pick, rendered = head[(seed_int(*(p["doc_id"] for p in passages)) + k) % len(head)] if k < len(head) \
        else ordered[k]
    if rendered is not None:
        return 0, rendered[0], rendered[1]
    if follow:
        shares = DiscourseShares(**(x.get("discourse") or {}))
        asked, _ = render(pick[4], segment, shares, _unit("discourse", *(p["doc_id"] for p in passages), pick[3]))
        return 0, asked, pick[3]
    return 0, pick[3], pick[3]


UNANSWERABLE_RENDERED = 8      # unanswerable candidates rendered as follow-ups (the head of their ranking)
