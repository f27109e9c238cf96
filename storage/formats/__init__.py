"""Readers and writers for the retrieval file formats MTR-Suite exchanges with other tools.

One module per format, the public names re-exported here:

* :mod:`storage.formats.trec`: **TREC run** (``qid Q0 doc_id rank score tag``, whitespace
  separated; the rank column is read but ignored for scoring, exactly like trec_eval) and
  **TREC qrels** (``qid iter doc_id grade``, tab or space separated; ``iter`` ignored).
* :mod:`storage.formats.beir`: **BEIR folder**: ``corpus.jsonl`` (``_id``, ``title``,
  ``text``), ``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv``
  (``query-id corpus-id score`` with a header).
* :mod:`storage.formats.mtrag`: **MTRAG** (as in the MTRAG-derived fixture):
  ``queries/*.jsonl`` (``qid``, ``text``, ``original_text``), ``qrels/*.tsv`` (TREC qrels),
  ``corpus/*.jsonl.gz`` (``doc_id``, ``title``, ``text``) and ``conversations/*.jsonl`` (one
  record per turn).
* :mod:`storage.formats.perquery`: per-query metric values as JSON lines.
* :mod:`storage.formats.io`: generic line / JSON-lines / JSON-array reading, atomic writing,
  gzip handling and :class:`FormatError`.

In-memory shapes follow pytrec_eval: a :data:`~common.types.Run` is ``{qid: {doc_id: score}}``
and :data:`~common.types.Qrels` is ``{qid: {doc_id: grade}}``. Every reader opens ``.gz``
files transparently and raises :class:`FormatError` naming the file and the 1-based line
number of a malformed line.
"""
from __future__ import annotations

from common.types import Qrels, Run
from storage.formats.beir import BeirDataset, read_beir, read_beir_corpus, read_beir_qrels, read_beir_queries
from storage.formats.io import (FormatError, PathLike, atomic_text_writer, iter_jsonl, iter_lines, open_text,
                                read_json_rows)
from storage.formats.mtrag import (MTRAG_QUERY_TYPES, JudgedContext, Message, MtragDomain, MtragTurn,
                                   read_mtrag_conversations, read_mtrag_corpus, read_mtrag_domain, read_mtrag_qrels,
                                   read_mtrag_queries)
from storage.formats.perquery import read_per_query_jsonl, write_per_query_jsonl
from storage.formats.trec import (read_qrels, read_trec_qrels, read_trec_run, trec_order, write_trec_qrels,
                                  write_trec_run)
from storage.records import Query

__all__ = [
    "BeirDataset", "FormatError", "JudgedContext", "MTRAG_QUERY_TYPES", "Message", "MtragDomain", "MtragTurn",
    "PathLike", "Qrels", "Query", "Run", "atomic_text_writer", "iter_jsonl", "iter_lines", "open_text",
    "read_beir", "read_beir_corpus", "read_beir_qrels", "read_beir_queries", "read_json_rows",
    "read_mtrag_conversations", "read_mtrag_corpus", "read_mtrag_domain", "read_mtrag_qrels", "read_mtrag_queries",
    "read_per_query_jsonl", "read_qrels", "read_trec_qrels", "read_trec_run", "trec_order", "write_per_query_jsonl",
    "write_trec_qrels", "write_trec_run",
]
