"""TREC run files (``qid Q0 doc_id rank score tag``) and TREC qrels (``qid iter doc_id grade``).

The rank column of a run is read but ignored for scoring, exactly like trec_eval; the
``iter`` column of qrels is ignored. :func:`read_qrels` also accepts the BEIR qrels layout.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

from common.types import Qrels, Run
from storage.formats.beir import read_beir_qrels
from storage.formats.io import FormatError, PathLike, add_judgment, atomic_text_writer, iter_lines, parse_grade


def _parse_score(path: PathLike, lineno: int, text: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise FormatError(path, lineno, f"score {text!r} is not a number") from None
    if math.isnan(score):
        raise FormatError(path, lineno, "score is NaN")
    return score


def read_trec_run(path: PathLike) -> Run:
    """Read a TREC run file (``qid Q0 doc_id rank score tag``, any whitespace).

    The rank column must be an integer but is otherwise ignored: scoring re-sorts by score
    (trec_eval semantics). A query that retrieved nothing cannot appear in a TREC run file.

    Args:
        path: run file (``.gz`` allowed).

    Returns:
        ``{qid: {doc_id: score}}`` in file order.

    Raises:
        FormatError: wrong number of columns, a non-numeric rank or score, or a
            ``(qid, doc_id)`` pair listed twice.
        FileNotFoundError: the file does not exist.
    """
    run: Run = {}
    first_line: dict[tuple[str, str], int] = {}
    for lineno, line in iter_lines(path):
        parts = line.split()
        if len(parts) != 6:
            raise FormatError(path, lineno, f"expected 6 columns 'qid Q0 doc_id rank score tag', "
                                            f"got {len(parts)}")
        qid, _, doc_id, rank, score, _tag = parts
        try:
            int(rank)
        except ValueError:
            raise FormatError(path, lineno, f"rank {rank!r} is not an integer") from None
        value = _parse_score(path, lineno, score)
        docs = run.setdefault(qid, {})
        if doc_id in docs:
            raise FormatError(path, lineno, f"document {doc_id!r} listed twice for query {qid!r} "
                                            f"(first on line {first_line[(qid, doc_id)]})")
        docs[doc_id] = value
        first_line[(qid, doc_id)] = lineno
    return run


def read_trec_qrels(path: PathLike) -> Qrels:
    """Read TREC qrels (``qid iter doc_id grade``, tab or space separated).

    Args:
        path: qrels file (``.gz`` allowed).

    Returns:
        ``{qid: {doc_id: grade}}``.

    Raises:
        FormatError: wrong number of columns, a non-integer grade, or a judgment listed twice
            with different grades.
    """
    qrels: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    for lineno, line in iter_lines(path):
        if line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4:
            raise FormatError(path, lineno, f"expected 4 columns 'qid iter doc_id grade', got {len(parts)}")
        qid, _, doc_id, grade_text = parts
        grade = parse_grade(path, lineno, grade_text)
        add_judgment(qrels, first_line, path, lineno, qid, doc_id, grade)
    return qrels


def read_qrels(path: PathLike) -> Qrels:
    """Read qrels in TREC (4 columns) or BEIR (3 columns, optional header) layout.

    The layout is decided by the column count of the first non-blank, non-comment line.

    Raises:
        FormatError: the file is empty or malformed.
    """
    for lineno, line in iter_lines(path):
        if line.lstrip().startswith("#"):
            continue
        n = len(line.split())
        if n == 4:
            return read_trec_qrels(path)
        if n == 3:
            return read_beir_qrels(path)
        raise FormatError(path, lineno, f"expected TREC qrels (4 columns) or BEIR qrels (3 columns), "
                                        f"got {n} columns")
    raise FormatError(path, None, "qrels file is empty")


def _check_id(kind: str, value: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        raise ValueError(f"{kind} {value!r} cannot be written to a TREC file (empty or contains whitespace)")


def trec_order(doc_scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Order one query's documents as trec_eval does: score descending, ties by doc id descending.

    Args:
        doc_scores: ``{doc_id: score}``.

    Returns:
        ``[(doc_id, score), ...]`` in rank order.
    """
    return sorted(doc_scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def write_trec_run(run: Mapping[str, Mapping[str, float]], path: PathLike, tag: str = "mtr",
                   depth: int | None = None) -> Path:
    """Write a run as a TREC run file (atomically: temp file + rename).

    Each query's documents are written in trec_eval order (score descending, ties by doc id
    descending) with ranks 1..n, so the rank column agrees with how trec_eval reads the file.
    Scores are written with full precision (``repr``). Queries with no documents produce no
    lines (the format cannot express an empty list).

    Args:
        run: ``{qid: {doc_id: score}}``.
        path: output file (``.gz`` writes gzip).
        tag: run tag (last column); no whitespace.
        depth: keep only the top ``depth`` documents per query (``None`` = all).

    Returns:
        The written path.

    Raises:
        ValueError: an id or the tag is empty or contains whitespace, or a score is NaN.
    """
    _check_id("tag", tag)
    out = Path(path)
    with atomic_text_writer(out) as f:
        for qid, docs in run.items():
            _check_id("query id", qid)
            ranked = trec_order(docs)
            if depth is not None:
                ranked = ranked[:depth]
            for rank, (doc_id, score) in enumerate(ranked, start=1):
                _check_id("document id", doc_id)
                if math.isnan(score):
                    raise ValueError(f"score of {doc_id!r} for query {qid!r} is NaN")
                f.write(f"{qid} Q0 {doc_id} {rank} {float(score)!r} {tag}\n")
    return out


def write_trec_qrels(qrels: Mapping[str, Mapping[str, int]], path: PathLike) -> Path:
    """Write qrels as a tab-separated TREC qrels file (``qid 0 doc_id grade``).

    Raises:
        ValueError: an id is empty or contains whitespace.
    """
    out = Path(path)
    with atomic_text_writer(out) as f:
        for qid, docs in qrels.items():
            _check_id("query id", qid)
            for doc_id, grade in docs.items():
                _check_id("document id", doc_id)
                f.write(f"{qid}\t0\t{doc_id}\t{int(grade)}\n")
    return out
