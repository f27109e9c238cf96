"""BM25 on bm25s with our own tokenizer, trec_eval tie rule and a persisted, reusable index.

Defaults (the README's orientation setting): ``method="lucene"``, ``k1=1.2``, ``b=0.75``;
tokens = maximal runs of Unicode letters/digits (``[^\\W_]+``) of the lower-cased text,
no stemming, no stopwords; query tokens count with multiplicity (a word twice in the query
scores twice). Lucene scoring: ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` times
``tf / (tf + k1 * (1 - b + b * dl / avgdl))``.

Only documents with a positive score are returned (with ``lucene``, whose idf is always
positive: the documents sharing at least one token with the query; ``robertson``/``atire``
can give a term idf 0), so a query with no known tokens gives an empty list, not an error;
``bm25l``/``bm25+`` add a non-occurrence score to every document. Ties at the cut-off follow
trec_eval (doc id descending).

Index persistence: with ``index_dir`` set, the index is stored in
``<index_dir>/<key>`` where ``key`` hashes the corpus (ids and texts) and every scoring /
tokenizer parameter; a later ``index()`` of the same corpus with the same parameters loads it
instead of rebuilding (``loaded_from_cache`` tells which happened). Beside a run:
``BM25Retriever(index_dir=run_dir / "cache" / "bm25")``.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from common.text import TOKEN_PATTERN, bm25_stopwords
from common.types import Run

from .base import (Doc, RetrievalError, check_docs, check_k, check_queries, corpus_fingerprint, id_ranks,
                   topk_trec)


def _bm25s():
    """The bm25s module, its logger kept at WARNING (bm25s sets it to DEBUG on import, which put
    "Building index from IDs" on the console of every command)."""
    import bm25s   # costly: bm25s
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


DEFAULT_PATTERN = TOKEN_PATTERN
INDEX_FORMAT = 1
_META = "mtr_bm25.json"
_IDS = "doc_ids.json"


@dataclass(frozen=True)
class BM25Tokenizer:
    """Regex word tokenizer with optional stopword removal and Snowball stemming.

    Args:
        pattern: regex of one token (default: runs of Unicode letters/digits).
        lowercase: lower-case the text first (``str.lower``).
        stopwords: ``None``, ``"en"`` (bm25s' English list) or an explicit collection.
            Applied before stemming.
        stemmer: ``None`` or a PyStemmer algorithm name (e.g. ``"english"``).
    """

    pattern: str = DEFAULT_PATTERN
    lowercase: bool = True
    stopwords: str | tuple[str, ...] | None = None
    stemmer: str | None = None
    _re: re.Pattern = field(init=False, repr=False, compare=False)
    _stop: frozenset = field(init=False, repr=False, compare=False)
    _stem: object = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_re", re.compile(self.pattern))
        sw = self.stopwords
        if sw is None:
            stop: frozenset = frozenset()
        elif isinstance(sw, str):
            if sw.lower() not in ("en", "english"):
                raise RetrievalError(f"unknown stopword list {sw!r} (use 'en' or a collection of words)")
            stop = bm25_stopwords()
        else:
            words = tuple(sorted(set(sw)))
            object.__setattr__(self, "stopwords", words)
            stop = frozenset(words)
        object.__setattr__(self, "_stop", stop)
        stem = None
        if self.stemmer:
            try:
                import Stemmer   # costly: PyStemmer (stemming only)
            except ImportError as exc:  # pragma: no cover - PyStemmer is a declared dependency
                raise RetrievalError("stemming needs PyStemmer (pip install PyStemmer)") from exc
            try:
                stem = Stemmer.Stemmer(self.stemmer)
            except KeyError as exc:
                raise RetrievalError(f"unknown stemmer {self.stemmer!r}; "
                                     f"available: {sorted(Stemmer.algorithms())}") from exc
        object.__setattr__(self, "_stem", stem)

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        toks = self._re.findall(text)
        if self._stop:
            toks = [t for t in toks if t not in self._stop]
        if self._stem is not None and toks:
            toks = self._stem.stemWords(toks)
        return toks

    def config(self) -> dict:
        sw = self.stopwords
        return {"pattern": self.pattern, "lowercase": self.lowercase,
                "stopwords": list(sw) if isinstance(sw, tuple) else sw, "stemmer": self.stemmer}

    @classmethod
    def from_config(cls, cfg: Mapping) -> "BM25Tokenizer":
        sw = cfg.get("stopwords")
        return cls(pattern=cfg.get("pattern", DEFAULT_PATTERN), lowercase=cfg.get("lowercase", True),
                   stopwords=tuple(sw) if isinstance(sw, list) else sw, stemmer=cfg.get("stemmer"))


class BM25Retriever:
    """BM25 retriever (bm25s scoring matrix, our tokenizer and top-k).

    Args:
        method: bm25s scoring variant: ``lucene`` (default), ``robertson``, ``atire``,
            ``bm25l``, ``bm25+``.
        k1, b, delta: BM25 parameters (``delta`` only for bm25l / bm25+).
        idf_method: bm25s idf variant when it differs from ``method`` (e.g. ``method="atire",
            idf_method="robertson"`` is rank_bm25's ``BM25Okapi`` for positive idfs).
        tokenizer: a :class:`BM25Tokenizer` (default: the orientation tokenizer), or None.
        stemmer, stopwords: shortcuts building the tokenizer (``stemmer="english"``,
            ``stopwords="en"``); only when ``tokenizer`` is not given.
        index_dir: folder holding persisted indexes (one sub-folder per corpus+params key);
            ``None`` keeps the index in memory only.
        n_threads: threads for ``search`` (queries are split across them); ``0`` = one
            per CPU core. Default ``1``: scoring is numpy ``ufunc.at`` scatter-adds, which hold
            the GIL, and 2 threads measured no faster than 1 (100k docs, 500 queries).
        dtype: float dtype of the stored per-term scores (bm25s default ``float32``).
        mmap: memory-map a persisted index when loading it.
    """

    name = "bm25"

    def __init__(self, method: str = "lucene", k1: float = 1.2, b: float = 0.75, delta: float = 0.5,
                 idf_method: str | None = None,
                 tokenizer: BM25Tokenizer | None = None, stemmer: str | None = None,
                 stopwords: str | Iterable[str] | None = None, index_dir: str | os.PathLike | None = None,
                 n_threads: int | None = None, dtype: str = "float32", mmap: bool = False):
        for m in (method, idf_method or method):
            if m not in ("lucene", "robertson", "atire", "bm25l", "bm25+"):
                raise RetrievalError(f"unknown BM25 method {m!r}")
        if tokenizer is None:
            sw = stopwords if stopwords is None or isinstance(stopwords, str) else tuple(stopwords)
            tokenizer = BM25Tokenizer(stopwords=sw, stemmer=stemmer)
        elif stemmer is not None or stopwords is not None:
            raise RetrievalError("pass either tokenizer= or stemmer=/stopwords=, not both")
        self.method, self.k1, self.b, self.delta = method, float(k1), float(b), float(delta)
        self.idf_method = idf_method if idf_method and idf_method != method else None
        self.tokenizer = tokenizer
        self.index_dir = Path(index_dir) if index_dir is not None else None
        self.n_threads = n_threads
        self.dtype = dtype
        self.mmap = mmap
        self._bm25 = None
        self.doc_ids: list[str] = []
        self._rank: np.ndarray | None = None
        self.index_path: Path | None = None
        self.loaded_from_cache = False

    # -- parameters ----------------------------------------------------------------------
    def params(self) -> dict:
        p = {"method": self.method, "k1": self.k1, "b": self.b, "dtype": self.dtype,
             "tokenizer": self.tokenizer.config()}
        if self.method in ("bm25l", "bm25+"):
            p["delta"] = self.delta
        if self.idf_method:
            p["idf_method"] = self.idf_method
        return p

    def describe(self) -> dict:
        return {"retriever": self.name, **self.params(), "index_path": str(self.index_path or ""),
                "loaded_from_cache": self.loaded_from_cache}

    # -- indexing ------------------------------------------------------------------------
    def index(self, docs: Sequence[Doc], show_progress: bool = False) -> "BM25Retriever":
        ids, texts = check_docs(docs)
        self.loaded_from_cache = False
        self.index_path = None
        if self.index_dir is not None:
            key = corpus_fingerprint(ids, texts, {"format": INDEX_FORMAT, **self.params()})[:32]
            path = self.index_dir / key
            if (path / _META).exists():
                self._load_dir(path)
                if self.doc_ids != ids:  # pragma: no cover - would need a hash collision
                    raise RetrievalError(f"persisted BM25 index {path} does not match the corpus")
                self.loaded_from_cache = True
                self.index_path = path
                return self
        self._build(ids, texts, show_progress)
        if self.index_dir is not None:
            self.index_path = self._save_atomic(path)
        return self

    def _build(self, ids: list[str], texts: list[str], show_progress: bool) -> None:
        bm25s = _bm25s()
        vocab: dict[str, int] = {}
        corpus_ids: list[array] = []  # int32 arrays: ~4 bytes a token instead of ~36 in lists
        tok = self.tokenizer
        setdef = vocab.setdefault
        for t in texts:
            corpus_ids.append(array("i", [setdef(w, len(vocab)) for w in tok(t)]))
        if not vocab:
            raise RetrievalError("the corpus has no tokens at all")
        model = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method,
                           idf_method=self.idf_method, dtype=self.dtype)
        model.index((corpus_ids, vocab), create_empty_token=False, show_progress=show_progress)
        self._set(model, ids)

    def _set(self, model, ids: list[str]) -> None:
        self._bm25 = model
        self.doc_ids = ids
        self._rank = id_ranks(ids)
        sc = model.scores
        self._data = np.asarray(sc["data"])
        self._indices = np.asarray(sc["indices"])
        self._indptr = np.asarray(sc["indptr"])
        self._vocab = model.vocab_dict
        self._nnoc = getattr(model, "nonoccurrence_array", None)

    # -- persistence ---------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the index (bm25s files + doc ids + our parameters) to ``path``."""
        self._check_indexed()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self._bm25.save(str(path), show_progress=False)
        (path / _IDS).write_text(json.dumps(self.doc_ids, ensure_ascii=False), encoding="utf-8")
        (path / _META).write_text(json.dumps({"format": INDEX_FORMAT, "n_docs": len(self.doc_ids),
                                              **self.params()}, indent=1), encoding="utf-8")
        return path

    def _save_atomic(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            self.save(tmp)
            try:
                os.replace(tmp, path)
            except OSError:  # another process won the race: keep theirs
                if not (path / _META).exists():
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, mmap: bool = False, n_threads: int | None = None) -> "BM25Retriever":
        """Load an index written by :meth:`save` (parameters come from the folder)."""
        path = Path(path)
        meta_p = path / _META
        if not meta_p.exists():
            raise RetrievalError(f"{path} is not a BM25 index folder (no {_META})")
        meta = json.loads(meta_p.read_text(encoding="utf-8"))
        if meta.get("format") != INDEX_FORMAT:
            raise RetrievalError(f"{path}: index format {meta.get('format')} != {INDEX_FORMAT}")
        self = cls(method=meta["method"], k1=meta["k1"], b=meta["b"], delta=meta.get("delta", 0.5),
                   idf_method=meta.get("idf_method"),
                   tokenizer=BM25Tokenizer.from_config(meta["tokenizer"]), n_threads=n_threads,
                   dtype=meta["dtype"], mmap=mmap)
        self._load_dir(path)
        self.index_path = path
        self.loaded_from_cache = True
        return self

    def _load_dir(self, path: Path) -> None:
        bm25s = _bm25s()
        model = bm25s.BM25.load(str(path), mmap=self.mmap, show_progress=False, verbosity=0)
        ids = json.loads((path / _IDS).read_text(encoding="utf-8"))
        self._set(model, ids)

    # -- search --------------------------------------------------------------------------
    def _check_indexed(self) -> None:
        if self._bm25 is None:
            raise RetrievalError("BM25Retriever: call index() (or load()) before search()")

    def query_token_ids(self, text: str) -> list[int]:
        """Known token ids of ``text`` in query order, repeated tokens repeated (multiplicity)."""
        vocab = self._vocab
        return [i for i in map(vocab.get, self.tokenizer(text)) if i is not None]

    def score_ids(self, token_ids: Sequence[int]) -> np.ndarray:
        """Full score vector of a query given as token ids: sum of the ids' BM25 columns.

        Accumulates in the index dtype, one column per occurrence in query order, exactly as
        bm25s' own scorer does (so scores are bit-identical to ``bm25s.BM25.get_scores``).
        """
        self._check_indexed()
        scores = np.zeros(len(self.doc_ids), dtype=self._data.dtype)
        data, indices, indptr = self._data, self._indices, self._indptr
        for t in token_ids:
            s, e = indptr[t], indptr[t + 1]
            np.add.at(scores, indices[s:e], data[s:e])
        if self._nnoc is not None:
            scores += self._nnoc[np.asarray(token_ids, dtype=np.int64)].sum()
        return scores

    def score_weighted(self, weights: Mapping[int, float]) -> np.ndarray:
        """Full score vector for a weighted bag of token ids (sum_t w_t * bm25(t, d))."""
        self._check_indexed()
        scores = np.zeros(len(self.doc_ids), dtype=self._data.dtype)
        data, indices, indptr = self._data, self._indices, self._indptr
        for t, w in weights.items():
            s, e = indptr[t], indptr[t + 1]
            np.add.at(scores, indices[s:e], (data[s:e] * w).astype(scores.dtype, copy=False))
        if self._nnoc is not None:
            scores += sum(w * float(self._nnoc[t]) for t, w in weights.items())
        return scores

    def _search_one(self, text: str, k: int) -> dict[str, float]:
        ids_q = self.query_token_ids(text)
        if not ids_q:
            return {}
        idx, sc = topk_trec(self.score_ids(ids_q), k, self._rank, min_score=0.0)
        ids = self.doc_ids
        return {ids[i]: float(s) for i, s in zip(idx.tolist(), sc.tolist())}

    def search_token_weights(self, queries: Mapping[str, Mapping[str, float]], k: int = 10) -> Run:
        """Search with explicit weighted terms ``{qid: {token: weight}}`` (tokens as the index has them)."""
        self._check_indexed()
        k = check_k(k)
        run: Run = {}
        for qid, tw in queries.items():
            w = {self._vocab[t]: float(x) for t, x in tw.items() if t in self._vocab and x}
            if not w:
                run[qid] = {}
                continue
            idx, sc = topk_trec(self.score_weighted(w), k, self._rank, min_score=0.0)
            run[qid] = {self.doc_ids[i]: float(s) for i, s in zip(idx.tolist(), sc.tolist())}
        return run

    def _threads(self, n_queries: int) -> int:
        n = self.n_threads
        if n is None or n_queries < 32:
            return 1
        if n == 0:
            return os.cpu_count() or 1
        return max(1, int(n))

    def search(self, queries: Mapping[str, str], k: int = 10) -> Run:
        """Top-``k`` documents per query, ``{qid: {doc_id: score}}`` (empty dict when no token matches)."""
        self._check_indexed()
        qids, texts, k = check_queries(queries, k)
        nt = self._threads(len(qids))
        if nt <= 1:
            results = [self._search_one(t, k) for t in texts]
        else:
            with ThreadPoolExecutor(max_workers=nt) as ex:
                results = list(ex.map(lambda t: self._search_one(t, k), texts, chunksize=16))
        return dict(zip(qids, results))
