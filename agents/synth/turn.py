"""The turn's bookkeeping nodes (no LLM): evidence selection at the start of each attempt,
the next attempt after a rejection, and the turn record (accepted or failed) at the end."""
from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter

from agents.synth.state import (THREAD_LOOKS, ConvState, GraphContext, in_second_topic, sample_id, seeded_rng,
                                segment_ok_turns)
from agents.synth.text import content_words, jaccard, page_name, phrase_pattern, words  # noqa: F401 (page_name re-exported)
from agents.synth.uniqueness import search


async def select(ctx: GraphContext, state: ConvState) -> dict:
    """``shown_passages`` from the conversation's current cluster pool: on a follow-up, the
    ``focus_passages`` closest to the previous turn's gold (:func:`focus_passages`; with
    ``focus_page``, the other passages of its page count too) and ``focus_related`` passages of other pages
    that name the previous gold's page (:func:`related_passages`), the rest a seeded random sample of the
    pool; the order shuffled (seeded), so a position says nothing. An attempt after a selection miss (the
    questioner's ``NothingToAsk`` or ``NoThread``: ``empty_attempts``, ``thread_looks``) is shown the next-nearest
    passages and related ones instead (``skip``); once the ``THREAD_LOOKS`` looks are spent, the nearest again. A
    look after ``NoThread`` is also shown ``thread_passages`` passages the corpus search finds for the segment's
    last question (:func:`thread_passages`)."""
    pool = state["switch_pool"] if in_second_topic(state) else state["pool"]
    rng = seeded_rng(state["seed"], state["conv_id"], state["turn"], state.get("attempt", 0))
    n = min(ctx.cfg.shown_passages, len(pool))
    pages = getattr(ctx, "pages", None) if ctx.cfg.focus_page else None
    # once the looks are spent, the follow-up asked in full is asked of the nearest passages (the article it is on)
    looks = state.get("thread_looks", 0)
    misses = state.get("empty_attempts", 0) + (looks if looks < THREAD_LOOKS else 0)
    focus = focus_passages(ctx.corpus, state, pool, min(ctx.cfg.focus_passages, n), pages,
                           getattr(ctx, "views", None), skip=misses)
    if focus and ctx.cfg.focus_related and len(focus) < n and getattr(ctx, "search", None) is not None:
        name = subject_name(ctx.corpus, focus[0])
        hits = await _related_hits(ctx, name)
        focus += related_passages(ctx.corpus, state, focus, hits, min(ctx.cfg.focus_related, n - len(focus)),
                                  skip=misses, name=name)
    if focus and 0 < looks <= THREAD_LOOKS and ctx.cfg.thread_passages and len(focus) < n \
            and getattr(ctx, "search", None) is not None:
        asked = last_standalone(state)
        hits = await _related_hits(ctx, asked) if asked else []
        focus += thread_passages(state, focus, hits, min(ctx.cfg.thread_passages, n - len(focus)), skip=looks - 1)
    chosen = set(focus)
    rest = [d for d in pool if d not in chosen]
    shown = focus + rng.sample(rest, n - len(focus))
    if focus:
        rng.shuffle(shown)
    return {"shown": shown, "cand": None, "answer": None, "extra": [], "turn_error": None}


def page_key(doc: dict) -> str | None:
    """The page a passage belongs to: its title (case-folded) when it has one, else its source
    document (``doc_id``: the chunks of one document); ``None`` for neither."""
    title = (doc.get("title") or "").strip().lower()
    if title:
        return "t:" + title
    return "d:" + doc["doc_id"] if doc.get("doc_id") else None


def once_per_corpus(build):
    """``build(corpus)`` computed once per corpus object (the synthesis batches of a process share one
    corpus, :func:`agents.synth.run.load_corpus`); the latest corpus only is kept."""
    memo: list = []

    @functools.wraps(build)
    def get(corpus: dict[str, dict]):
        if not (memo and memo[0] is corpus):
            memo[:] = [corpus, build(corpus)]
        return memo[1]
    return get


