"""Step 3: the negative control. Each turn is shown the top-k context of a *different*
conversation; a judge fit for the job should rarely say ``yes`` (the source paper saw 4.1%
for its main judge and 30.7% for a lenient one). A judge whose yes-rate exceeds the
configured ceiling is flagged unfit.

Pairing (deterministic): conversations in sorted id order; the turns of conversation ``i``
borrow the contexts of conversation ``i + 1`` (the last borrows from the first), turn ``j``
taking the partner's turn ``j`` modulo the partner's length. A borrowed context that holds
one of the turn's own qrels passages is dropped (it would not be a negative).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

from evaluation.abstention.contexts import Context


@dataclass(frozen=True, slots=True)
class ControlPair:
    sample_id: str            # the turn whose question / reference answer is judged
    foreign_sample_id: str    # the turn whose context is borrowed
    doc_ids: tuple[str, ...]


def pair_foreign(contexts: Sequence[Context]) -> tuple[list[ControlPair], int]:
    """Borrowed contexts for every turn of ``contexts`` (one retriever's contexts).

    Returns:
        (pairs, n_dropped): dropped = borrowed contexts holding one of the turn's qrels passages.
    """
    by_conv: dict[str, list[Context]] = {}
    for c in contexts:
        by_conv.setdefault(c.conv_id, []).append(c)
    convs = sorted(by_conv)
    if len(convs) < 2:
        return [], 0
    for v in by_conv.values():
        v.sort(key=lambda c: c.turn)
    pairs: list[ControlPair] = []
    dropped = 0
    for i, conv in enumerate(convs):
        partner = by_conv[convs[(i + 1) % len(convs)]]
        for j, c in enumerate(by_conv[conv]):
            f = partner[j % len(partner)]
            if any(d in c.gold for d in f.doc_ids):
                dropped += 1
                continue
            pairs.append(ControlPair(c.sample_id, f.sample_id, f.doc_ids))
    return pairs, dropped


@dataclass(frozen=True, slots=True)
class ControlResult:
    """One judge's negative-control outcome."""

    judge: str
    n: int
    n_yes: int
    n_partial: int
    n_no: int
    n_failed: int
    yes_rate: float
    yes_partial_rate: float
    ceiling: float
    unfit: bool

    def to_dict(self) -> dict:
        return asdict(self)


def control_result(judge: str, labels: Sequence[str | None], ceiling: float) -> ControlResult:
    """Yes-rate of ``labels`` (failed calls = None, left out) and the unfit flag (> ceiling)."""
    ok = [x for x in labels if x is not None]
    n = len(ok)
    y, p = ok.count("yes"), ok.count("partial")
    rate = y / n if n else math.nan
    return ControlResult(judge=judge, n=n, n_yes=y, n_partial=p, n_no=ok.count("no"), n_failed=len(labels) - n,
                         yes_rate=rate, yes_partial_rate=(y + p) / n if n else math.nan, ceiling=ceiling,
                         unfit=bool(n) and rate > ceiling)


def unfit_judges(results: Mapping[str, ControlResult]) -> list[str]:
    return [j for j, r in results.items() if r.unfit]


__all__ = ["ControlPair", "ControlResult", "control_result", "pair_foreign", "unfit_judges"]
