"""How much a conversational benchmark reads like people: question statistics and how much its
follow-ups lean on the history. Works on any loaded :class:`storage.benchmark.Benchmark`
(ours, MTRAG, BEIR), so a synthesized benchmark and a human one print side by side.

Statistics (over the turns with a user question; *follow-ups* are turns after the first of
their conversation):

* question length in words (mean, median) and the question-type distribution
  (:func:`question_type`: who / what / when / where / which / why / how many / how much / how /
  yes-no / other - the first cue word, so imperative or keyword questions count as other);
* ``history_dependent``: share of follow-ups whose standalone form (the benchmark's rewrite)
  adds content words - 4+ letters, not stopwords - that the question lacks and the earlier
  turns (user and assistant) contain; ``differs_from_rewrite``: share whose rewrite differs
  at all (case and punctuation ignored). Only follow-ups that have a rewrite count;
* ``pronoun``: share of follow-ups with a third-person pronoun or possessive
  (it, its, they, them, their, he, him, his, she, her, this, that, these, those as a
  determiner-less pronoun is not told apart: the list is the usual one of the field);
* ``distinct``: share of distinct questions (lower-cased, whitespace-normalised);
* ``rare_new``: rare words a follow-up brings into the conversation, per follow-up: content
  words of the question that occur in fewer than 0.5% of the corpus passages (title or text; at
  least one) and in no earlier turn (user or assistant). People ask follow-ups in the
  conversation's words and common ones; a question copied from its passage carries the
  passage's rare words and finds it without the history;
* retrieval: nDCG@5 per retriever and query mode (last turn / rewrite / full history) and the
  rewrite / last-turn ratio (:func:`retrieval_table`).
"""
from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from common.text import synthesis_stopwords

PRONOUNS = frozenset({"it", "its", "they", "them", "their", "theirs", "he", "him", "his", "she", "her", "hers",
                      "this", "that", "these", "those", "itself", "themselves"})
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
QTYPES = ("what", "who", "when", "where", "which", "why", "how many", "how much", "how", "yes/no", "other")
_AUX = ("is", "are", "was", "were", "do", "does", "did", "can", "could", "will", "would", "should", "has", "have",
        "had", "may", "might", "must", "shall", "am")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def content_words(text: str) -> set[str]:
    """Words of 4+ letters that are not stopwords (the history-dependence unit)."""
    sw = synthesis_stopwords()
    return {w for w in words(text) if len(w) >= 4 and w.isalpha() and w not in sw}


def question_type(question: str) -> str:
    w = words(question)
    w = w[1:] if w and w[0] in ("and", "so", "but", "ok", "okay", "also", "then", "well") else w
    if not w:
        return "other"
    if w[0] == "how" and len(w) > 1 and w[1] in ("many", "much"):
        return f"how {w[1]}"
    if w[0] in ("what", "who", "when", "where", "which", "why", "how"):
        return w[0]
    if w[0] in ("whom", "whose"):
        return "who"
    if w[0] in _AUX:
        return "yes/no"
    for x in w[:6]:           # "and what about", "in which year", "tell me what"
        if x in ("what", "who", "when", "where", "which", "why"):
            return x
    return "other"


def history_dependent(question: str, rewrite: str | None, history_text: str) -> bool | None:
    """True when the rewrite adds content words the question lacks and the history contains;
    None when there is no rewrite."""
    if not rewrite:
        return None
    added = content_words(rewrite) - content_words(question)
    return bool(added & content_words(history_text))


def has_pronoun(question: str) -> bool:
    return any(w in PRONOUNS for w in words(question))


def _norm(q: str) -> str:
    return " ".join(words(q))


@dataclass
class RealismStats:
    name: str
    conversations: int
    questions: int
    followups: int
    length_mean: float
    length_median: float
    qtypes: dict[str, float]
    history_dependent: float
    differs_from_rewrite: float
    pronoun: float
    distinct: float
    extra: dict
    rare_new: float = float("nan")

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def question_stats(bench, name: str | None = None) -> RealismStats:
    """The question statistics of a loaded benchmark (see the module docstring)."""
    convs = bench.conversations()
    rare = rare_words(bench.corpus)
    qs, fu_dep, fu_diff, fu_pron, fu_rare = [], [], [], [], []
    for turns in convs.values():
        for k, t in enumerate(turns):
            q = t.question
            if not q or not q.strip():
                continue
            qs.append(q)
            if k == 0 and not t.history:
                continue
            hist = " ".join(text for _, text in t.history)
            fu_pron.append(has_pronoun(q))
            fu_rare.append(len((content_words(q) & rare) - set(words(hist))))
            dep = history_dependent(q, t.rewrite, hist)
            if dep is not None:
                fu_dep.append(dep)
                fu_diff.append(_norm(q) != _norm(t.rewrite))
    lens = [len(q.split()) for q in qs]
    types: dict[str, float] = {k: 0.0 for k in QTYPES}
    for q in qs:
        types[question_type(q)] += 1
    n = max(1, len(qs))

    def share(xs: list[bool]) -> float:
        return sum(xs) / len(xs) if xs else float("nan")
    return RealismStats(name=name or bench.name, conversations=len(convs), questions=len(qs),
                        followups=len(fu_pron), length_mean=statistics.fmean(lens) if lens else float("nan"),
                        length_median=statistics.median(lens) if lens else float("nan"),
                        qtypes={k: v / n for k, v in types.items()}, history_dependent=share(fu_dep),
                        differs_from_rewrite=share(fu_diff), pronoun=share(fu_pron),
                        distinct=len({_norm(q) for q in qs}) / n, extra={"followups_with_rewrite": len(fu_dep)},
                        rare_new=statistics.fmean(fu_rare) if fu_rare and rare else float("nan"))