@once_per_corpus
def page_index(corpus: dict[str, dict]) -> dict[str, tuple[str, ...]]:
    """page_key -> the corpus passages of that page (sorted ids), for pages of 2+ passages only;
    computed once per corpus object (:func:`once_per_corpus`)."""
    by: dict[str, list[str]] = {}
    for cid, doc in corpus.items():
        k = page_key(doc)
        if k is not None:
            by.setdefault(k, []).append(cid)
    return {k: tuple(sorted(v)) for k, v in by.items() if len(v) > 1}


IDF_SAMPLE = 100_000        # passages whose words estimate the document frequencies
IDF_MIN = 3.0               # only words at least this rare are kept (df below ~5% of the passages)


@once_per_corpus
def word_idf(corpus: dict[str, dict]) -> dict[str, float]:
    """word -> ln(N / df) over the corpus passages (title and text; :func:`~agents.synth.text.words`),
    for the words with an idf of at least ``IDF_MIN`` only (commoner words cost a follow-up
    nothing). Above ``IDF_SAMPLE`` passages, every k-th passage of the sorted ids estimates it.
    Computed once per corpus object (:func:`once_per_corpus`)."""
    ids = sorted(corpus)
    ids = ids[::max(1, -(-len(ids) // IDF_SAMPLE))]
    df: Counter = Counter()
    for cid in ids:
        doc = corpus[cid]
        df.update(set(words(f"{doc.get('title') or ''} {doc['text']}")))
    n = max(len(ids), 1)
    return {w: round(v, 3) for w, c in df.items() if (v := math.log(n / c)) >= IDF_MIN}


_VIEW_CACHE_MAX = 200_000


def focus_passages(corpus: dict[str, dict], state: ConvState, pool: list[str], k: int,
                   pages: dict[str, tuple[str, ...]] | None = None,
                   cache: dict[str, frozenset[str]] | None = None, skip: int = 0) -> list[str]:
    """On a follow-up turn (not the first, not the switch turn): the previous accepted turn's gold
    passage of this segment and the ``k - 1`` passages closest to it (same title first, then the
    content-word Jaccard of title and opening text; ties by doc_id) among the pool and, given
    ``pages`` (:func:`page_index`), the other passages of the gold's page anywhere in the corpus: a
    person reading an article asks the next question of the same article even where the cluster
    holds only one of its passages. Empty otherwise. ``cache`` keeps each passage's content words
    (title and opening) between calls. ``skip``: the turn's selection misses so far (attempts whose passages
    had nothing to ask, or nothing that leans on the conversation): the nearest passages after the first
    ``skip * (k - 1)`` are taken, from the start again past the end, so another look sees other neighbours
    of the previous gold."""
    if k <= 0:
        return []
    st = state.get("switch_turn")
    if state["turn"] == 1 or (st is not None and state["turn"] == st):
        return []
    members = set(pool)
    prev = None
    for t in reversed(segment_ok_turns(state)):
        prev = next((g for g in t.get("gold_doc_ids") or [] if g in members or (pages and g in corpus)), None)
        if prev is not None:
            break
    if prev is None:
        return []
    ref = corpus[prev]

    cache = {} if cache is None else cache
    if len(cache) > _VIEW_CACHE_MAX:
        cache.clear()           # bounded on a long run over a large corpus

    def view(d: str) -> frozenset[str]:
        if d not in cache:
            c = corpus[d]
            cache[d] = frozenset(content_words(f"{c.get('title') or ''} {c['text'][:400]}"))
        return cache[d]

    ref_view, ref_title = view(prev), (ref.get("title") or "").strip().lower()
    cands = members | set((pages or {}).get(page_key(ref) or "", ()))
    near = sorted((d for d in cands if d != prev),
                  key=lambda d: (-(bool(ref_title) and (corpus[d].get("title") or "").strip().lower() == ref_title),
                                 -jaccard(ref_view, view(d)), d))
    return [prev, *_window(near, k - 1, skip)]


def _window(items: list[str], k: int, skip: int) -> list[str]:
    """The ``skip``-th run of ``k`` items of ``items`` (a look after ``skip`` selection misses), wrapping round
    past the end; the first ``k`` for ``skip`` 0."""
    start = skip * k % len(items) if items and skip else 0
    return (items[start:] + items[:start])[:k]


RELATED_DEPTH = 30          # corpus search hits read for passages that name the page
_RELATED_CACHE_MAX = 50_000


async def _related_hits(ctx: GraphContext, name: str) -> list[str]:
    """The corpus search's top ``RELATED_DEPTH`` for a page name (the uniqueness check's search, off the event
    loop on a large corpus), kept per name in ``ctx.related``: every turn of a conversation on that page asks it."""
    if len(name) < 3:
        return []
    cache = ctx.related
    if name not in cache:
        if len(cache) > _RELATED_CACHE_MAX:
            cache.clear()
        cache[name] = await search(ctx, name, RELATED_DEPTH)
    return cache[name]


def subject_name(corpus: dict[str, dict], doc_id: str) -> str:
    """What a passage is about, as its text names it: its page's name (:func:`page_name` of the title), or for a
    passage without a title (a forum answer, a ticket) its most salient concept (the offline concepts stage,
    weighted against the corpus: :func:`word_idf`). "" for neither."""
    doc = corpus[doc_id]
    name = page_name(doc.get("title") or "")
    if name:
        return name
    from agents.synth.offline.concepts import top     # costly: spaCy, only for untitled passages
    c = top(doc["text"], "", word_idf(corpus))
    return c.text if c is not None else ""


def related_passages(corpus: dict[str, dict], state: ConvState, focus: list[str], hits: list[str], k: int,
                     skip: int = 0, name: str | None = None) -> list[str]:
    """Up to ``k`` passages of *other* pages that name the page of the previous gold (``focus[0]``) in their text,
    taken in the order of ``hits`` (the corpus search for that name): what a reader turns to next without leaving
    the subject (from "Berlin Wall" to a passage of "History of Germany" about the wall). ``name``: the subject's
    name (:func:`subject_name`, computed when not given), so an untitled passage relates through its main concept
    (from a forum answer on "credit card debt" to others that name it). A passage already gold
    in the conversation, or already a focus passage, is not taken; none for a passage with no name. A one-word
    name that is a name, not a common noun, is matched with its capital ("Friends" the series, not "friends").
    ``skip`` (the turn's selection misses, :func:`focus_passages`): the first ``skip * k`` such passages are
    passed over, from the start again when fewer are found."""
    ref = corpus[focus[0]]
    name = subject_name(corpus, focus[0]) if name is None else name
    if len(name) < 3 or k <= 0:
        return []
    used = used_gold(state)
    key = page_key(ref)
    # a one-word name is matched as the title writes it ("Friends", not "friends") unless the page's own
    # passage writes it in lower case (a common noun: "Virus" / "a virus")
    one = len(name.split()) == 1
    common = one and phrase_pattern([name.lower()], 0).search(ref["text"]) is not None
    pat = phrase_pattern(name.split(), re.IGNORECASE if not one or common else 0)
    out: list[str] = []
    for d in hits:
        doc = corpus.get(d)
        if doc is None or d in used or d in focus or page_key(doc) == key or not pat.search(doc["text"]):
            continue
        out.append(d)
        if len(out) >= k * (skip + 1):
            break
    return _window(out, k, skip)


def used_gold(state: ConvState) -> set[str]:
    """The passages already gold in the conversation (either segment)."""
    return {g for t in state.get("turns", []) for g in t.get("gold_doc_ids") or []}


def last_standalone(state: ConvState) -> str:
    """The standalone question of the segment's last accepted turn ("" for none)."""
    turns = segment_ok_turns(state)
    return (turns[-1].get("standalone_question") or "") if turns else ""


def thread_passages(state: ConvState, focus: list[str], hits: list[str], k: int, skip: int = 0) -> list[str]:
    """Up to ``k`` (``thread_passages``) passages the corpus search finds for the segment's last question
    (``hits``), shown after a look whose passages had nothing that leans on the conversation (``NoThread``): the
    passages that say more of what was just asked, where a person's next question about it is answered ("How much
    does it cost?" after "What is the annual fee?" is answered on the pricing page, which the article's neighbours
    may not be). A passage already gold in the conversation or shown as a focus passage is not taken; ``skip``: the
    looks before this one (each sees the next ``k``)."""
    used = used_gold(state)
    out = [d for d in hits if d not in used and d not in focus]
    return _window(out, k, skip) if out and k > 0 else []


def next_attempt(state: ConvState) -> dict:
    return {"attempt": state.get("attempt", 0) + 1}


async def commit(state: ConvState) -> dict:
    """Record the turn (``ok`` with its question, answer and positives, or ``failed`` with the
    reason and a failures row) and reset the per-turn scratch for the next turn."""
    turn = state["turn"]
    st = state.get("switch_turn")
    usage = state.get("turn_usage") or {}
    base = {"sample_id": sample_id(state), "conv_id": state["conv_id"], "turn": turn,
            "is_switch": st is not None and turn == st,
            "turns_since_switch": (turn - st) if st is not None and turn >= st else None,
            "cluster_id": state["switch_cluster_id"] if in_second_topic(state) else state["cluster_id"],
            "topic_id": state["switch_topic_id"] if in_second_topic(state) else state["topic_id"],
            "prompt_tokens": usage.get("prompt_tokens", 0), "completion_tokens": usage.get("completion_tokens", 0),
            "prompt_versions": json.dumps(usage.get("prompt_versions", {}), sort_keys=True),
            "backend": usage.get("backend"), "model": json.dumps(usage.get("models", {}), sort_keys=True)
            if usage.get("models") else None,
            "verifier_attempts": state.get("attempt", 0) + 1}
    failures = list(state.get("failures", []))
    cand = state.get("cand")
    err = state.get("turn_error")
    if err is not None or cand is None or state.get("answer") is None:
        reason = (f"{err['step']}: {err['kind']}: {err['message']}" if err else
                  f"no accepted question after {state.get('attempt', 0) + 1} attempts; last: {state.get('feedback')}")
        rec = {**base, "status": "failed", "question": None, "question_original": None, "standalone_question": None,
               "answer": None, "gold_doc_ids": [], "extra_positives": [], "answerability": None,
               "failure_reason": reason}
        # the last rejection's agent: the quality gate's reasons start "gate:" (agents.synth.gate)
        rejected_by = "gate" if (state.get("feedback") or "").startswith("gate:") else "verifier"
        failures.append({"sample_id": base["sample_id"], "conv_id": state["conv_id"], "turn": turn,
                         "step": err["step"] if err else rejected_by, "kind": err["kind"] if err else "rejected",
                         "message": reason, "raw_output": (err or {}).get("raw_output")})
    else:
        gold = [] if cand["unanswerable"] else [cand["gold"], *cand.get("also_gold", [])]
        lost = cand.get("uniqueness_lost") or []
        for f in lost:              # kept under uniqueness_partial_failure = flag: each lost judgement is a row
            failures.append({"sample_id": base["sample_id"], "conv_id": state["conv_id"], "turn": turn, **f})
        rec = {**base, "status": "ok", "uniqueness_judged": cand.get("uniqueness_judged"),
               "uniqueness_failed": cand.get("uniqueness_failed"),
               "flags": "uniqueness_incomplete" if lost else None, "question": cand.get("humanized", cand["question"]),
               "question_original": cand["question"], "standalone_question": cand["standalone_question"],
               "answer": state["answer"], "gold_doc_ids": gold, "extra_positives": state.get("extra", []),
               "answerability": "UNANSWERABLE" if cand["unanswerable"] else "ANSWERABLE",
               "failure_reason": None, "humanize_note": cand.get("humanize_note")}
    turns = [*state.get("turns", []), rec]
    nxt = turn + 1
    return {"turns": turns, "failures": failures, "turn": nxt, "attempt": 0, "empty_attempts": 0, "thread_looks": 0,
            "feedback": None, "cand": None, "answer": None, "extra": [], "turn_usage": {}, "turn_error": None,
            "done": nxt > state["n_turns"]}
