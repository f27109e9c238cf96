"""Corpus-wide search indexes built once, persisted, memory-mapped and shared.

``persisted_retriever(kind, directory, corpus_key, ids, texts, ...)`` returns an indexed
``bm25`` / ``dense`` / ``hybrid`` / ``rrf`` retriever over ``(ids, texts)`` whose components
live under ``directory``, one folder per component::

    <directory>/bm25-<digest>/   mtr_index.json (the key) + the BM25 index (BM25Retriever.save)
    <directory>/dense-<digest>/  mtr_index.json + embeddings.npy, doc_ids.json (DenseRetriever.save)

``<digest>`` hashes the component's key: the caller's ``corpus_key`` (a hash of the corpus ids
and texts), the index format and the component's settings (BM25 scoring and tokenizer; the
dense model id and document prefix). A component is built once: into a temporary folder,
``mtr_index.json`` last, then renamed into place (a killed build leaves nothing that is read; of two
concurrent builders the first rename wins and the other's copy is dropped). Every later
open -- another batch, another process, a rerun -- loads it memory-mapped (bm25s ``mmap=True``;
``np.load(mmap_mode="r")``) and a process keeps one open copy per folder, so the synthesis
batches of a run share one index. A changed corpus or setting has another digest: the old
folder is never read for it.

The dense component takes precomputed vectors (``vectors``: a callable giving the
``[len(ids), dim]`` float32 rows in ``ids`` order, e.g. the run's own chunk embeddings) when
the caller has them under the same model; otherwise it encodes through the embedding cache,
as :class:`~retrieval.dense.DenseRetriever` does. Results equal a retriever built in memory
from the same inputs (same arrays, same scoring; tested).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from embedding.encoder import model_id

from .base import RetrievalError, Retriever
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .registry import RETRIEVERS, indexed_retriever

FORMAT = 1
_META = "mtr_index.json"

BUILDS: Counter = Counter()          # component builds in this process, by component ("bm25", "dense")
_OPEN: dict[str, Any] = {}           # component folder -> the opened (memory-mapped) component
MAX_OPEN = 8
_LOCK = threading.RLock()


def _digest(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def _read_meta(folder: Path) -> dict | None:
    try:
        return json.loads((folder / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _publish(tmp: Path, final: Path, key: dict) -> None:
    """Write ``mtr_index.json`` (the key) last, then rename ``tmp`` to ``final`` (keep a winner's copy)."""
    (tmp / _META).write_text(json.dumps({"key": key}, sort_keys=True), encoding="utf-8")
    try:
        os.replace(tmp, final)
    except OSError:
        if _read_meta(final) is None:       # not a concurrent winner: a broken leftover, replace it
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)


def _component(directory: Path, name: str, key: dict, build: Callable[[Path], None], load: Callable[[Path], Any]):
    """Open the component ``name`` with ``key`` under ``directory``: from this process's open
    copies, else from disk, else built (then loaded back memory-mapped)."""
    folder = directory / f"{name}-{_digest(key)}"
    ident = str(folder.resolve())
    with _LOCK:
        hit = _OPEN.get(ident)
        if hit is not None:
            return hit
        meta = _read_meta(folder)
        if meta is None or meta.get("key") != json.loads(json.dumps(key, sort_keys=True)):
            if folder.exists():               # a leftover without a (matching) key file: rebuild
                shutil.rmtree(folder, ignore_errors=True)
            directory.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=directory))
            try:
                build(tmp)
                BUILDS[name] += 1
                _publish(tmp, folder, key)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        comp = load(folder)
        while len(_OPEN) >= MAX_OPEN:         # a long-lived process: drop the oldest open copy
            _OPEN.pop(next(iter(_OPEN)))
        _OPEN[ident] = comp
        return comp


def component_folders(directory: str | os.PathLike) -> list[Path]:
    """The complete component folders under ``directory`` (tests, ``mtr runs`` housekeeping)."""
    d = Path(directory)
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".") and (p / _META).exists()) \
        if d.is_dir() else []


def forget_open() -> None:
    """Drop this process's open copies (the next open reads the folders again; tests)."""
    with _LOCK:
        _OPEN.clear()


def persisted_retriever(kind: str, directory: str | os.PathLike, corpus_key: str, ids: Sequence[str],
                        texts: Sequence[str], *, vectors: Callable[[], np.ndarray] | None = None,
                        model: str | None = None, cache_dir: str | os.PathLike | None = None,
                        **fusion: Any) -> Retriever:
    """An indexed retriever ``kind`` over ``(ids, texts)`` with persisted components (see module docstring).

    Args:
        kind: ``bm25``, ``dense``, ``hybrid`` or ``rrf``.
        directory: where the component folders live (e.g. ``<run>/cache/uniqueness``).
        corpus_key: a hash of the corpus ids and texts (the caller's; part of every component key).
        ids, texts: the corpus (read only when a component is built).
        vectors: a callable giving the dense rows of ``ids`` (normalised, float32) under ``model``,
            or None when it has none; None (or a None result) = encode through the cache.
        model: the dense encoder (None = the bundled MiniLM).
        cache_dir: the embedding cache (query vectors; corpus vectors when ``vectors`` is None).
        fusion: ``weights``, ``depth``, ``rrf_k`` of ``hybrid`` / ``rrf``.
    """
    kind = kind.lower().strip()
    if kind not in RETRIEVERS:
        raise RetrievalError(f"unknown retriever {kind!r}; choose one of {', '.join(RETRIEVERS)}")
    if len(ids) != len(texts):
        raise RetrievalError(f"{len(ids)} ids for {len(texts)} texts")
    directory = Path(directory)
    bm25 = dense = None
    if kind != "dense":
        proto = BM25Retriever()

        def build_bm25(tmp: Path) -> None:
            BM25Retriever().index(list(zip(ids, texts))).save(tmp)

        bm25 = _component(directory, "bm25", {"format": FORMAT, "corpus": corpus_key, "n": len(ids), **proto.params()},
                          build_bm25, lambda f: BM25Retriever.load(f, mmap=True))
    if kind != "bm25":
        def build_dense(tmp: Path) -> None:
            vecs = vectors() if vectors is not None else None
            if vecs is not None:
                r = DenseRetriever(model=model).index_vectors(list(ids), vecs)
            else:
                r = DenseRetriever(model=model, cache_dir=cache_dir).index(list(zip(ids, texts)))
            r.save(tmp)

        dense = _component(directory, "dense", {"format": FORMAT, "corpus": corpus_key, "n": len(ids),
                                                "model": model_id(model), "doc_prefix": ""},
                           build_dense, lambda f: DenseRetriever.load(f, cache_dir=cache_dir, mmap=True))
    return indexed_retriever(kind, (), bm25=bm25, dense=dense, **fusion)
