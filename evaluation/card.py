"""Sections of a synthesized benchmark's dataset card that need the evaluation layer.

``storage.exports`` writes the card but may not import ``evaluation``; the synthesis flow
builds these Markdown sections here and hands them in (``export_benchmark(card_sections=...)``):

* :func:`cost_section`: LLM calls, cache hits, tokens and cost per role from ``llm_calls``
  (unique ``call_id``), and the human-cost comparison **only** when the writing time per turn
  and the hourly rate are set, stated with their source; without a source they are marked as
  assumptions; unset, the card says what to set (no default is presented as fact);
* :func:`realism_section`: the question statistics of :mod:`evaluation.realism`;
* :func:`difficulty_section`: per evaluated retriever and query mode, a measure's mean per
  turn and per position after the topic switch (:mod:`evaluation.breakdown`);
* :func:`examples_section`: three example conversations (those with a switch first, then by
  conversation id), questions and answers cut to ``max_chars``.
"""
from __future__ import annotations

import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence


def _f(x: Any, d: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{d}f}" if isinstance(x, float) else str(x)


def cost_section(calls: Sequence[Mapping[str, Any]], n_turns: int, minutes_per_turn: float | None = None,
                 hourly_usd: float | None = None, source: str | None = None) -> str:
    """The cost section (see module docstring); ``calls`` = ``llm_calls`` rows."""
    seen: set[str] = set()
    by: dict[str, dict[str, float]] = defaultdict(lambda: {"calls": 0, "cache_hits": 0, "tokens": 0, "cost": 0.0})
    for r in calls:
        if r["call_id"] in seen:
            continue
        seen.add(r["call_id"])
        b = by[r.get("role") or "?"]
        b["calls"] += 1
        b["cache_hits"] += bool(r.get("cache_hit"))
        b["tokens"] += (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)
        b["cost"] += r.get("cost_usd") or 0.0
    lines = ["## Cost", "", "| role | calls | cache hits | tokens | cost (USD) |", "|---|---|---|---|---|"]
    for role in sorted(by):
        b = by[role]
        lines.append(f"| {role} | {b['calls']} | {b['cache_hits']} | {b['tokens']} | {b['cost']:.4f} |")
    total = sum(b["cost"] for b in by.values())
    lines.append(f"| total | {sum(b['calls'] for b in by.values())} | {sum(b['cache_hits'] for b in by.values())} | "
                 f"{sum(b['tokens'] for b in by.values())} | {total:.4f} |")
    lines.append("")
    if minutes_per_turn is None or hourly_usd is None:
        lines.append("Human cost: not estimated. Set `synth.minutes_per_turn_human`, `synth.human_hourly_usd` and "
                     "`synth.human_cost_source` (where the figures come from) to compare; no default is assumed.")
    else:
        human = n_turns * minutes_per_turn / 60 * hourly_usd
        src = f"source: {source}" if source else "**assumptions, no source given**"
        ratio = f"; {human / total:.1f}x the LLM cost" if total > 0 else ""
        lines.append(f"Human cost estimate: {n_turns} turns x {minutes_per_turn} min at ${hourly_usd}/h = "
                     f"${human:,.2f} ({src}){ratio}.")
    return "\n".join(lines)


def realism_section(stats, health: Mapping[str, Any] | None = None) -> str:
    """The realism statistics (an :class:`evaluation.realism.RealismStats`), with the run's failed-turn share and
    its least complete kept conversation (``health``: :func:`evaluation.realism.turn_health`) when given."""
    d = stats.as_dict()
    rows = [("conversations", d["conversations"]), ("questions", d["questions"]), ("follow-ups", d["followups"])]
    if health:
        rows += [("failed turns", f"{health['failed']} of {health['turns']} ({_f(health['failed_share'])})"),
                 ("least complete kept conversation (share of its turns)", _f(health["min_kept"])),
                 ("kept conversations below 75% of their turns", health["below_75"])]
    rows += [
            ("question length, mean / median words", f"{_f(d['length_mean'], 1)} / {_f(d['length_median'], 1)}"),
            ("follow-ups that depend on the history", _f(d["history_dependent"])),
            ("follow-ups that differ from their rewrite", _f(d["differs_from_rewrite"])),
            ("follow-ups with a pronoun", _f(d["pronoun"])), ("distinct questions", _f(d["distinct"])),
            ("rare words new to the conversation, per follow-up", _f(d.get("rare_new", float("nan")), 2))]
    rows += [(f"question type: {k}", _f(v)) for k, v in d["qtypes"].items()]
    return "\n".join(["## Realism statistics", "", "| statistic | value |", "|---|---|",
                      *[f"| {k} | {v} |" for k, v in rows]])