def turn_health(turns: Sequence[dict]) -> dict:
    """The share of a run's turns that failed and the smallest share of its turns a kept conversation keeps
    (``turns``: rows of the run's ``turns`` table, any status)."""
    by: dict[str, list[bool]] = {}
    for r in turns:      # a duplicate turn (agents.synth.dedup) stays in its conversation: kept, not failed
        by.setdefault(r["conv_id"], []).append(r["status"] != "failed")
    kept = [sum(v) / len(v) for v in by.values() if any(v)]
    failed = sum(not ok for v in by.values() for ok in v)
    return {"turns": len(turns), "failed": failed, "failed_share": failed / max(1, len(turns)),
            "min_kept": min(kept, default=0.0), "below_75": sum(k < 0.75 for k in kept)}


RARE_DF = 0.005


def rare_words(corpus: dict) -> set[str]:
    """Content words in at least one and fewer than ``RARE_DF`` of the corpus passages (title or text)."""
    df: Counter = Counter()
    for d in corpus.values():
        df.update(content_words(f"{d.title or ''} {d.text}"))
    cut = RARE_DF * len(corpus)
    return {w for w, c in df.items() if c < cut}


def retrieval_table(bench, retrievers: Sequence[str] = ("bm25", "dense"),
                    modes: Sequence[str] = ("last_turn", "rewrite", "full_history"), index_dir=None,
                    cache_dir=None) -> dict[str, dict[str, float]]:
    """nDCG@5 per retriever and query mode, plus ``rewrite/last_turn`` per retriever."""
    return retrieval_means(evaluate_modes(bench, retrievers, modes, index_dir, cache_dir))


def evaluate_modes(bench, retrievers: Sequence[str] = ("bm25", "dense"),
                   modes: Sequence[str] = ("last_turn", "rewrite", "full_history"), index_dir=None, cache_dir=None):
    """The searches and per-query scores behind :func:`retrieval_table` and :func:`ratio_breakdown` (run once,
    read by both)."""
    from evaluation.benchmark_eval import evaluate_benchmark   # costly: numpy, pyarrow (this module is stdlib-only)
    return evaluate_benchmark(bench, list(retrievers), list(modes), depth=20, index_dir=index_dir,
                              cache_dir=cache_dir, ks=(5, 10))


def retrieval_means(ev) -> dict[str, dict[str, float]]:
    """nDCG@5 per retriever and query mode of an :func:`evaluate_modes` result, plus ``rewrite/last_turn``."""
    out: dict[str, dict[str, float]] = {}
    for key, res in ev.results.items():
        r, m = key.split("/", 1)
        out.setdefault(r, {})[m] = res.means().get("ndcg_cut_5", float("nan"))
    for r, d in out.items():
        if d.get("last_turn"):
            d["rewrite/last_turn"] = d.get("rewrite", float("nan")) / d["last_turn"]
    return out


def format_table(stats: list[RealismStats], retrieval: list[dict | None] | None = None) -> str:
    """A markdown table: one column per benchmark."""
    cols = [s.name for s in stats]
    rows: list[tuple[str, list[str]]] = [
        ("conversations / questions / follow-ups", [f"{s.conversations} / {s.questions} / {s.followups}" for s in stats]),
        ("question length mean / median (words)", [f"{s.length_mean:.1f} / {s.length_median:.0f}" for s in stats]),
        ("follow-ups depending on the history", [f"{s.history_dependent:.0%}" for s in stats]),
        ("follow-ups differing from their rewrite", [f"{s.differs_from_rewrite:.0%}" for s in stats]),
        ("follow-ups with a pronoun/possessive", [f"{s.pronoun:.0%}" for s in stats]),
        ("distinct questions", [f"{s.distinct:.0%}" for s in stats]),
        ("rare words new to the conversation per follow-up", [f"{s.rare_new:.2f}" for s in stats]),
    ]
    for k in QTYPES:
        if any(s.qtypes.get(k, 0) >= 0.005 for s in stats):
            rows.append((f"type: {k}", [f"{s.qtypes.get(k, 0):.0%}" for s in stats]))
    if retrieval:
        keys = []
        for r in retrieval:
            for ret, d in (r or {}).items():
                for m in d:
                    if (ret, m) not in keys:
                        keys.append((ret, m))
        for ret, m in keys:
            label = f"{ret} nDCG@5 {m.replace('_', ' ')}" if m != "rewrite/last_turn" else f"{ret} rewrite / last turn"
            rows.append((label, [f"{(r or {}).get(ret, {}).get(m, float('nan')):.3f}" for r in retrieval]))
    head = "| statistic | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols)
    return head + "\n" + "\n".join(f"| {k} | " + " | ".join(v) + " |" for k, v in rows)


