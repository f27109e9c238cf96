"""Frozen, typed records with a declared text view (cf. ir_datasets).

Ids are stable everywhere: ``doc_id`` (given, else a content hash), ``chunk_id =
doc_id#n``, ``conv_id`` and ``sample_id = conv_id:turn``. Tables are joined on ids,
never on row positions.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_doc_id(text: str) -> str:
    """Doc id derived from content when the source gives none (stable across runs)."""
    return "h" + content_hash(text)[:16]


def sample_id(conv_id: str, turn: int) -> str:
    return f"{conv_id}:{turn}"


@dataclass(frozen=True, slots=True)
class Document:
    doc_id: str
    title: str
    text: str
    source: str

    def default_text(self) -> str:
        """What gets chunked and indexed: the body text (titles are kept beside it)."""
        return self.text

    def to_row(self) -> dict:
        return {**asdict(self), "content_hash": content_hash(self.text), "n_chars": len(self.text)}


@dataclass(frozen=True, slots=True)
class Rejected:
    source: str
    reason: str
    detail: str
    stage: str = "load"
    doc_id: str | None = None
    duplicate_of: str | None = None

    def to_row(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str
    doc_id: str
    chunk_index: int
    title: str
    text: str
    start_char: int
    end_char: int

    def default_text(self) -> str:
        return self.text

    def to_row(self) -> dict:
        return {**asdict(self), "content_hash": content_hash(self.text)}


@dataclass(frozen=True, slots=True)
class Query:
    """One query of a retrieval benchmark file (BEIR, MTRAG).

    Attributes:
        qid: query id (MTRAG: ``<conversation_id><::><turn>``).
        text: the text to search with.
        original_text: the source text before cleaning (MTRAG keeps the ``|user|: `` prefixes
            here); ``None`` when the source has no such field.
    """

    qid: str
    text: str
    original_text: str | None = None
