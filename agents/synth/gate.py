"""The quality gate: one set of named checks after every verifier, whatever the backend.

A verifier is a model's opinion of its own kind's output (or, offline, of its own rules'); the gate is the same
deterministic measure for every backend. It runs after the verifier accepted a candidate (``graph.py``: the
``verify`` node) and checks the question as asked, its standalone form, the answer and the qrels:

=====================  ==========  =====================================================================
check                  role        fails when
=====================  ==========  =====================================================================
``question_form``      questioner  a placeholder or ellipsis (``...``, ``N/A``, ``<question>``), no
                                   interrogative form, too few or too many words
``question_language``  questioner  written in another script or language than its gold passage (the
                                   corpus's for an unanswerable turn), by py3langid
``consistency``        questioner  the standalone form asks another thing (another wh-word, drops the
                                   question's words) or adds words the conversation never said
``answer_present``     answerer    empty, a placeholder, numbers only, or nothing beyond yes/no
``answer_not_passage`` answerer    the whole gold passage (an echo)
``answer_grounded``    answerer    too few of its content words and numbers are in the gold passage(s)
``answer_fit``         answerer    the MiniLM cosine of the standalone question and the answer is low
``no_giveaway``        questioner  the question already holds the answer's first sentence
``qrels``              questioner  a gold id missing from the corpus; gold on an unanswerable turn
``not_copy``           questioner  the question is a sentence of its passage (word Jaccard)
=====================  ==========  =====================================================================

Each check is a function registered in :data:`CHECKS` that returns the reason it fails, or None. A candidate that
fails any goes back to the questioner with the reasons as feedback (``gate: <check>: <reason>; ...``), like a
verifier rejection; after ``max_attempts`` the turn is recorded failed with them (a ``failures`` row of step
``gate``). Every rejection is logged in the conversation's ``gate_log`` (check, role, model, reason) and lands in
the run's ``gate_rejections`` table, counted per check, role and model on the dataset card. The humanizer's
rewrite is held to the question-side checks too (``on_rewrite``): one that fails keeps the question it rewrote.

Unanswerable turns (the fixed :data:`agents.synth.answerer.UNANSWERABLE_ANSWER`, no gold) get the question-side
checks only, and ``qrels`` asks that they have no gold. Thresholds: ``synth.gate`` (:class:`GateConfig`;
``mode`` default / strict / off), measured in ``docs/concepts/gate.md``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Collection

from agents.synth import gate_text as G
from agents.synth.config import GATE_CHECKS, GateConfig
from agents.synth.state import ConvState, GraphContext, sample_id, segment_ok_turns, visible_history
from agents.synth.turn import once_per_corpus
from storage.schemas import GATE_REJECTIONS

Thresholds = dict


@dataclass
class GateInput:
    """What the checks read of a candidate turn."""

    question: str                           # as asked (the questioner's, or the humanizer's rewrite)
    standalone: str
    answer: str
    unanswerable: bool
    gold: list[str]                         # gold passage ids (empty for an unanswerable turn)
    passages: list[str]                     # their texts
    history: str = ""                       # what the user has seen: questions, answers, earlier gold titles
    known: Collection[str] = ()             # the corpus's passage ids
    language: str = "en"                    # the gold passage's language (the corpus's without gold)
    script: str | None = "LATIN"
    also: tuple[tuple[str, str | None], ...] = ()   # other accepted (language, script): the corpus's


@dataclass(frozen=True)
class Check:
    name: str
    role: str                               # the agent whose output fails it: questioner | answerer
    fn: Callable[[GateInput, Thresholds], str | None]
    answerable_only: bool = False           # not run on an unanswerable turn
    on_rewrite: bool = False                # also run on the humanizer's rewrite of the question


CHECKS: dict[str, Check] = {}


def check(name: str, role: str, *, answerable_only: bool = False, on_rewrite: bool = False):
    """Register ``fn(x, thresholds) -> reason | None`` as the gate check ``name``."""
    def register(fn: Callable[[GateInput, Thresholds], str | None]):
        assert name in GATE_CHECKS, name
        CHECKS[name] = Check(name, role, fn, answerable_only, on_rewrite)
        return fn
    return register


# -- the checks -------------------------------------------------------------------------------
def _question_form(q: str, t: Thresholds, what: str) -> str | None:
    bad = G.placeholder(q)
    if bad:
        return f"the {what} is no question ({bad})"
    n = len(G.tokens(q))
    if n < t["min_question_words"]:
        return f"the {what} has {n} word(s), fewer than {t['min_question_words']}"
    if n > t["max_question_words"]:
        return f"the {what} has {n} words, more than {t['max_question_words']}"
    if t["require_question_mark"] and not q.rstrip().endswith("?"):
        return f"the {what} does not end with a question mark"
    if not G.interrogative(q):
        return f"the {what} is not interrogative (no question mark, no question word)"
    return None


@check("question_form", "questioner", on_rewrite=True)
def question_form(x: GateInput, t: Thresholds) -> str | None:
    """Interrogative, ``min_question_words`` to ``max_question_words`` words, no placeholder: the question as
    asked and its standalone form."""
    return _question_form(x.question, t, "question") or _question_form(x.standalone, t, "standalone question")


@check("question_language", "questioner", on_rewrite=True)
def question_language(x: GateInput, t: Thresholds) -> str | None:
    """The question's letters are mostly in the passage's script (``min_script_share``) and, from
    ``language_min_words`` words on, py3langid does not prefer another language by more than ``language_margin``
    nats per word (a short English question is often 'most likely' something else, by a small margin). The corpus's
    language and script count as the passage's too (a passage py3langid misreads, a multilingual corpus)."""
    langs = dict.fromkeys([x.language, *(lang for lang, _ in x.also)])
    scripts = [s for s in dict.fromkeys([x.script, *(sc for _, sc in x.also)]) if s]
    for what, q in (("question", x.question), ("standalone question", x.standalone)):
        if scripts and G.letters(q):
            share = max(G.script_share(q, sc) for sc in scripts)
            if share < t["min_script_share"]:
                return (f"the {what} is written in {G.script_of(q)} script ({1 - share:.0%} of its letters), the "
                        f"passage in {scripts[0]}")
        if len(G.tokens(q)) >= t["language_min_words"]:
            gaps = [G.language_gap(q, lang) for lang in langs]
            top, gap = min(gaps, key=lambda tg: tg[1])
            if top not in langs and gap > t["language_margin"]:
                return (f"the {what} is in another language ({top!r}, the passage {x.language!r}; margin "
                        f"{gap:.1f})")
    return None


