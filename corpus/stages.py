"""Curate and chunk stages: package logic -> run tables. Plain functions (Prefect wraps them).

Both stages stream: documents are read, cleaned, deduplicated and written ``batch_docs`` at a
time (the input files through :func:`corpus.load.iter_corpus`, the ``documents`` table by
Parquet row groups), so memory holds one batch of texts plus the MinHash signatures of the
kept items, never the corpus. The tables are written through ``RunStore.table_writer``: a
table appears whole or not at all, and the rows are the same for any batch size.
"""
from __future__ import annotations

from collections import Counter
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, TypeVar

import pyarrow as pa

from corpus.chunk import Chunker
from corpus.clean import clean_documents
from corpus.dedup import Deduper
from corpus.load import CorpusError, iter_corpus, unique_ids
from storage.records import Document, Rejected
from storage.schemas import CHUNKS, DOCUMENTS, REJECTED, table_from_rows
from storage.store import RunStore

Progress = Callable[[str, int, int], None]   # (label, advance, total)
BATCH_DOCS = 1024   # documents per streamed batch (curate and chunk)
T = TypeVar("T")


def _batched(items: Iterable[T], n: int) -> Iterator[list[T]]:
    it = iter(items)
    while batch := list(islice(it, n)):
        yield batch


def _rejected_table(rows: list[Rejected]) -> pa.Table:
    return table_from_rows([r.to_row() for r in rows], REJECTED)


def _replace_rejected(store: RunStore, stage: str, rows: list[Rejected]) -> None:
    old = store.read_table("rejected").to_pylist() if store.has_table("rejected") else []
    keep = [r for r in old if r["stage"] not in stage.split(",")]
    store.write_table("rejected", pa.concat_tables([table_from_rows(keep, REJECTED), _rejected_table(rows)]))


def curate(store: RunStore, input_path: str, cfg, progress: Progress | None = None,
           batch_docs: int = BATCH_DOCS) -> dict[str, Any]:
    """Load, clean and MinHash-dedup documents; write ``documents`` and ``rejected``.

    Streams ``batch_docs`` documents at a time; duplicate ids keep the first occurrence.
    Rejections are listed load, then clean, then dedup (each in input order).
    """
    rej_load: list[Rejected] = []
    rej_clean: list[Rejected] = []
    rej_dedup: list[Rejected] = []
    seen: dict[str, str] = {}            # doc id -> source of its first occurrence
    deduper = Deduper(cfg.dedup)
    n_kept = n_final = 0
    with store.table_writer("documents", DOCUMENTS) as out:
        for batch in _batched(iter_corpus(input_path, cfg.load), max(1, batch_docs)):
            docs: list[Document] = []
            for item in unique_ids(batch, seen):
                (rej_load if isinstance(item, Rejected) else docs).append(item)
            if progress:
                progress("load", len(batch), 0)
            kept, rej = clean_documents(docs, cfg.clean)
            del docs
            rej_clean += rej
            final, dropped = _drop_duplicates(deduper, kept, lambda d: d.doc_id)
            for d, dup in dropped:
                rej_dedup.append(Rejected(d.source, "near_duplicate",
                                          f"MinHash Jaccard ~{dup.jaccard:.2f} with kept document {dup.duplicate_of}",
                                          stage="dedup", doc_id=d.doc_id, duplicate_of=dup.duplicate_of))
            out.write(table_from_rows([d.to_row() for d in final], DOCUMENTS))
            n_kept += len(kept)
            n_final += len(final)
            if progress:
                progress("curate", len(kept), 0)
    rejected = rej_load + rej_clean + rej_dedup
    _replace_rejected(store, "load,clean,dedup", rejected)
    return {"documents": n_final, "rejected": len(rejected),
            "rejected_by_reason": dict(Counter(r.reason for r in rejected))}


def _drop_duplicates(deduper: Deduper, items: list, key) -> tuple[list, list]:
    """(kept items, [(item, duplicate record)]) after adding ``items`` (documents or chunks, with
    ``.text``) to the running MinHash ``deduper``; order is kept."""
    dups = {d.item_id: d for d in deduper.add([key(x) for x in items], [x.text for x in items])}
    kept = [x for x in items if key(x) not in dups]
    return kept, [(x, dups[key(x)]) for x in items if key(x) in dups]


def iter_documents(store: RunStore, batch_docs: int = BATCH_DOCS) -> Iterator[list[Document]]:
    """The curated documents, ``batch_docs`` at a time (one Parquet row group in memory)."""
    for b in store.iter_batches("documents", columns=["doc_id", "title", "text", "source"], batch_size=batch_docs):
        yield [Document(**r) for r in b.to_pylist()]


def read_documents(store: RunStore) -> list[Document]:
    return [d for batch in iter_documents(store) for d in batch]


def chunk(store: RunStore, cfg, progress: Progress | None = None, batch_docs: int = BATCH_DOCS) -> dict[str, Any]:
    """Chunk the curated documents; optionally MinHash-dedup chunks; write ``chunks``.

    Streams the ``documents`` table ``batch_docs`` documents at a time.
    """
    total = store.num_rows("documents")
    cb = (lambda n: progress("chunk", n, total)) if progress else None
    chunker = Chunker(cfg.chunk)
    deduper = Deduper(cfg.dedup) if cfg.chunk_dedup and cfg.dedup.enabled else None
    rej_short: list[Rejected] = []
    rej_dup: list[Rejected] = []
    n_chunks = n_chars = 0
    with store.table_writer("chunks", CHUNKS) as out:
        for docs in iter_documents(store, max(1, batch_docs)):
            chunks, rejected = chunker(docs, progress=cb)
            rej_short += rejected
            if deduper is not None:
                chunks, dropped = _drop_duplicates(deduper, chunks, lambda c: c.chunk_id)
                src = {d.doc_id: d.source for d in docs} if dropped else {}
                for c, d in dropped:
                    rej_dup.append(Rejected(f"{src[c.doc_id]}@{c.start_char}", "near_duplicate",
                                            f"chunk {d.item_id} ~{d.jaccard:.2f} Jaccard with kept chunk "
                                            f"{d.duplicate_of}", stage="chunk", doc_id=c.doc_id,
                                            duplicate_of=d.duplicate_of))
            out.write(table_from_rows([c.to_row() for c in chunks], CHUNKS))
            n_chunks += len(chunks)
            n_chars += sum(len(c.text) for c in chunks)
    _replace_rejected(store, "chunk", rej_short + rej_dup)
    if total and not n_chunks and rej_short and not rej_dup:
        raise CorpusError(f"every chunk of the {total} documents is shorter than chunk.min_size="
                          f"{chunker.min_size} ({cfg.chunk.mode}), so nothing is left to embed or cluster: lower "
                          "chunk.min_size (mtr chunk --min-size N) or use longer documents (table `rejected`, "
                          "reason chunk_too_short)")
    return {"documents": total, "chunks": n_chunks, "chunks_rejected": len(rej_short) + len(rej_dup),
            "chunk_duplicates": len(rej_dup),
            "mean_chars": round(n_chars / n_chunks, 1) if n_chunks else 0.0}