def difficulty_section(results: Mapping[str, Any], positions: Mapping[str, int | None],
                       measure: str = "recall_20") -> str:
    """Per ``retriever/mode`` (``{key: EvalResult}``): mean ``measure`` per turn and per turns
    since the topic switch (``no_switch`` before any)."""
    from evaluation.breakdown import per_switch_position, per_turn   # costly: numpy, pyarrow (this module is stdlib-only)
    lines = ["## Difficulty of the evaluated retrievers", ""]
    for kind, fn in (("turn", lambda r: per_turn(r, [measure])),
                     ("turns since the topic switch", lambda r: per_switch_position(r, positions, [measure]))):
        tables = {k: fn(r) for k, r in results.items()}
        labels = list(dict.fromkeys(row["label"] for b in tables.values() for row in b.rows))
        lines += [f"{measure} by {kind}:", "", "| retriever/mode | " + " | ".join(labels) + " |",
                  "|---|" + "---|" * len(labels)]
        for k, b in tables.items():
            cell = {row["label"]: row[measure] for row in b.rows}
            lines.append(f"| {k} | " + " | ".join(_f(cell.get(lab)) for lab in labels) + " |")
        lines.append("")
    return "\n".join(lines).rstrip()


def add_difficulty_to_card(card: Path, ev) -> bool:
    """Append (or replace) the difficulty section of a dataset card after an evaluation
    (``ev``: an :class:`evaluation.benchmark_eval.BenchmarkEval` of the card's benchmark).
    The card is rewritten atomically; returns False when there is no card or no result."""
    card = Path(card)
    if not card.is_file() or not ev.results:
        return False
    text = card.read_text(encoding="utf-8")
    head = "## Difficulty of the evaluated retrievers"
    if head in text:  # a re-evaluation replaces the section (it runs to the next "## " heading)
        before, rest = text.split(head, 1)
        nxt = rest.find("\n## ")
        text = before.rstrip() + ("\n\n" + rest[nxt + 1:] if nxt >= 0 else "\n")
    section = difficulty_section(ev.results, ev.switch_positions or {})
    tmp = card.with_name(card.name + ".tmp")
    tmp.write_text(text.rstrip() + "\n\n" + section + "\n", encoding="utf-8")
    os.replace(tmp, card)
    return True


def _cut(text: str | None, n: int) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[:n - 1].rstrip() + "…"


def examples_section(turns: Sequence[Mapping[str, Any]], n: int = 3, max_chars: int = 220) -> str:
    """Example conversations from ``turns`` rows (ok turns only)."""
    convs: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for t in turns:
        if t["status"] == "ok":
            convs[t["conv_id"]].append(t)
    order = sorted(convs, key=lambda c: (not any(t.get("is_switch") for t in convs[c]), c))[:n]
    lines = ["## Example conversations", ""]
    for c in order:
        lines.append(f"**{c}**")
        lines.append("")
        for t in sorted(convs[c], key=lambda t: t["turn"]):
            switch = " (topic switch)" if t.get("is_switch") else ""
            lines.append(f"{t['turn']}. User{switch}: {_cut(t['question'], max_chars)}  ")
            lines.append(f"   Assistant: {_cut(t['answer'], max_chars)} "
                         f"[gold: {', '.join(t.get('gold_doc_ids') or []) or 'none'}]")
        lines.append("")
    return "\n".join(lines).rstrip()
