"""The MTRAG fixture layout: ``queries/<d>_<type>.jsonl`` (``qid``, ``text``,
``original_text``), ``qrels/<d>.tsv`` (TREC qrels), ``corpus/<d>.jsonl.gz`` (``doc_id``,
``title``, ``text``) and ``conversations/<d>.jsonl`` (one record per turn); every file may be
plain or gzipped."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from common.types import Qrels
from storage.formats.io import FormatError, PathLike, first_file, get_field, iter_jsonl
from storage.formats.trec import read_trec_qrels
from storage.records import Document, Query

MTRAG_QUERY_TYPES = ("lastturn", "questions", "rewrite")


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


def read_mtrag_queries(path: PathLike) -> list[Query]:
    """Read MTRAG queries (``qid``, ``text``, ``original_text``), in file order.

    Raises:
        FormatError: missing/ill-typed fields or a duplicate ``qid``.
    """
    out: list[Query] = []
    seen: set[str] = set()
    for lineno, obj in iter_jsonl(path):
        qid = get_field(path, lineno, obj, "qid")
        if qid in seen:
            raise FormatError(path, lineno, f"duplicate query id {qid!r}")
        seen.add(qid)
        out.append(Query(qid=qid, text=get_field(path, lineno, obj, "text"),
                         original_text=get_field(path, lineno, obj, "original_text", default=None,
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
        doc_id = get_field(path, lineno, obj, "doc_id")
        if doc_id in corpus:
            raise FormatError(path, lineno, f"duplicate document id {doc_id!r}")
        corpus[doc_id] = Document(doc_id=doc_id, title=get_field(path, lineno, obj, "title", default="") or "",
                                  text=get_field(path, lineno, obj, "text"), source=f"{path}:{lineno}")
    return corpus


def _str_list(path: PathLike, lineno: int, obj: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = get_field(path, lineno, obj, key, list)
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
        for i, msg in enumerate(get_field(path, lineno, obj, "history", list)):
            if not isinstance(msg, dict):
                raise FormatError(path, lineno, f"history[{i}] must be an object")
            role = get_field(path, lineno, msg, "role")
            if role not in ("user", "agent"):
                raise FormatError(path, lineno, f"history[{i}].role must be 'user' or 'agent', got {role!r}")
            history.append(Message(role=role, text=get_field(path, lineno, msg, "text")))
        contexts = []
        for i, ctx in enumerate(get_field(path, lineno, obj, "judged_contexts", list)):
            if not isinstance(ctx, dict):
                raise FormatError(path, lineno, f"judged_contexts[{i}] must be an object")
            contexts.append(JudgedContext(doc_id=get_field(path, lineno, ctx, "doc_id"),
                                          label=get_field(path, lineno, ctx, "label", nullable=True),
                                          labels=_str_list(path, lineno, ctx, "labels"),
                                          text=get_field(path, lineno, ctx, "text")))
        turn = get_field(path, lineno, obj, "turn", int)
        if turn < 1:
            raise FormatError(path, lineno, f"turn must be >= 1, got {turn}")
        out.append(MtragTurn(
            task_id=get_field(path, lineno, obj, "task_id"),
            conversation_id=get_field(path, lineno, obj, "conversation_id"),
            conversation_index=get_field(path, lineno, obj, "conversation_index", int),
            turn=turn,
            domain=get_field(path, lineno, obj, "domain"),
            collection=get_field(path, lineno, obj, "collection"),
            answerability=get_field(path, lineno, obj, "answerability"),
            question_type=_str_list(path, lineno, obj, "question_type"),
            multi_turn=_str_list(path, lineno, obj, "multi_turn"),
            other_enrichments=get_field(path, lineno, obj, "other_enrichments", dict, default={}),
            in_qrels=get_field(path, lineno, obj, "in_qrels", bool),
            history=tuple(history),
            reference_answer=get_field(path, lineno, obj, "reference_answer"),
            judged_contexts=tuple(contexts),
        ))
    return out


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
        p = first_file(base / sub / name, base / sub / f"{name}.gz")
        if p is None:
            raise FileNotFoundError(f"MTRAG folder {base} has no {sub}/{name}[.gz]")
        return p

    queries = {qt: read_mtrag_queries(need("queries", f"{domain}_{qt}.jsonl")) for qt in query_types}
    conv_path = first_file(base / "conversations" / f"{domain}.jsonl",
                           base / "conversations" / f"{domain}.jsonl.gz")
    conversations = read_mtrag_conversations(conv_path) if with_conversations and conv_path else []
    return MtragDomain(domain=domain, corpus=read_mtrag_corpus(need("corpus", f"{domain}.jsonl")),
                       queries=queries, qrels=read_mtrag_qrels(need("qrels", f"{domain}.tsv")),
                       conversations=conversations)
