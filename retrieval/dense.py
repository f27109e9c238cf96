"""Dense retrieval: any sentence-transformers model, normalised cosine, exact blocked search.

Embeddings come from :mod:`embedding.encoder` (default model: the bundled MiniLM, offline)
and are reused from an :class:`~embedding.store.EmbeddingCache` keyed by
``(model id, sha256 of the encoded text)``, so a passage is never encoded twice across runs.

Search is exact: queries x corpus inner products of unit vectors (= cosine), computed in
blocks of at most ``max_block_bytes`` so memory stays bounded whatever the corpus size; each
block keeps its per-query top-k (``argpartition``) and blocks are merged. Ties at the
cut-off follow trec_eval (doc id descending), so the result equals a brute-force full sort
with that rule. ``use_faiss=True`` uses ``faiss.IndexFlatIP`` when FAISS is installed (it is
never required; FAISS picks its own members of a tie at the cut-off, the returned list is
then re-sorted with the trec rule).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from common.types import Run
from embedding.encoder import model_id
from storage.records import content_hash

from .base import Doc, RetrievalError, check_docs, check_k, check_queries, id_ranks, trec_sort

_META = "mtr_dense.json"


def _content_hash(text: str) -> str:
    return content_hash(text)


def faiss_available() -> bool:
    try:
        import faiss  # noqa: F401 - optional: faiss may be missing
    except Exception:  # noqa: BLE001 - any import problem means "not available"
        return False
    return True


def exact_topk(queries: np.ndarray, corpus: np.ndarray, k: int, rank: np.ndarray,
               max_block_bytes: int = 64 << 20) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k inner product search with bounded memory.

    Args:
        queries: (nq, dim) float32; corpus: (n, dim) float32.
        rank: doc-id order ranks (``base.id_ranks``) for the trec tie rule.
        max_block_bytes: size of one query-block x corpus-block float32 score matrix; peak
            extra memory is about 3x this (scores, argpartition indices, a boolean mask).

    Returns (indices, scores), both (nq, min(k, n)), best first per row.
    """
    nq, n = queries.shape[0], corpus.shape[0]
    kk = min(k, n)
    out_i = np.zeros((nq, kk), dtype=np.int64)
    out_s = np.zeros((nq, kk), dtype=np.float32)
    if nq == 0 or n == 0:
        return out_i[:, :0], out_s[:, :0]
    cells = max(1, max_block_bytes // 4)
    doc_block = int(min(n, max(kk, cells // min(nq, 256))))
    q_block = int(max(1, min(nq, cells // doc_block)))
    for qs in range(0, nq, q_block):
        qv = queries[qs:qs + q_block]
        bq = qv.shape[0]
        best_i = np.empty((bq, 0), dtype=np.int64)
        best_s = np.empty((bq, 0), dtype=np.float32)
        for ds in range(0, n, doc_block):
            sims = qv @ corpus[ds:ds + doc_block].T  # (bq, bd)
            bd = sims.shape[1]
            if bd > kk:
                part = np.argpartition(sims, bd - kk, axis=1)[:, bd - kk:]
                kth = np.take_along_axis(sims, part, axis=1).min(axis=1)
                # keep every member of a tie at this block's cut-off so the merge can apply the id rule
                n_ge = (sims >= kth[:, None]).sum(axis=1)
                if np.any(n_ge > kk):
                    width = int(n_ge.max())
                    cand_i = np.full((bq, width), -1, dtype=np.int64)
                    for r in range(bq):
                        sel = np.flatnonzero(sims[r] >= kth[r])
                        cand_i[r, :sel.size] = sel
                else:
                    cand_i = part
            else:
                cand_i = np.broadcast_to(np.arange(bd), (bq, bd))
            valid = cand_i >= 0
            cand_s = np.where(valid, np.take_along_axis(sims, np.where(valid, cand_i, 0), axis=1), -np.inf)
            cand_i = np.where(valid, cand_i + ds, -1)
            best_i = np.concatenate([best_i, cand_i], axis=1)
            best_s = np.concatenate([best_s, cand_s.astype(np.float32)], axis=1)
            if best_i.shape[1] > 4 * kk:
                best_i, best_s = _reduce(best_i, best_s, kk, rank)
        best_i, best_s = _reduce(best_i, best_s, kk, rank)
        out_i[qs:qs + bq] = best_i
        out_s[qs:qs + bq] = best_s
    return out_i, out_s


def _reduce(ci: np.ndarray, cs: np.ndarray, k: int, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: sort candidates by (score desc, doc id desc) and keep ``k`` (padding -1 last)."""
    r = np.where(ci >= 0, rank[np.maximum(ci, 0)], -1)
    order = np.lexsort((-r, -cs), axis=1)[:, :k]
    return np.take_along_axis(ci, order, axis=1), np.take_along_axis(cs, order, axis=1)


class DenseRetriever:
    """Bi-encoder retriever over normalised sentence-transformers embeddings.

    Args:
        model: model name / local path (``None`` = bundled MiniLM, see ``embedding.encoder``).
        cache_dir: an ``EmbeddingCache`` folder (or instance) for corpus and query vectors;
            ``None`` = no cache.
        batch_size: encoding batch size.
        query_prefix, doc_prefix: strings prepended before encoding (e.g. ``"query: "`` for E5).
        cache_queries: also cache query vectors.
        max_block_bytes: memory bound of one score block in the exact search.
        use_faiss: search with ``faiss.IndexFlatIP`` (error when FAISS is not installed).
    """

    name = "dense"

    def __init__(self, model: str | None = None, cache_dir=None, batch_size: int = 64,
                 query_prefix: str = "", doc_prefix: str = "", cache_queries: bool = True,
                 max_block_bytes: int = 64 << 20, use_faiss: bool = False):
        from embedding.store import EmbeddingCache   # costly: pyarrow, only when the retriever is built
        if use_faiss and not faiss_available():
            raise RetrievalError("use_faiss=True but FAISS is not installed (pip install faiss-cpu)")
        self.model = model
        if cache_dir is None or isinstance(cache_dir, EmbeddingCache):
            self.cache = cache_dir
        else:
            self.cache = EmbeddingCache(cache_dir)
        self.batch_size = batch_size
        self.query_prefix, self.doc_prefix = query_prefix, doc_prefix
        self.cache_queries = cache_queries
        self.max_block_bytes = int(max_block_bytes)
        self.use_faiss = use_faiss
        self.doc_ids: list[str] = []
        self.embeddings: np.ndarray | None = None
        self._rank: np.ndarray | None = None
        self._faiss = None
        self.n_encoded = 0  # corpus texts actually encoded by the last index() (rest came from the cache)

    def describe(self) -> dict:
        return {"retriever": self.name, "model": model_id(self.model), "query_prefix": self.query_prefix,
                "doc_prefix": self.doc_prefix, "backend": "faiss" if self.use_faiss else "exact-numpy",
                "n_docs": len(self.doc_ids), "n_encoded": self.n_encoded}

    # -- encoding ------------------------------------------------------------------------
    def _embed(self, texts: list[str], use_cache: bool) -> tuple[np.ndarray, int]:
        from embedding.store import embed_with_cache   # costly: pyarrow
        hashes = [_content_hash(t) for t in texts]
        return embed_with_cache(texts, hashes, self.cache if use_cache else None, model=self.model,
                                batch_size=self.batch_size)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        vecs, _ = self._embed([self.query_prefix + t for t in texts], self.cache_queries)
        return vecs

    # -- indexing ------------------------------------------------------------------------
    def index(self, docs: Sequence[Doc]) -> "DenseRetriever":
        ids, texts = check_docs(docs)
        vecs, n_new = self._embed([self.doc_prefix + t for t in texts], True)
        self.n_encoded = n_new
        return self.index_vectors(ids, vecs)

    def index_vectors(self, ids: Sequence[str], vectors: np.ndarray) -> "DenseRetriever":
        """Use precomputed (normalised) vectors as the corpus."""
        ids = list(ids)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            raise RetrievalError(f"vectors shape {vectors.shape} does not match {len(ids)} ids")
        if len(set(ids)) != len(ids):
            raise RetrievalError("duplicate doc ids")
        self.doc_ids = ids
        self.embeddings = vectors
        self._rank = id_ranks(ids)
        self._faiss = None
        if self.use_faiss:
            import faiss   # costly: faiss
            index = faiss.IndexFlatIP(vectors.shape[1])
            index.add(vectors)
            self._faiss = index
        return self

    # -- search --------------------------------------------------------------------------
    def _check_indexed(self) -> None:
        if self.embeddings is None:
            raise RetrievalError("DenseRetriever: call index() (or load()) before search()")

    def search_vectors(self, qvecs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(indices, scores) of the top-k docs for each query vector row."""
        self._check_indexed()
        k = check_k(k)
        qvecs = np.ascontiguousarray(qvecs, dtype=np.float32)
        if self._faiss is not None:
            kk = min(k, len(self.doc_ids))
            scores, idx = self._faiss.search(qvecs, kk)
            for r in range(idx.shape[0]):
                valid = idx[r] >= 0
                order = trec_sort(idx[r][valid], scores[r][valid], self._rank)
                idx[r, :valid.sum()] = idx[r][valid][order]
                scores[r, :valid.sum()] = scores[r][valid][order]
            return idx.astype(np.int64), scores
        return exact_topk(qvecs, self.embeddings, k, self._rank, self.max_block_bytes)

    def search(self, queries: Mapping[str, str], k: int = 10) -> Run:
        self._check_indexed()
        qids, texts, k = check_queries(queries, k)
        run: Run = {}
        if not qids:
            return run
        idx, sc = self.search_vectors(self.encode_queries(texts), k)
        ids = self.doc_ids
        for r, q in enumerate(qids):
            if not texts[r].strip():
                run[q] = {}
                continue
            run[q] = {ids[i]: float(s) for i, s in zip(idx[r].tolist(), sc[r].tolist()) if i >= 0}
        return run

    # -- persistence ---------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the doc ids, the vectors (``.npy``) and the settings to ``path``."""
        self._check_indexed()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        np.save(path / "embeddings.npy", self.embeddings)
        (path / "doc_ids.json").write_text(json.dumps(self.doc_ids, ensure_ascii=False), encoding="utf-8")
        (path / _META).write_text(json.dumps({"model": self.model, "model_id": model_id(self.model),
                                              "query_prefix": self.query_prefix, "doc_prefix": self.doc_prefix,
                                              "n_docs": len(self.doc_ids),
                                              "dim": int(self.embeddings.shape[1])}, indent=1), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, cache_dir=None, mmap: bool = False, **kwargs) -> "DenseRetriever":
        path = Path(path)
        if not (path / _META).exists():
            raise RetrievalError(f"{path} is not a dense index folder (no {_META})")
        meta = json.loads((path / _META).read_text(encoding="utf-8"))
        self = cls(model=meta["model"], cache_dir=cache_dir, query_prefix=meta["query_prefix"],
                   doc_prefix=meta["doc_prefix"], **kwargs)
        vecs = np.load(path / "embeddings.npy", mmap_mode="r" if mmap else None)
        ids = json.loads((path / "doc_ids.json").read_text(encoding="utf-8"))
        return self.index_vectors(ids, vecs)