@check("consistency", "questioner")
def consistency(x: GateInput, t: Thresholds) -> str | None:
    """The standalone form asks what the question asks: the same intent (wh-word, or a comparison) unless the
    question keeps the previous one ("What about the late fee?"), at least ``min_kept_share`` of the question's
    topic words (2 or more), and no more than ``max_added_words`` topic words that neither the question nor the
    conversation said (words of asking, :data:`~agents.synth.gate_text.ASKING`, are free)."""
    iq, i_s = G.intent(x.question), G.intent(x.standalone)
    if iq and i_s and iq != i_s and not G.is_shift(x.question):
        return f"the question asks {iq!r}, its standalone form {i_s!r}"
    asked, full = G.topic_stems(x.question), G.topic_stems(x.standalone)
    if len(asked) >= 2:
        kept = len(asked & full) / len(asked)
        if kept < t["min_kept_share"]:
            return (f"the standalone form keeps {kept:.0%} of the question's words (missing: "
                    f"{', '.join(sorted(asked - full))})")
    added = full - asked - G.content_stems(x.history)
    if len(added) > t["max_added_words"]:
        return (f"the standalone form adds {len(added)} words the conversation never said: "
                f"{', '.join(sorted(added))}")
    return None


@check("answer_present", "answerer", answerable_only=True)
def answer_present(x: GateInput, t: Thresholds) -> str | None:
    """Not empty, not a placeholder (``N/A``, ``...``, numbers only), something beyond yes/no."""
    bad = G.placeholder(x.answer)
    if bad:
        return f"the answer is no answer ({bad})"
    _, body = G.strip_yesno(x.answer)
    if not G.content_stems(body):
        return "the answer says nothing beyond yes/no" if G.strip_yesno(x.answer)[0] else \
            "the answer has no content word"
    return None


