"""Reading vectors back: a fixed-size-list column as an ``[N, dim]`` float32 array (zero-copy
where Arrow allows), and a run's ``embeddings`` table as (chunk ids, vectors)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from storage.store import RunStore


def read_embeddings(store: RunStore) -> tuple[list[str], np.ndarray]:
    """Chunk ids and the [N, dim] float32 vectors: zero-copy from a single-row-group table,
    else filled row group by row group into one array (the vectors are held once)."""
    files = store.table_files("embeddings")
    if len(files) == 1:
        pf = pq.ParquetFile(files[0], filesystem=store.fs)
        if pf.metadata.num_row_groups > 1:
            n = pf.metadata.num_rows
            ids: list[str] = []
            out: np.ndarray | None = None
            r = 0
            for b in pf.iter_batches(batch_size=65536, columns=["chunk_id", "vector"]):
                ids += b.column("chunk_id").to_pylist()
                v = vectors_of(b.column("vector"))
                if out is None:
                    out = np.empty((n, v.shape[1]), dtype=np.float32)
                out[r:r + len(v)] = v
                r += len(v)
            return ids, out if out is not None else np.zeros((0, 0), dtype=np.float32)
    t = store.read_table("embeddings", columns=["chunk_id", "vector"])
    ids = t.column("chunk_id").to_pylist()
    if len(ids) == 0:
        return ids, np.zeros((0, 0), dtype=np.float32)
    return ids, vectors_of(t.column("vector"))


def vectors_of(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """[N, dim] float32 view of a fixed-size-list column: zero-copy for a single chunk
    without nulls (the values buffer itself), one copy when the column has several chunks."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    chunks = [ch for ch in chunks if len(ch)]
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    dim = chunks[0].type.list_size

    def view(ch: pa.FixedSizeListArray) -> np.ndarray:
        if ch.null_count:
            raise ValueError("embeddings table has null vectors; re-run `mtr embed`")
        vals = ch.values.slice(ch.offset * dim, len(ch) * dim)
        arr = vals.to_numpy(zero_copy_only=vals.type == pa.float32() and vals.null_count == 0)
        return arr.astype(np.float32, copy=False).reshape(len(ch), dim)

    if len(chunks) == 1:
        return view(chunks[0])
    out = np.empty((sum(len(ch) for ch in chunks), dim), dtype=np.float32)
    r = 0
    for ch in chunks:
        out[r:r + len(ch)] = view(ch)
        r += len(ch)
    return out
