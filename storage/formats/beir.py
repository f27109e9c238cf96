"""BEIR folders: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
``text``) and ``qrels/<split>.tsv`` (``query-id corpus-id score`` with a header)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.types import Qrels
from storage.formats.io import (FormatError, PathLike, add_judgment, first_file, get_field, iter_jsonl, iter_lines,
                                parse_grade)
from storage.records import Document, Query


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """A BEIR folder read into memory (``corpus`` keyed by doc id, ``queries`` by qid)."""

    corpus: dict[str, Document]
    queries: dict[str, Query]
    qrels: Qrels
    split: str


def read_beir_corpus(path: PathLike) -> dict[str, Document]:
    """Read a BEIR ``corpus.jsonl`` (``_id``, ``title`` optional, ``text``).

    Returns:
        ``{doc_id: Document}``; ``Document.source`` is ``"<path>:<line>"``.

    Raises:
        FormatError: missing/ill-typed fields or a duplicate ``_id``.
    """
    corpus: dict[str, Document] = {}
    for lineno, obj in iter_jsonl(path):
        doc_id = get_field(path, lineno, obj, "_id", (str, int))
        doc_id = str(doc_id)
        if doc_id in corpus:
            raise FormatError(path, lineno, f"duplicate document id {doc_id!r}")
        title = get_field(path, lineno, obj, "title", str, default="", nullable=True) or ""
        text = get_field(path, lineno, obj, "text", str)
        corpus[doc_id] = Document(doc_id=doc_id, title=title, text=text, source=f"{path}:{lineno}")
    return corpus


def read_beir_queries(path: PathLike) -> dict[str, Query]:
    """Read a BEIR ``queries.jsonl`` (``_id``, ``text``).

    Raises:
        FormatError: missing/ill-typed fields or a duplicate ``_id``.
    """
    queries: dict[str, Query] = {}
    for lineno, obj in iter_jsonl(path):
        qid = str(get_field(path, lineno, obj, "_id", (str, int)))
        if qid in queries:
            raise FormatError(path, lineno, f"duplicate query id {qid!r}")
        queries[qid] = Query(qid=qid, text=get_field(path, lineno, obj, "text", str))
    return queries


def read_beir_qrels(path: PathLike) -> Qrels:
    """Read a BEIR qrels TSV (``query-id corpus-id score``; the header line is optional).

    Raises:
        FormatError: wrong column count or a non-integer score.
    """
    qrels: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    first = True
    for lineno, line in iter_lines(path):
        parts = line.split("\t") if "\t" in line else line.split()
        parts = [p.strip() for p in parts]
        if len(parts) != 3:
            raise FormatError(path, lineno, f"expected 3 columns 'query-id corpus-id score', got {len(parts)}")
        if first:
            first = False
            try:
                float(parts[2])
            except ValueError:
                continue  # header line
        qid, doc_id, grade_text = parts
        add_judgment(qrels, first_line, path, lineno, qid, doc_id, parse_grade(path, lineno, grade_text))
    return qrels


def read_beir(folder: PathLike, split: str = "test") -> BeirDataset:
    """Read a BEIR dataset folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

    ``.jsonl.gz`` variants are accepted for the corpus and queries.

    Args:
        folder: the dataset folder.
        split: qrels split name.

    Raises:
        FileNotFoundError: a required file is missing (the message lists what was looked for).
        FormatError: a file is malformed.
    """
    root = Path(folder)

    def pick(*names: str) -> Path:
        found = first_file(*(root / name for name in names))
        if found is None:
            raise FileNotFoundError(f"BEIR folder {root} has none of {', '.join(names)}")
        return found

    qrels_path = pick(f"qrels/{split}.tsv")
    return BeirDataset(corpus=read_beir_corpus(pick("corpus.jsonl", "corpus.jsonl.gz")),
                       queries=read_beir_queries(pick("queries.jsonl", "queries.jsonl.gz")),
                       qrels=read_beir_qrels(qrels_path), split=split)
