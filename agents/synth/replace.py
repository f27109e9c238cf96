"""Complete conversations: a conversation that keeps too few of its turns is replaced by a spare one.

A conversation whose passages cannot carry ``n_turns`` good questions (a barren cluster: a table of
contents, a list of version numbers) ends with most of its turns failed. A benchmark of such
conversations tests nothing past their first turns, so after each round of synthesis every finished
conversation that kept fewer than ``synth.min_kept_share`` of its turns is swapped for the next spare
plan (a cluster that was not picked, in the run's seeded pick order) and the spares run as a new round.

Everything here is deterministic: the spares come in a fixed order and a round's short conversations
are taken in plan order, so a resumed run replays the same rounds from the checkpoints and repeats no
LLM call. The replaced conversations stay in the checkpoint database and are listed in the synthesis
summary (``replaced``); they are not part of the benchmark. When the spares run out (or replacements
reach ``synth.max_replaced_share`` of the planned conversations) a short conversation is kept, and the
summary counts it (``short_kept``).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from agents.synth.run import ConvPlan


def kept_share(state: dict | None) -> float | None:
    """The share of a finished conversation's turns that are ok; None while it is unfinished (or absent).

    >>> kept_share({"done": True, "turns": [{"status": "ok"}, {"status": "failed"}]})
    0.5
    """
    if not state or not state.get("done"):
        return None
    turns = state.get("turns") or []
    return sum(t["status"] == "ok" for t in turns) / len(turns) if turns else 0.0


def is_short(state: dict | None, min_share: float) -> bool:
    """A finished conversation that kept fewer than ``min_share`` of its turns."""
    k = kept_share(state)
    return k is not None and k < min_share


def complete_conversations(plans: Sequence[ConvPlan], spares: Sequence[ConvPlan],
                           run: Callable[[list[ConvPlan]], tuple[dict[str, dict], str | None]],
                           min_share: float, max_replaced: int) -> dict:
    """Run ``plans``, then replace short conversations by ``spares`` round after round.

    ``run(plans)`` synthesizes (or resumes) the plans and returns their states by ``conv_id`` and a stop
    reason (a budget stop ends the rounds). Returns ``plans`` (the benchmark's, each replaced one at its
    place), ``states``, ``replaced`` (one dict per replaced conversation), ``short_kept`` (conv ids still
    short when no spare was left) and ``stopped``."""
    final = list(plans)
    states, stopped = run(list(plans))
    states = dict(states)
    queue = list(spares)
    replaced: list[dict] = []
    pending = list(plans)
    while not stopped and queue and len(replaced) < max_replaced:
        short = [p for p in pending if is_short(states.get(p.conv_id), min_share)]
        if not short:
            break
        swaps = list(zip(short, queue))[: max_replaced - len(replaced)]
        del queue[: len(swaps)]
        where = {p.conv_id: i for i, p in enumerate(final)}
        for old, new in swaps:
            final[where[old.conv_id]] = new
            replaced.append({"conv_id": old.conv_id, "kept_share": kept_share(states[old.conv_id]),
                             "replaced_by": new.conv_id})
        pending = [new for _, new in swaps]
        got, stopped = run(pending)
        states.update(got)
    short_kept = [p.conv_id for p in final if is_short(states.get(p.conv_id), min_share)]
    return {"plans": final, "states": {p.conv_id: states[p.conv_id] for p in final if p.conv_id in states},
            "replaced": replaced, "short_kept": short_kept, "stopped": stopped}


def replacement_cap(n_plans: int, share: float) -> int:
    """Most conversations a run replaces: ``share`` of its planned ones, rounded up (0 when share is 0).

    >>> replacement_cap(30, 0.25)
    8
    """
    return math.ceil(n_plans * share)
