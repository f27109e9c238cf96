"""Benchmark facts the abstention analysis needs beyond :class:`storage.benchmark.Benchmark`:
the benchmark's hard negatives per turn, and the page structure of the corpus.

**Hard negatives** (``{sample_id: {doc_id: note}}``): passages the benchmark itself put
forward for a question and marked non-relevant:

* any format: qrels entries with grade <= 0;
* MTRAG: the judged contexts shown to the annotator whose latest label is ``no`` (MTRAG
  mines no distractors; these are its judged negatives), read from the conversations file.

**Pages**: passage ids carry their source page and position: ``<doc>#<n>`` (our chunks),
``<page>_<start>-<end>-<a>-<b>`` (MTRAG ClapNQ), ``<page>-<start>-<end>`` (MTRAG Cloud).
Passages of one page are ordered by position; two passages are *neighbours* when they are
at most ``window`` places apart in that order (among the corpus's passages of that page).
Ids without a recognisable page have no neighbours.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

from storage.benchmark import Benchmark
from storage.formats import read_mtrag_conversations

_CHUNK = re.compile(r"^(?P<page>.+)#(?P<n>\d+)$")
_SPAN = re.compile(r"^(?P<page>.+?)[_-](?P<start>\d+)-(?P<end>\d+)(?:-\d+-\d+)?$")


def hard_negatives(benchmark: Benchmark, path: str | Path | None = None,
                   domain: str | None = None) -> dict[str, dict[str, str]]:
    """Hard negatives per turn (see module docstring); ``path``/``domain`` locate MTRAG files."""
    out: dict[str, dict[str, str]] = {}
    for t in benchmark.turns:
        for d, g in t.gold.items():
            if g <= 0:
                out.setdefault(t.sample_id, {})[d] = f"qrels grade {g}"
    if benchmark.format == "mtrag" and path is not None and domain:
        base = Path(path) / "conversations"
        conv = next((p for p in (base / f"{domain}.jsonl", base / f"{domain}.jsonl.gz") if p.is_file()), None)
        if conv is not None:
            for task in read_mtrag_conversations(conv):
                for ctx in task.judged_contexts:
                    if ctx.label == "no":
                        out.setdefault(task.task_id, {}).setdefault(
                            ctx.doc_id, "judged not relevant by the annotator (labels: " + ",".join(ctx.labels) + ")")
    return out


def page_position(doc_id: str) -> tuple[str, tuple[int, ...]] | None:
    """(page, position) of a passage id, or None (see module docstring)."""
    m = _CHUNK.match(doc_id)
    if m:
        return m.group("page"), (int(m.group("n")),)
    m = _SPAN.match(doc_id)
    if m:
        return m.group("page"), (int(m.group("start")), int(m.group("end")))
    return None


class PageIndex:
    """Position of every passage within its page, for the neighbouring-chunk test."""

    def __init__(self, doc_ids: Iterable[str]) -> None:
        pages: dict[str, list[tuple[tuple[int, ...], str]]] = {}
        for d in doc_ids:
            pp = page_position(d)
            if pp is not None:
                pages.setdefault(pp[0], []).append((pp[1], d))
        self.page_of: dict[str, str] = {}
        self.index_of: dict[str, int] = {}
        self.pages: dict[str, list[str]] = {}
        for page, items in pages.items():
            items.sort()
            ids = [d for _, d in items]
            self.pages[page] = ids
            for i, d in enumerate(ids):
                self.page_of[d] = page
                self.index_of[d] = i

    def same_page(self, a: str, b: str) -> bool:
        pa = self.page_of.get(a)
        return pa is not None and pa == self.page_of.get(b)

    def neighbours(self, a: str, b: str, window: int = 1) -> bool:
        """True when ``a`` and ``b`` are different passages of one page at most ``window`` apart."""
        return a != b and self.same_page(a, b) and abs(self.index_of[a] - self.index_of[b]) <= window


def conversation_qrels(benchmark: Benchmark) -> dict[str, dict[str, frozenset[str]]]:
    """``{conv_id: {sample_id: relevant docs}}`` over every turn of the benchmark."""
    out: dict[str, dict[str, frozenset[str]]] = {}
    for t in benchmark.turns:
        out.setdefault(t.conv_id, {})[t.sample_id] = frozenset(d for d, g in t.gold.items() if g >= 1)
    return out


def other_turn_qrels(conv_qrels: Mapping[str, Mapping[str, frozenset[str]]], conv_id: str,
                     sample_id: str) -> frozenset[str]:
    """Relevant passages of the other turns of the same conversation."""
    return frozenset(d for s, docs in conv_qrels.get(conv_id, {}).items() if s != sample_id for d in docs)


__all__ = ["PageIndex", "conversation_qrels", "hard_negatives", "other_turn_qrels", "page_position"]
