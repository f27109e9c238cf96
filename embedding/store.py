"""The embedding cache: vectors in an append-only folder of Parquet parts keyed by
``(model_id, content_hash)``, shared by runs and processes, so a chunk is never embedded twice
across runs; and :func:`embed_with_cache`, which encodes only what the cache lacks.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from embedding import encoder
from embedding.index import Index, keys_of
from storage.locks import exclusive_file_lock

SMALL_PART_ROWS = 2048     # a cache part with fewer rows is merged with the others (EmbeddingCache.add) ...
SMALL_PARTS_MAX = 32       # ... once there are more of them than this
PART_ROW_GROUP = 8192          # rows per row group of a cache part: a lookup decodes only the groups it needs
_RG_CACHE_BYTES = 128 * 1024 * 1024


def _matrix(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """[n, dim] float32 of a fixed-size-list column (one copy at most)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if len(arr) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dim = arr.type.list_size
    vals = arr.values.slice(arr.offset * dim, len(arr) * dim)
    return np.asarray(vals.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(arr), dim)


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
        self._index: dict[str, Index] = {}
        self._rg_cache: dict[tuple, tuple[pa.Table, int]] = {}   # (part, group, columns) -> (table, bytes)
        self._rg_bytes = 0

    def _folder(self, mid: str) -> Path:
        return self.dir / mid.replace("/", "__")

    def _parts(self, mid: str) -> list[Path]:
        folder = self._folder(mid)
        # sorted by name (a string key: ordering Path objects costs ~1 us a comparison)
        return sorted(folder.glob("part-*.parquet"), key=lambda p: p.name) if folder.exists() else []

    def _refresh(self, mid: str) -> Index:
        """The index of ``mid`` with every part on disk; parts already indexed are not read
        again unless one disappeared (compacted or removed): then it starts over."""
        names = {p.name for p in self._parts(mid)}
        idx = self._index.get(mid)
        if idx is None or not idx.part_names() <= names:
            idx = self._index[mid] = Index()
        for name in sorted(names - idx.part_names()):
            path = self._folder(mid) / name
            try:
                pf = pq.ParquetFile(path)
                keys = np.concatenate([keys_of(b.column(0).to_pylist())
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
            q, pid, row = idx.candidates(keys_of(hashes))
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
                idx.add_part(name, keys_of(hashes), groups)
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
        folder = self._folder(mid)
        with exclusive_file_lock(folder / self.LOCK):
            parts = [Path(p) for p in parts if p is not None and Path(p).exists()]
            if len(parts) < 2:
                return
            # first occurrence of each hash across the parts: keys first, full hashes only on equal keys
            keys = [keys_of(pq.read_table(p, columns=["content_hash"]).column(0).to_pylist()) for p in parts]
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
    mid = encoder.model_id(model)
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
            new = encoder.encode(missing_texts[start:start + step], model=model, batch_size=batch_size,
                                 progress=progress, device=device)
            if cache:
                parts.append(cache.add(mid, hs, new))
            found.update(zip(hs, new))
        if cache:
            cache.compact(mid, parts)
    if not texts:
        dim = encoder.load_encoder(model).get_embedding_dimension()
        return np.zeros((0, dim), dtype=np.float32), 0
    return np.stack([found[h] for h in hashes]).astype(np.float32), len(missing_texts)