@check("answer_not_passage", "answerer", answerable_only=True)
def answer_not_passage(x: GateInput, t: Thresholds) -> str | None:
    """The answer repeats at most ``max_passage_share`` of the sentences of a gold passage of
    ``whole_passage_min_sentences`` sentences or more (a sentence counts when 90% of its words are in the answer)."""
    have = G.content_stems(x.answer)
    for text in x.passages:
        sents = [s for s in G.passage_sentences(text) if G.content_stems(s)]
        if len(sents) < t["whole_passage_min_sentences"]:
            continue
        rep = sum(len(G.content_stems(s) & have) >= 0.9 * len(G.content_stems(s)) for s in sents)
        if rep / len(sents) > t["max_passage_share"]:
            return f"the answer is the whole passage ({rep} of its {len(sents)} sentences)"
    return None


def support(answer: str, passages: list[str]) -> float | None:
    """Share of the answer's content words and numbers (after a yes/no) found in the passages; None for none."""
    words = G.content_list(G.strip_yesno(answer)[1])
    if not words:
        return None
    have = set().union(*(G.content_stems(p) for p in passages)) if passages else set()
    return sum(w in have for w in words) / len(words)


@check("answer_grounded", "answerer", answerable_only=True)
def answer_grounded(x: GateInput, t: Thresholds) -> str | None:
    """At least ``min_support`` of the answer's content words and numbers are in its gold passage(s)."""
    s = support(x.answer, x.passages)
    if s is not None and s < t["min_support"]:
        return f"{s:.0%} of the answer's words are in its gold passage (below {t['min_support']:.0%})"
    return None


def fit(standalone: str, answer: str) -> float:
    """MiniLM cosine of the standalone question and the answer's best of its first two sentences."""
    from agents.synth.offline.semantic import best_similarity   # costly: torch (MiniLM) loads on first use
    body = G.strip_yesno(answer)[1].strip() or answer
    return best_similarity(standalone, (G.passage_sentences(body) or [body])[:2])


@check("answer_fit", "answerer", answerable_only=True)
def answer_fit(x: GateInput, t: Thresholds) -> str | None:
    """The answer is about what the question asks: MiniLM cosine of the standalone question and the answer's
    first sentences at least ``min_fit``."""
    if not G.content_stems(G.strip_yesno(x.answer)[1]):
        return None                          # nothing to compare (answer_present says why)
    f = fit(x.standalone, x.answer)
    if f < t["min_fit"]:
        return f"the answer does not fit the question (MiniLM cosine {f:.2f}, below {t['min_fit']:.2f})"
    return None


def giveaway(question: str, standalone: str, answer: str) -> float | None:
    """Share of the content words of the answer's first sentence that the question (or its standalone form)
    already says; None for a yes/no answer (a yes/no question states what it asks to confirm) or no words."""
    yes, body = G.strip_yesno(answer)
    first = (G.passage_sentences(body) or [body])[0]
    core = set(G.content_list(first))
    if yes or not core:
        return None
    return max(len(core & G.content_stems(q)) / len(core) for q in (question, standalone))


@check("no_giveaway", "questioner", answerable_only=True, on_rewrite=True)
def no_giveaway(x: GateInput, t: Thresholds) -> str | None:
    """The question does not contain its answer: at most ``max_giveaway_share`` of the content words of the
    answer's first sentence are already in the question."""
    g = giveaway(x.question, x.standalone, x.answer)
    if g is not None and g > t["max_giveaway_share"]:
        return f"the question already contains its answer ({g:.0%} of the answer's words)"
    return None


@check("qrels", "questioner")
def qrels(x: GateInput, t: Thresholds) -> str | None:
    """An answerable turn has gold, each in the corpus; an unanswerable one has none."""
    if x.unanswerable:
        return f"an unanswerable turn has gold passages {x.gold}" if x.gold else None
    if not x.gold:
        return "an answerable turn has no gold passage"
    missing = [g for g in x.gold if g not in x.known]
    return f"gold passage(s) not in the corpus: {', '.join(missing)}" if missing else None


def copy_overlap(question: str, passages: list[str]) -> tuple[float, str]:
    """The highest word Jaccard (content stems) of the question and a sentence of the passages, and that
    sentence."""
    q = G.content_stems(question)
    best, where = 0.0, ""
    if not q:
        return best, where
    for text in passages:
        for s in G.passage_sentences(text):
            ss = G.content_stems(s)
            j = len(q & ss) / len(q | ss) if ss else 0.0
            if j > best:
                best, where = j, s
    return best, where


