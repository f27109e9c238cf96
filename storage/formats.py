"""Readers and writers for the retrieval file formats MTR-Suite exchanges with other tools.

Formats:

* **TREC run** (``qid Q0 doc_id rank score tag``, whitespace separated). The rank column is
  read but ignored for scoring, exactly like trec_eval.
* **TREC qrels** (``qid iter doc_id grade``, tab or space separated; ``iter`` ignored).
* **BEIR folder**: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
  (``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id corpus-id score`` with a header).
* **MTRAG** (as in the MTRAG-derived fixture): ``queries/*.jsonl`` (``qid``, ``text``,
  ``original_text``), ``qrels/*.tsv`` (TREC qrels), ``corpus/*.jsonl.gz`` (``doc_id``,
  ``title``, ``text``) and ``conversations/*.jsonl`` (one record per turn).

In-memory shapes follow pytrec_eval: a :data:`Run` is ``{qid: {doc_id: score}}`` and
:data:`Qrels` is ``{qid: {doc_id: grade}}``. Every reader opens ``.gz`` files transparently and
raises :class:`FormatError` naming the file and the 1-based line number of a malformed line.
"""
from __future__ import annotations

import gzip
import json
import math
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from storage.records import Document
from storage.store import StoreError

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]
PathLike = str | os.PathLike


