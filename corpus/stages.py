"""Curate and chunk stages: package logic -> run tables. Plain functions (Prefect wraps them)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import pyarrow as pa

from corpus.chunk import chunk_documents
from corpus.clean import clean_documents
from corpus.dedup import find_duplicates
from corpus.load import load_corpus
from storage.records import Document, Rejected
from storage.schemas import CHUNKS, DOCUMENTS, REJECTED, table_from_rows
from storage.store import RunStore

Progress = Callable[[str, int, int], None]   # (label, advance, total)


def _rejected_table(rows: list[Rejected]) -> pa.Table:
    return table_from_rows([r.to_row() for r in rows], REJECTED)


def _replace_rejected(store: RunStore, stage: str, rows: list[Rejected]) -> None:
    old = store.read_table("rejected").to_pylist() if store.has_table("rejected") else []
    keep = [r for r in old if r["stage"] not in stage.split(",")]
    store.write_table("rejected", pa.concat_tables([table_from_rows(keep, REJECTED), _rejected_table(rows)]))


def curate(store: RunStore, input_path: str, cfg, progress: Progress | None = None) -> dict[str, Any]:
    """Load, clean and MinHash-dedup documents; write ``documents`` and ``rejected``."""
    docs, rejected = load_corpus(input_path, cfg.load)
    if progress:
        progress("load", len(docs) + len(rejected), len(docs) + len(rejected))
    kept, rej_clean = clean_documents(docs, cfg.clean)
    rejected += rej_clean
    dups = find_duplicates([d.doc_id for d in kept], [d.text for d in kept], cfg.dedup)
    dropped = {d.item_id: d for d in dups}
    by_id = {d.doc_id: d for d in kept}
    for d in dups:
        rejected.append(Rejected(by_id[d.item_id].source, "near_duplicate",
                                 f"MinHash Jaccard ~{d.jaccard:.2f} with kept document {d.duplicate_of}",
                                 stage="dedup", doc_id=d.item_id, duplicate_of=d.duplicate_of))
    final = [d for d in kept if d.doc_id not in dropped]
    if progress:
        progress("curate", len(kept), len(kept))
    store.write_table("documents", table_from_rows([d.to_row() for d in final], DOCUMENTS))
    _replace_rejected(store, "load,clean,dedup", rejected)
    return {"documents": len(final), "rejected": len(rejected),
            "rejected_by_reason": dict(Counter(r.reason for r in rejected))}


def read_documents(store: RunStore) -> list[Document]:
    t = store.read_table("documents", columns=["doc_id", "title", "text", "source"])
    return [Document(**r) for r in t.to_pylist()]


def chunk(store: RunStore, cfg, progress: Progress | None = None) -> dict[str, Any]:
    """Chunk the curated documents; optionally MinHash-dedup chunks; write ``chunks``."""
    docs = read_documents(store)
    total = len(docs)
    cb = (lambda n: progress("chunk", n, total)) if progress else None
    chunks, rejected = chunk_documents(docs, cfg.chunk, progress=cb)
    n_dups = 0
    if cfg.chunk_dedup and cfg.dedup.enabled:
        dups = find_duplicates([c.chunk_id for c in chunks], [c.text for c in chunks], cfg.dedup)
        dropped = {d.item_id: d for d in dups}
        n_dups = len(dups)
        src = {d.doc_id: d.source for d in docs}
        by_id = {c.chunk_id: c for c in chunks}
        for d in dups:
            c = by_id[d.item_id]
            rejected.append(Rejected(f"{src[c.doc_id]}@{c.start_char}", "near_duplicate",
                                     f"chunk {d.item_id} ~{d.jaccard:.2f} Jaccard with kept chunk {d.duplicate_of}",
                                     stage="chunk", doc_id=c.doc_id, duplicate_of=d.duplicate_of))
        chunks = [c for c in chunks if c.chunk_id not in dropped]
    store.write_table("chunks", table_from_rows([c.to_row() for c in chunks], CHUNKS))
    _replace_rejected(store, "chunk", rejected)
    lens = [len(c.text) for c in chunks]
    return {"documents": total, "chunks": len(chunks), "chunks_rejected": len(rejected),
            "chunk_duplicates": n_dups,
            "mean_chars": round(sum(lens) / len(lens), 1) if lens else 0.0}