@check("not_copy", "questioner", answerable_only=True, on_rewrite=True)
def not_copy(x: GateInput, t: Thresholds) -> str | None:
    """The question as asked is not a sentence of its passage: word Jaccard at most ``max_copy_overlap``."""
    j, s = copy_overlap(x.question, x.passages)
    if j > t["max_copy_overlap"]:
        return f"the question copies a sentence of its passage (word Jaccard {j:.2f}: {s[:80]!r})"
    return None


assert tuple(CHECKS) == GATE_CHECKS, "register every check of GATE_CHECKS, in order"


# -- running the gate --------------------------------------------------------------------------
def evaluate(x: GateInput, cfg: GateConfig, only: Callable[[Check], bool] | None = None) -> list[tuple[str, str]]:
    """``(check, reason)`` of every check ``x`` fails (none with ``mode = off``); ``only`` picks the checks."""
    t = cfg.resolved()
    if not t:
        return []
    out = []
    for c in CHECKS.values():
        if c.name in cfg.skip or (c.answerable_only and x.unanswerable) or (only and not only(c)):
            continue
        why = c.fn(x, t)
        if why:
            out.append((c.name, why))
    return out


@once_per_corpus
def _corpus_language(corpus: dict[str, dict]) -> tuple[str, str | None]:
    ids = sorted(corpus)
    return G.corpus_language([corpus[i]["text"] for i in ids])


def passage_language(corpus: dict[str, dict], ids: list[str]) -> tuple[str, str | None]:
    """(language, script) of the first gold passage when it has letters enough (200), else of the corpus."""
    text = next((corpus[i]["text"] for i in ids if i in corpus), "")
    if G.letters(text[:1000]) >= 200:
        return G.language_of(text[:1000]), G.script_of(text[:1000])
    return _corpus_language(corpus)


def history_text(ctx: GraphContext, state: ConvState) -> str:
    """What the user has seen of the conversation (this segment's questions and answers), their standalone forms
    and the titles of their gold passages: the words a standalone form may add."""
    seen = segment_ok_turns(state)
    parts = [text for _, text in visible_history(state)]
    parts += [t.get("standalone_question") or "" for t in seen]
    parts += [(ctx.corpus.get(g) or {}).get("title") or "" for t in seen for g in t.get("gold_doc_ids") or []]
    return " ".join(parts)


def gate_input(ctx: GraphContext, state: ConvState, question: str | None = None) -> GateInput:
    """The candidate of ``state`` as the checks read it (``question``: another wording, e.g. the rewrite)."""
    cand = state["cand"]
    gold = [] if cand["unanswerable"] else [g for g in [cand.get("gold"), *cand.get("also_gold", [])] if g]
    lang, script = passage_language(ctx.corpus, gold) if gold else _corpus_language(ctx.corpus)
    return GateInput(question=question if question is not None else cand["question"],
                     standalone=cand["standalone_question"], answer=state.get("answer") or "",
                     unanswerable=bool(cand["unanswerable"]), gold=gold,
                     passages=[ctx.corpus[g]["text"] for g in gold if g in ctx.corpus],
                     history=history_text(ctx, state), known=ctx.corpus, language=lang, script=script,
                     also=(_corpus_language(ctx.corpus),))


def _log(state: ConvState, fails: list[tuple[str, str]], role: str | None = None, final_text: str = "") -> list[dict]:
    usage = state.get("turn_usage") or {}
    models = usage.get("models") or {}
    rows = []
    for name, why in fails:
        r = role or CHECKS[name].role
        rows.append({"sample_id": sample_id(state), "conv_id": state["conv_id"], "turn": state["turn"],
                     "attempt": state.get("attempt", 0), "check": name, "role": r,
                     "model": models.get(r) or usage.get("backend"), "backend": usage.get("backend"),
                     "reason": why, "question": final_text or (state.get("cand") or {}).get("question"),
                     "answer": state.get("answer")})
    return rows


def feedback(fails: list[tuple[str, str]]) -> str:
    return "gate: " + "; ".join(f"{name}: {why}" for name, why in fails)


