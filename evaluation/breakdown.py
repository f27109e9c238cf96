"""Break per-query metric values down by conversation turn and by topic-switch position.

Sample ids carry the turn: MTR-Suite writes ``<conv_id>:<turn>`` (see
:func:`storage.records.sample_id`), MTRAG writes ``<conv_id><::><turn>``. Every breakdown is a
plain grouping of per-query values, so it works on the output of
:func:`evaluation.metrics.evaluate` (``EvalResult``) or on any ``{qid: {measure: value}}``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from evaluation.metrics import EvalResult

MTRAG_SEPARATOR = "<::>"
NO_SWITCH = "no_switch"


def parse_turn(sample_id: str) -> tuple[str, int]:
    """Split a sample id into ``(conversation_id, turn)``.

    Accepts ``conv_id:turn`` (MTR-Suite) and ``conv_id<::>turn`` (MTRAG). The turn is the part
    after the **last** separator and must be a positive integer.

    Args:
        sample_id: e.g. ``"c12:3"`` or ``"dd6b6ffd<::>2"``.

    Returns:
        ``(conversation_id, turn)``.

    Raises:
        ValueError: the id has no separator or the turn is not a positive integer.
    """
    if MTRAG_SEPARATOR in sample_id:
        conv, _, turn = sample_id.rpartition(MTRAG_SEPARATOR)
    else:
        conv, _, turn = sample_id.rpartition(":")
    if not conv or not turn.isdigit() or int(turn) < 1:
        raise ValueError(f"cannot read a turn from sample id {sample_id!r}; expected "
                         f"'<conv_id>:<turn>' or '<conv_id><::><turn>' with turn >= 1")
    return conv, int(turn)


@dataclass(frozen=True)
class Breakdown:
    """Mean metric values per group.

    Attributes:
        key: what was grouped on (``turn``, ``switch_position``, ...).
        measures: measure columns.
        rows: one dict per group, in group order: ``group`` (sort key, int), ``label`` (str),
            ``n`` (queries in the group) and one mean per measure.
        n_unassigned: queries that fell in no group (no turn / no position known).
    """

    key: str
    measures: tuple[str, ...]
    rows: tuple[dict, ...]
    n_unassigned: int = 0

    def to_table(self, **constant_columns: str) -> pa.Table:
        """The rows as an Arrow table (optionally with constant columns, e.g. ``retriever=``)."""
        cols: dict[str, list] = {name: [value] * len(self.rows) for name, value in constant_columns.items()}
        cols[self.key] = [int(r["group"]) for r in self.rows]
        cols["label"] = [str(r["label"]) for r in self.rows]
        cols["n"] = [int(r["n"]) for r in self.rows]
        for m in self.measures:
            cols[m] = [float(r[m]) for r in self.rows]
        return pa.table(cols)

    def curve(self, measure: str) -> tuple[list[str], list[float]]:
        """``(labels, means)`` of one measure, in group order (for plotting)."""
        return [r["label"] for r in self.rows], [r[measure] for r in self.rows]


def _as_per_query(values: EvalResult | Mapping[str, Mapping[str, float]],
                  measures: Sequence[str] | None) -> tuple[dict[str, Mapping[str, float]], tuple[str, ...]]:
    if isinstance(values, EvalResult):
        per_query, available = values.per_query, values.measures
    else:
        per_query = dict(values)
        first = next(iter(per_query.values()), {})
        available = tuple(first)
    chosen = tuple(measures) if measures is not None else tuple(available)
    return per_query, chosen


def group_means(values: EvalResult | Mapping[str, Mapping[str, float]],
                group_of: Callable[[str], tuple[int, str] | None], key: str,
                measures: Sequence[str] | None = None) -> Breakdown:
    """Average per-query values within groups.

    Args:
        values: an ``EvalResult`` or ``{qid: {measure: value}}``.
        group_of: maps a qid to ``(sort_key, label)``, or ``None`` to leave the query out.
        key: name of the grouping (the sort-key column of :meth:`Breakdown.to_table`).
        measures: measures to average (default: all).

    Returns:
        The :class:`Breakdown`, groups ordered by sort key.

    Raises:
        KeyError: a requested measure is missing for some query.
    """
    per_query, chosen = _as_per_query(values, measures)
    groups: dict[Hashable, list[str]] = {}
    labels: dict[Hashable, str] = {}
    unassigned = 0
    for qid in per_query:
        g = group_of(qid)
        if g is None:
            unassigned += 1
            continue
        sort_key, label = g
        groups.setdefault(sort_key, []).append(qid)
        labels[sort_key] = label
    rows = []
    for sort_key in sorted(groups):
        qids = groups[sort_key]
        row = {"group": sort_key, "label": labels[sort_key], "n": len(qids)}
        for m in chosen:
            row[m] = float(np.mean([per_query[q][m] for q in qids]))
        rows.append(row)
    return Breakdown(key=key, measures=chosen, rows=tuple(rows), n_unassigned=unassigned)


def per_turn(values: EvalResult | Mapping[str, Mapping[str, float]], measures: Sequence[str] | None = None,
             max_turn: int | None = None,
             turn_of: Callable[[str], int] | None = None) -> Breakdown:
    """Mean metric values per conversation turn.

    Args:
        values: an ``EvalResult`` or ``{qid: {measure: value}}``.
        measures: measures to average (default: all).
        max_turn: pool turns ``>= max_turn`` into one group labelled ``"<max_turn>+"``.
        turn_of: turn of a qid (default: :func:`parse_turn`); raise ``ValueError`` or return
            ``None`` for ids without a turn (they are counted in ``n_unassigned``).

    Returns:
        A :class:`Breakdown` keyed ``turn``.
    """
    def group(qid: str) -> tuple[int, str] | None:
        try:
            turn = turn_of(qid) if turn_of is not None else parse_turn(qid)[1]
        except ValueError:
            return None
        if turn is None:
            return None
        if max_turn is not None and turn >= max_turn:
            return max_turn, f"{max_turn}+"
        return turn, str(turn)

    return group_means(values, group, "turn", measures)


def per_switch_position(values: EvalResult | Mapping[str, Mapping[str, float]],
                        positions: Mapping[str, int | None], measures: Sequence[str] | None = None,
                        max_position: int | None = None) -> Breakdown:
    """Mean metric values by position relative to the latest topic switch.

    Args:
        values: an ``EvalResult`` or ``{qid: {measure: value}}``.
        positions: ``{sample_id: turns_since_switch}``: 0 = the turn that switches topic,
            1 = the next turn, ...; ``None`` = no switch has happened yet in the conversation
            (group ``"no_switch"``, sort key -1). Samples absent from the mapping are left out
            and counted in ``n_unassigned``.
        measures: measures to average (default: all).
        max_position: pool positions ``>= max_position`` into one group ``"<max_position>+"``.

    Returns:
        A :class:`Breakdown` keyed ``switch_position``.

    Raises:
        ValueError: a negative position.
    """
    bad = [q for q, p in positions.items() if p is not None and (isinstance(p, float) and math.isnan(p) or p < 0)]
    if bad:
        raise ValueError(f"turns since a topic switch must be >= 0 (or None), e.g. {bad[0]!r}: {positions[bad[0]]}")

    def group(qid: str) -> tuple[int, str] | None:
        if qid not in positions:
            return None
        pos = positions[qid]
        if pos is None:
            return -1, NO_SWITCH
        pos = int(pos)
        if max_position is not None and pos >= max_position:
            return max_position, f"{max_position}+"
        return pos, str(pos)

    return group_means(values, group, "switch_position", measures)
