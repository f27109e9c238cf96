"""Recursive chunking (LangChain ``RecursiveCharacterTextSplitter``) with the reference rules.

Character mode (reference defaults): at most 2048 characters, no overlap, separators from
paragraph down to single characters; a trailing blank line is stripped, and a dangling tail
of at most 5 words after the last blank line (usually a section heading) is cut; chunks
shorter than ``min_size`` (default ``max_size // 2``) are not kept but reported.

Token mode measures length with the embedding model's tokenizer so every chunk fits the
encoder (default ``max_size`` = the model's max sequence length minus special tokens).

Chunk ids are ``doc_id#n`` (n counts kept chunks from 0) and every chunk carries its
character offsets into the cleaned document text: ``doc.text[start_char:end_char] == chunk.text``.
"""
from __future__ import annotations

from typing import Callable, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from embedding.encoder import load_encoder
from storage.records import Chunk, Document, Rejected

REFERENCE_SEPARATORS = ["\n\n", "\n", ".", "!", "?", ",", " ", "\u200b", "\uff0c", "\u3001", "\uff0e", "\u3002", ""]


class ChunkConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["chars", "tokens"] = "chars"
    max_size: int | None = Field(None, gt=0, description="max chunk length (chars, or tokens in token mode); "
                                 "default 2048 chars, or the encoder's limit in token mode")
    min_size: int | None = Field(None, ge=0, description="shorter chunks are reported, not kept; default max_size // 2")
    overlap: int = Field(0, ge=0)
    heading_tail_words: int = Field(5, ge=0, description="cut a tail of at most this many words after the last blank line")
    separators: list[str] = Field(default_factory=lambda: list(REFERENCE_SEPARATORS))
    model: str | None = Field(None, description="tokenizer source for token mode (default: the embedding model)")

    @model_validator(mode="after")
    def _check(self):
        # token mode's default max_size is the encoder's limit, known only once the model loads
        mx = self.max_size or (2048 if self.mode == "chars" else None)
        if mx is not None and self.min_size is not None and self.min_size > mx:
            raise ValueError(f"chunk.min_size ({self.min_size}) must not exceed chunk.max_size ({mx}): "
                             "every chunk would be rejected as too short")
        if mx is not None and self.overlap >= mx:
            raise ValueError(f"chunk.overlap ({self.overlap}) must be smaller than chunk.max_size ({mx})")
        return self


def _postprocess(text: str, tail_words: int) -> str:
    """Reference post-processing: strip a trailing blank line, cut a short dangling tail."""
    if text.endswith("\n\n"):
        return text.rstrip("\n")
    idx = text.rfind("\n\n")
    if idx != -1 and tail_words > 0:
        tail = text[idx + 2:]
        if len(tail.split()) <= tail_words:
            return text[:idx].rstrip()
    return text


def _splitter(cfg: ChunkConfig):
    from langchain_text_splitters import RecursiveCharacterTextSplitter   # costly: langchain-text-splitters

    if cfg.mode == "chars":
        size = cfg.max_size or 2048
        return RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=cfg.overlap, separators=cfg.separators,
                                              keep_separator="end", length_function=len, strip_whitespace=True), size, len
    enc = load_encoder(cfg.model)
    tok = enc.tokenizer
    size = cfg.max_size or (int(enc.max_seq_length) - 2)

    def n_tokens(s: str) -> int:
        return len(tok.encode(s, add_special_tokens=False))

    return RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=cfg.overlap, separators=cfg.separators,
                                          keep_separator="end", length_function=n_tokens,
                                          strip_whitespace=True), size, n_tokens


class Chunker:
    """The splitter of one :class:`ChunkConfig`, built once and applied batch by batch."""

    def __init__(self, cfg: ChunkConfig | None = None) -> None:
        self.cfg = cfg = cfg or ChunkConfig()
        self.splitter, self.size, self.length = _splitter(cfg)
        self.min_size = cfg.min_size if cfg.min_size is not None else self.size // 2
        if self.min_size > self.size:   # token mode: max_size defaulted to the encoder's limit
            raise ValueError(f"chunk.min_size ({self.min_size}) must not exceed chunk.max_size ({self.size}): "
                             "every chunk would be rejected as too short")

    def __call__(self, docs: Iterable[Document],
                 progress: Callable[[int], None] | None = None) -> tuple[list[Chunk], list[Rejected]]:
        cfg, length, min_size = self.cfg, self.length, self.min_size
        chunks: list[Chunk] = []
        rejected: list[Rejected] = []
        for doc in docs:
            pieces = self.splitter.split_text(doc.text)
            cursor = 0
            n = 0
            for piece in pieces:
                text = _postprocess(piece, cfg.heading_tail_words)
                start = doc.text.find(piece, cursor)
                if start < 0:  # never expected: the splitter returns substrings of the text
                    start = doc.text.find(text)
                cursor = start + max(1, len(piece) - cfg.overlap) if cfg.overlap else start + len(piece)
                if not text.strip():
                    continue
                if length(text) < min_size:
                    rejected.append(Rejected(f"{doc.source}@{start}", "chunk_too_short",
                                             f"chunk of {length(text)} "
                                             f"{'characters' if cfg.mode == 'chars' else 'tokens'} "
                                             f"at offset {start} is below chunk.min_size={min_size}",
                                             stage="chunk", doc_id=doc.doc_id))
                    continue
                chunks.append(Chunk(chunk_id=f"{doc.doc_id}#{n}", doc_id=doc.doc_id, chunk_index=n, title=doc.title,
                                    text=text, start_char=start, end_char=start + len(text)))
                n += 1
            if progress:
                progress(1)
        return chunks, rejected


def chunk_documents(docs: list[Document], cfg: ChunkConfig | None = None,
                    progress: Callable[[int], None] | None = None) -> tuple[list[Chunk], list[Rejected]]:
    """Split documents into chunks with offsets; report (not keep) chunks below ``min_size``."""
    return Chunker(cfg)(docs, progress)