class FormatError(StoreError, ValueError):
    """A malformed input file; the message names the file and (when known) the line.

    Attributes:
        path: the file that was being read.
        line: 1-based line number of the offending line, or ``None`` for whole-file errors.
        reason: what is wrong, without the location prefix.
    """

    def __init__(self, path: PathLike, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


# --------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Query:
    """One query.

    Attributes:
        qid: query id (MTRAG: ``<conversation_id><::><turn>``).
        text: the text to search with.
        original_text: the source text before cleaning (MTRAG keeps the ``|user|: `` prefixes
            here); ``None`` when the source has no such field.
    """

    qid: str
    text: str
    original_text: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message (``role`` is ``user`` or ``agent``)."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class JudgedContext:
    """A passage shown to an MTRAG annotator.

    Attributes:
        doc_id: MTRAG passage id.
        label: the latest annotator label (``None`` when the passage got no feedback).
        labels: every annotator label, oldest first.
        text: the passage text.
    """

    doc_id: str
    label: str | None
    labels: tuple[str, ...]
    text: str


@dataclass(frozen=True, slots=True)
class MtragTurn:
    """One MTRAG task: a user turn of a conversation with its annotations.

    Attributes mirror the fixture's ``conversations/*.jsonl`` fields; lists become tuples.
    ``history`` runs from the first turn up to and including this user turn.
    """

    task_id: str
    conversation_id: str
    conversation_index: int
    turn: int
    domain: str
    collection: str
    answerability: str
    question_type: tuple[str, ...]
    multi_turn: tuple[str, ...]
    other_enrichments: Mapping[str, Any]
    in_qrels: bool
    history: tuple[Message, ...]
    reference_answer: str
    judged_contexts: tuple[JudgedContext, ...]


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """A BEIR folder read into memory (``corpus`` keyed by doc id, ``queries`` by qid)."""

    corpus: dict[str, Document]
    queries: dict[str, Query]
    qrels: Qrels
    split: str


@dataclass(frozen=True, slots=True)
class MtragDomain:
    """One MTRAG domain of the fixture layout.

    Attributes:
        domain: ``clapnq``, ``cloud``, ...
        corpus: pooled passages keyed by doc id.
        queries: ``{query_type: [Query, ...]}`` for each ``queries/<domain>_<type>.jsonl``.
        qrels: the domain's qrels.
        conversations: the per-turn records (empty when the file is absent).
    """

    domain: str
    corpus: dict[str, Document]
    queries: dict[str, list[Query]]
    qrels: Qrels
    conversations: list[MtragTurn] = field(default_factory=list)


# --------------------------------------------------------------------------------------
# low-level helpers
# --------------------------------------------------------------------------------------
def open_text(path: PathLike, mode: str = "rt"):
    """Open a UTF-8 text file, gunzipping transparently when the name ends with ``.gz``.

    Args:
        path: file to open.
        mode: ``"rt"`` or ``"wt"``.

    Returns:
        A text stream.

    Raises:
        FileNotFoundError: when reading a file that does not exist.
    """
    p = Path(path)
    if p.suffix == ".gz":
        return gzip.open(p, mode, encoding="utf-8", newline="" if "w" in mode else None)
    return open(p, mode, encoding="utf-8", newline="" if "w" in mode else None)


@contextmanager
def atomic_text_writer(path: PathLike) -> Iterator[Any]:
    """Write a UTF-8 text file atomically (temp file + rename); gzip when ``path`` ends in ``.gz``.

    Parents are created. On error the temp file is removed and ``path`` is left untouched.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        if out.suffix == ".gz":
            with gzip.open(tmp, "wt", encoding="utf-8", newline="") as f:
                yield f
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                yield f
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


def iter_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for every non-blank line (line numbers are 1-based).

    Lines are decoded one by one, so a decoding error names the exact line. A UTF-8 byte
    order mark at the start of the file is skipped.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: a line is not UTF-8, or the gzip stream is corrupt.
    """
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    lineno = 0
    try:
        with opener(p, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise FormatError(path, lineno, f"not UTF-8 text ({exc.reason})") from None
                if line.strip():
                    yield lineno, line.rstrip("\r\n")
    except (gzip.BadGzipFile, EOFError) as exc:
        raise FormatError(path, lineno + 1, f"corrupt gzip data: {exc}") from exc


def iter_jsonl(path: PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSON-lines record (blank lines skipped).

    Raises:
        FormatError: on a line that is not a JSON object.
    """
    for lineno, line in iter_lines(path):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(path, lineno, f"invalid JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(obj, dict):
            raise FormatError(path, lineno, f"expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def _field(path: PathLike, lineno: int, obj: Mapping[str, Any], key: str, kind: type | tuple = str,
           default: Any = ..., nullable: bool = False) -> Any:
    if key not in obj:
        if default is not ...:
            return default
        raise FormatError(path, lineno, f"missing field {key!r}")
    value = obj[key]
    if value is None and nullable:
        return None
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise FormatError(path, lineno, f"field {key!r} must be {want}, got {type(value).__name__}")
    return value


def _parse_score(path: PathLike, lineno: int, text: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise FormatError(path, lineno, f"score {text!r} is not a number") from None
    if math.isnan(score):
        raise FormatError(path, lineno, "score is NaN")
    return score


def _parse_grade(path: PathLike, lineno: int, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value != int(value):
        raise FormatError(path, lineno, f"relevance grade {text!r} is not an integer")
    return int(value)


# --------------------------------------------------------------------------------------
# TREC runs and qrels
# --------------------------------------------------------------------------------------
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
        grade = _parse_grade(path, lineno, grade_text)
        _add_judgment(qrels, first_line, path, lineno, qid, doc_id, grade)
    return qrels


def _add_judgment(qrels: Qrels, first_line: dict, path: PathLike, lineno: int, qid: str,
                  doc_id: str, grade: int) -> None:
    docs = qrels.setdefault(qid, {})
    if doc_id in docs and docs[doc_id] != grade:
        raise FormatError(path, lineno, f"document {doc_id!r} judged twice for query {qid!r} with "
                                        f"different grades (first on line {first_line[(qid, doc_id)]})")
    docs[doc_id] = grade
    first_line.setdefault((qid, doc_id), lineno)


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


# --------------------------------------------------------------------------------------
# BEIR
# --------------------------------------------------------------------------------------
def read_beir_corpus(path: PathLike) -> dict[str, Document]:
    """Read a BEIR ``corpus.jsonl`` (``_id``, ``title`` optional, ``text``).

    Returns:
        ``{doc_id: Document}``; ``Document.source`` is ``"<path>:<line>"``.

    Raises:
        FormatError: missing/ill-typed fields or a duplicate ``_id``.
    """
    corpus: dict[str, Document] = {}
    for lineno, obj in iter_jsonl(path):
        doc_id = _field(path, lineno, obj, "_id", (str, int))
        doc_id = str(doc_id)
        if doc_id in corpus:
            raise FormatError(path, lineno, f"duplicate document id {doc_id!r}")
        title = _field(path, lineno, obj, "title", str, default="", nullable=True) or ""
        text = _field(path, lineno, obj, "text", str)
        corpus[doc_id] = Document(doc_id=doc_id, title=title, text=text, source=f"{path}:{lineno}")
    return corpus


def read_beir_queries(path: PathLike) -> dict[str, Query]:
    """Read a BEIR ``queries.jsonl`` (``_id``, ``text``).

    Raises:
        FormatError: missing/ill-typed fields or a duplicate ``_id``.
    """
    queries: dict[str, Query] = {}
    for lineno, obj in iter_jsonl(path):
        qid = str(_field(path, lineno, obj, "_id", (str, int)))
        if qid in queries:
            raise FormatError(path, lineno, f"duplicate query id {qid!r}")
        queries[qid] = Query(qid=qid, text=_field(path, lineno, obj, "text", str))
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
        _add_judgment(qrels, first_line, path, lineno, qid, doc_id, _parse_grade(path, lineno, grade_text))
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
        for name in names:
            if (root / name).is_file():
                return root / name
        raise FileNotFoundError(f"BEIR folder {root} has none of {', '.join(names)}")

    qrels_path = pick(f"qrels/{split}.tsv")
    return BeirDataset(corpus=read_beir_corpus(pick("corpus.jsonl", "corpus.jsonl.gz")),
                       queries=read_beir_queries(pick("queries.jsonl", "queries.jsonl.gz")),
                       qrels=read_beir_qrels(qrels_path), split=split)


# --------------------------------------------------------------------------------------
# MTRAG
# --------------------------------------------------------------------------------------
MTRAG_QUERY_TYPES = ("lastturn", "questions", "rewrite")


def read_mtrag_queries(path: PathLike) -> list[Query]:
    """Read MTRAG queries (``qid``, ``text``, ``original_text``), in file order.

    Raises:
        FormatError: missing/ill-typed fields or a duplicate ``qid``.
    """
    out: list[Query] = []
    seen: set[str] = set()
    for lineno, obj in iter_jsonl(path):
        qid = _field(path, lineno, obj, "qid")
        if qid in seen:
            raise FormatError(path, lineno, f"duplicate query id {qid!r}")
        seen.add(qid)
        out.append(Query(qid=qid, text=_field(path, lineno, obj, "text"),
                         original_text=_field(path, lineno, obj, "original_text", default=None,
                                              nullable=True)))
    return out


def read_mtrag_qrels(path: PathLike) -> Qrels:
    """Read MTRAG qrels (TREC qrels, tab separated, no header). See :func:`read_trec_qrels`."""
    return read_trec_qrels(path)


def read_mtrag_corpus(path: PathLike) -> dict[str, Document]:
    """Read an MTRAG pooled corpus (``doc_id``, ``title``, ``text``; usually ``.jsonl.gz``).

    Returns:
        ``{doc_id: Document}``; ``Document.source`` is ``"<path>:<line>"``.

    Raises:
        FormatError: missing/ill-typed fields or a duplicate ``doc_id``.
    """
    corpus: dict[str, Document] = {}
    for lineno, obj in iter_jsonl(path):
        doc_id = _field(path, lineno, obj, "doc_id")
        if doc_id in corpus:
            raise FormatError(path, lineno, f"duplicate document id {doc_id!r}")
        corpus[doc_id] = Document(doc_id=doc_id, title=_field(path, lineno, obj, "title", default="") or "",
                                  text=_field(path, lineno, obj, "text"), source=f"{path}:{lineno}")
    return corpus


def _str_list(path: PathLike, lineno: int, obj: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = _field(path, lineno, obj, key, list)
    if not all(isinstance(v, str) for v in value):
        raise FormatError(path, lineno, f"field {key!r} must be a list of strings")
    return tuple(value)


def read_mtrag_conversations(path: PathLike) -> list[MtragTurn]:
    """Read MTRAG per-turn conversation records, in file order.

    Raises:
        FormatError: a missing or ill-typed field (named with its line).
    """
    out: list[MtragTurn] = []
    for lineno, obj in iter_jsonl(path):
        history = []
        for i, msg in enumerate(_field(path, lineno, obj, "history", list)):
            if not isinstance(msg, dict):
                raise FormatError(path, lineno, f"history[{i}] must be an object")
            role = _field(path, lineno, msg, "role")
            if role not in ("user", "agent"):
                raise FormatError(path, lineno, f"history[{i}].role must be 'user' or 'agent', got {role!r}")
            history.append(Message(role=role, text=_field(path, lineno, msg, "text")))
        contexts = []
        for i, ctx in enumerate(_field(path, lineno, obj, "judged_contexts", list)):
            if not isinstance(ctx, dict):
                raise FormatError(path, lineno, f"judged_contexts[{i}] must be an object")
            contexts.append(JudgedContext(doc_id=_field(path, lineno, ctx, "doc_id"),
                                          label=_field(path, lineno, ctx, "label", nullable=True),
                                          labels=_str_list(path, lineno, ctx, "labels"),
                                          text=_field(path, lineno, ctx, "text")))
        turn = _field(path, lineno, obj, "turn", int)
        if turn < 1:
            raise FormatError(path, lineno, f"turn must be >= 1, got {turn}")
        out.append(MtragTurn(
            task_id=_field(path, lineno, obj, "task_id"),
            conversation_id=_field(path, lineno, obj, "conversation_id"),
            conversation_index=_field(path, lineno, obj, "conversation_index", int),
            turn=turn,
            domain=_field(path, lineno, obj, "domain"),
            collection=_field(path, lineno, obj, "collection"),
            answerability=_field(path, lineno, obj, "answerability"),
            question_type=_str_list(path, lineno, obj, "question_type"),
            multi_turn=_str_list(path, lineno, obj, "multi_turn"),
            other_enrichments=_field(path, lineno, obj, "other_enrichments", dict, default={}),
            in_qrels=_field(path, lineno, obj, "in_qrels", bool),
            history=tuple(history),
            reference_answer=_field(path, lineno, obj, "reference_answer"),
            judged_contexts=tuple(contexts),
        ))
    return out


def _first_existing(*paths: Path) -> Path | None:
    for p in paths:
        if p.is_file():
            return p
    return None


def read_mtrag_domain(root: PathLike, domain: str, query_types: Iterable[str] = MTRAG_QUERY_TYPES,
                      with_conversations: bool = True) -> MtragDomain:
    """Read one domain of an MTRAG fixture folder (plain or gzipped files).

    Looks for ``corpus/<d>.jsonl[.gz]``, ``qrels/<d>.tsv[.gz]``,
    ``queries/<d>_<type>.jsonl[.gz]`` and ``conversations/<d>.jsonl[.gz]``.

    Args:
        root: the fixture folder.
        domain: e.g. ``clapnq`` or ``cloud``.
        query_types: which query files to read.
        with_conversations: also read the conversations file (the largest one).

    Raises:
        FileNotFoundError: the corpus, qrels or a requested query file is missing.
        FormatError: a file is malformed.
    """
    base = Path(root)

    def need(sub: str, name: str) -> Path:
        p = _first_existing(base / sub / name, base / sub / f"{name}.gz")
        if p is None:
            raise FileNotFoundError(f"MTRAG folder {base} has no {sub}/{name}[.gz]")
        return p

    queries = {qt: read_mtrag_queries(need("queries", f"{domain}_{qt}.jsonl")) for qt in query_types}
    conv_path = _first_existing(base / "conversations" / f"{domain}.jsonl",
                                base / "conversations" / f"{domain}.jsonl.gz")
    conversations = read_mtrag_conversations(conv_path) if with_conversations and conv_path else []
    return MtragDomain(domain=domain, corpus=read_mtrag_corpus(need("corpus", f"{domain}.jsonl")),
                       queries=queries, qrels=read_mtrag_qrels(need("qrels", f"{domain}.tsv")),
                       conversations=conversations)


# --------------------------------------------------------------------------------------
# per-query metric files (JSON lines)
# --------------------------------------------------------------------------------------
def read_per_query_jsonl(path: PathLike, key: str = "qid") -> dict[str, dict[str, float]]:
    """Read per-query metric values written as JSON lines (``{"qid": ..., "<metric>": value}``).

    Non-numeric fields other than ``key`` are dropped; integer fields (e.g. ``n_retrieved``)
    are kept as floats.

    Raises:
        FormatError: missing ``key`` or a duplicate id.
    """
    out: dict[str, dict[str, float]] = {}
    for lineno, obj in iter_jsonl(path):
        qid = _field(path, lineno, obj, key)
        if qid in out:
            raise FormatError(path, lineno, f"duplicate {key} {qid!r}")
        out[qid] = {k: float(v) for k, v in obj.items()
                    if k != key and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return out


def write_per_query_jsonl(per_query: Mapping[str, Mapping[str, float]], path: PathLike,
                          key: str = "qid", extra: Mapping[str, Any] | None = None) -> Path:
    """Write per-query metric values as JSON lines, one object per query, in mapping order.

    Args:
        per_query: ``{qid: {metric: value}}`` (numpy scalars are converted; other JSON values
            such as booleans are written as they are).
        path: output file (``.gz`` writes gzip); parents are created.
        key: name of the id field.
        extra: constant fields added to every line (e.g. ``{"missing": "zero"}``).

    Returns:
        The written path.
    """
    out = Path(path)
    with atomic_text_writer(out) as f:
        for qid, values in per_query.items():
            row = {key: qid, **(extra or {}),
                   **{k: v.item() if hasattr(v, "item") else v for k, v in values.items()}}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out
