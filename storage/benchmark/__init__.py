"""One in-memory view of a conversational retrieval benchmark, whatever its source format.

Audit (MTR-Eval), abstention and retrieval evaluation all read benchmarks through
:func:`load_benchmark`, so each adapter is written once. A benchmark is a corpus plus a list
of :class:`BenchTurn` records (one per user turn, with its history, gold passages and
reference answer). Ids are stable: ``sample_id`` is the source's own turn id (``conv:turn``
for ours, ``conv<::>turn`` for MTRAG); joins are on ids, never on positions.

One module per benchmark family, registered in :data:`LOADERS` (``registry.py``):

* ``ours`` (:mod:`.ours`): a synthesis run directory; the corpus is its ``chunks`` table.
* ``mtrag`` (:mod:`.mtrag`): the MTRAG layout and a domain name.
* ``beir`` (:mod:`.beir`): a BEIR folder plus an optional ``conversations.jsonl``.
* ``chatrag`` (:mod:`.chatrag`): ChatRAG-Bench style rows; the corpus is the union of every
  row's passages, each row's ``ctxs`` is kept as its candidate list.
* ``coral`` (:mod:`.coral`): CORAL conversations plus ``passage_corpus.json``.
* ``topiocqa`` (:mod:`.topiocqa`): TopiOCQA-style rows with an optional
  ``full_wiki_segments.tsv`` corpus.
"""
from __future__ import annotations

from storage.benchmark.beir import load_beir
from storage.benchmark.chatrag import load_chatrag
from storage.benchmark.coral import coral_neighbours, load_coral
from storage.benchmark.model import Benchmark, BenchTurn
from storage.benchmark.mtrag import load_mtrag
from storage.benchmark.ours import load_ours
from storage.benchmark.registry import FORMATS, LOADERS, Format, iter_formats, load_benchmark, load_benchmarks
from storage.benchmark.topiocqa import load_topiocqa

__all__ = ["BenchTurn", "Benchmark", "FORMATS", "Format", "LOADERS", "coral_neighbours", "iter_formats",
           "load_beir", "load_benchmark", "load_benchmarks", "load_chatrag", "load_coral", "load_mtrag", "load_ours",
           "load_topiocqa"]
