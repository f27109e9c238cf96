"""The benchmark asks each question once: the same question with the same gold is one item, however many
conversations reached it.

Two conversations reach the same passages (a hard topic switch moves into another conversation's cluster;
the questioner is shown passages of the same page), and a deterministic questioner asks the same thing of
the same passage. A benchmark that holds an item twice counts it twice and inflates its own agreement
statistics. The check runs once over the whole run, in the benchmark's conversation order, so it does not
depend on which conversation finished first: the first occurrence stays an item, and every later one gets
the status ``duplicate``. A duplicate turn stays in its conversation as history (the turns after it may
lean on it), but it is no evaluation item and has no qrels.
"""
from __future__ import annotations

import re
from typing import Iterable

_NON_WORD = re.compile(r"[^\w]+")


def item_key(question: str, gold: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """What makes two turns the same item: the question's words (case, spacing and punctuation aside) and
    the gold passages.

    >>> item_key("How is  it calculated?", ["d2", "d1"])
    ('how is it calculated', ('d1', 'd2'))
    """
    return " ".join(_NON_WORD.sub(" ", question.lower()).split()), tuple(sorted(set(gold)))


def duplicate_turns(conversations: Iterable[Iterable[dict]]) -> dict[str, str]:
    """``{sample_id: sample_id of its first occurrence}`` for every ok turn that repeats an earlier item
    (``conversations``: each conversation's turns, in the benchmark's order)."""
    first: dict[tuple, str] = {}
    out: dict[str, str] = {}
    for turns in conversations:
        for t in turns:
            if t.get("status") != "ok":
                continue
            key = item_key(t.get("question") or "", t.get("gold_doc_ids") or ())
            if key in first:
                out[t["sample_id"]] = first[key]
            else:
                first[key] = t["sample_id"]
    return out