def turn_kind(turn, first: bool) -> str:
    """Where a turn's retrieval difficulty comes from, for :func:`ratio_breakdown`: ``first`` (the conversation's
    opening question), ``switch`` (a hard topic switch: ``turns_since_switch == 0``), ``asked in full`` (a
    follow-up whose rewrite says nothing more: the same words, case and punctuation aside, or no rewrite) or
    ``leans`` (a follow-up whose rewrite differs: it leans on the conversation); then ``/ yes-no`` or ``/ wh``
    (:func:`question_type`)."""
    if first or not turn.history:
        kind = "first"
    elif turn.turns_since_switch == 0:
        kind = "switch"
    elif not turn.rewrite or _norm(turn.question) == _norm(turn.rewrite):
        kind = "asked in full"
    else:
        kind = "leans"
    return f"{kind} / {'yes-no' if question_type(turn.question) == 'yes/no' else 'wh'}"


KIND_ORDER = tuple(f"{k} / {t}" for k in ("first", "switch", "asked in full", "leans") for t in ("wh", "yes-no"))


def ratio_breakdown(bench, retriever: str = "bm25", index_dir=None, cache_dir=None, measure: str = "ndcg_cut_5",
                    n_resamples: int = 10_000, seed: int = 0, ev=None) -> dict:
    """The rewrite / last-turn ratio of ``retriever`` with a 95% cluster-bootstrap interval over conversations
    (:func:`evaluation.bootstrap.ratio_ci`), and ``measure`` by :func:`turn_kind` (n, last turn, rewrite): which
    turns make the ratio. Over the turns with qrels; a turn missing from a run scores 0 (trec_eval's
    ``-c``). ``ev``: an :func:`evaluate_modes` result that holds both modes for ``retriever`` (else searched here)."""
    from evaluation.bootstrap import ratio_ci   # costly: numpy (this module is stdlib-only)
    if ev is None:
        ev = evaluate_modes(bench, [retriever], ["last_turn", "rewrite"], index_dir, cache_dir)
    per = {}
    for mode in ("last_turn", "rewrite"):
        res = ev.results[f"{retriever}/{mode}"]
        j = res.measures.index(measure)
        per[mode] = {q: float(res.values[i, j]) for i, q in enumerate(res.qids)}
    kinds: dict[str, list[tuple[float, float]]] = {}
    groups: dict[str, list[tuple[float, float]]] = {}
    for turns in bench.conversations().values():
        for k, t in enumerate(turns):
            if t.sample_id not in per["last_turn"]:
                continue
            pair = (per["last_turn"][t.sample_id], per["rewrite"].get(t.sample_id, 0.0))
            kinds.setdefault(turn_kind(t, k == 0), []).append(pair)
            groups.setdefault(t.conv_id, []).append(pair)
    ci = ratio_ci(list(groups.values()), n_resamples=n_resamples, seed=seed)
    rows = [{"kind": k, "n": len(v), "last_turn": statistics.fmean(a for a, _ in v),
             "rewrite": statistics.fmean(b for _, b in v)}
            for k, v in sorted(kinds.items(), key=lambda kv: (KIND_ORDER + (kv[0],)).index(kv[0]))]
    return {"retriever": retriever, "measure": measure, "ratio": ci.mean, "low": ci.low, "high": ci.high,
            "conversations": ci.n, "rows": rows}


def format_breakdown(name: str, bd: dict) -> str:
    """A markdown table of :func:`ratio_breakdown`, headed by the ratio and its interval."""
    m = bd["measure"].replace("ndcg_cut_", "nDCG@")
    head = (f"**{name}**, {bd['retriever']} {m} rewrite / last turn {bd['ratio']:.3f} (95% cluster bootstrap over "
            f"{bd['conversations']} conversations: {bd['low']:.3f}-{bd['high']:.3f})\n\n"
            f"| turns | n | {m} last turn | {m} rewrite |\n|---|---|---|---|")
    return head + "\n" + "\n".join(f"| {r['kind']} | {r['n']} | {r['last_turn']:.3f} | {r['rewrite']:.3f} |"
                                   for r in bd["rows"])