def node(ctx: GraphContext, state: ConvState) -> dict:
    """The gate on the verifier's accepted candidate: nothing (accepted), or the candidate rejected with the
    failing checks' reasons as feedback and logged in ``gate_log``."""
    cand = state.get("cand")
    if cand is None or state.get("turn_error"):
        return {}
    fails = evaluate(gate_input(ctx, state), ctx.cfg.gate)
    if not fails:
        return {}
    return {"cand": None, "feedback": feedback(fails), "gate_log": [*state.get("gate_log", []), *_log(state, fails)]}


def guard_rewrite(ctx: GraphContext, state: ConvState) -> dict:
    """The humanizer's rewrite held to the question-side checks (``on_rewrite``): one that fails is replaced by the
    question it rewrote (which passed), the reason in ``humanize_note`` and ``gate_log`` (role humanizer)."""
    cand = state.get("cand")
    if not cand or not cand.get("humanized") or cand["humanized"] == cand["question"]:
        return {}
    fails = evaluate(gate_input(ctx, state, question=cand["humanized"]), ctx.cfg.gate, only=lambda c: c.on_rewrite)
    if not fails:
        return {}
    return {"cand": {**cand, "humanized": cand["question"], "humanize_note": feedback(fails) + "; original kept"},
            "gate_log": [*state.get("gate_log", []), *_log(state, fails, "humanizer", cand["humanized"])]}



def recheck(turns: list[dict], corpus: dict[str, dict],
            cfg: GateConfig | None = None) -> dict[str, list[tuple[str, str]]]:
    """The gate run again over a run's stored ``ok`` turns (``turns`` rows, ``corpus``: chunk id -> {title, text}):
    ``sample_id -> failing (check, reason)`` for each ok turn that fails a check now (empty when every one passes).
    The history is rebuilt as the graph saw it: the earlier ok turns of the conversation since its topic switch. The
    stored question is the one the user sees (the humanizer's rewrite, checked as such)."""
    cfg = cfg or GateConfig()
    by: dict[str, list[dict]] = {}
    for t in turns:
        by.setdefault(t["conv_id"], []).append(t)
    lang = _corpus_language(corpus)
    out: dict[str, list[tuple[str, str]]] = {}
    for conv in by.values():
        conv.sort(key=lambda t: t["turn"])
        seen: list[dict] = []
        for t in conv:
            if t["status"] != "ok":
                continue
            if t.get("is_switch"):
                seen = []
            gold = list(t.get("gold_doc_ids") or [])
            history = " ".join(f"{p['question']} {p['answer']} {p.get('standalone_question') or ''} "
                               + " ".join((corpus.get(g) or {}).get("title") or "" for g in p.get("gold_doc_ids") or [])
                               for p in seen)
            language, script = passage_language(corpus, gold) if gold else lang
            base = GateInput(question=t["question_original"] or t["question"], standalone=t["standalone_question"],
                             answer=t["answer"] or "", unanswerable=t["answerability"] == "UNANSWERABLE", gold=gold,
                             passages=[corpus[g]["text"] for g in gold if g in corpus], history=history, known=corpus,
                             language=language, script=script, also=(lang,))
            fails = evaluate(base, cfg)
            if t["question"] != base.question:      # the rewrite the user sees: the question-side checks
                fails += evaluate(replace(base, question=t["question"]), cfg, only=lambda c: c.on_rewrite)
            if fails:
                out[t["sample_id"]] = fails
            seen.append(t)
    return out


def gate_rejection_rows(state: dict) -> list[dict]:
    """The conversation's quality-gate rejections (``gate_log``, :mod:`agents.synth.gate`) as ``gate_rejections``
    rows; ``final`` marks those of a failed turn's last attempt when the gate's rejection failed it."""
    failed = {t["sample_id"]: t.get("verifier_attempts", 0) - 1 for t in state.get("turns", [])
              if t["status"] == "failed" and (t.get("failure_reason") or "").split("last: ", 1)[-1].startswith("gate:")}
    return [{**{k: r.get(k) for k in GATE_REJECTIONS.names},
             "final": r["role"] != "humanizer" and failed.get(r["sample_id"]) == r.get("attempt")}
            for r in state.get("gate_log", [])]
