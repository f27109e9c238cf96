"""The embed stage streams the chunks table: the same vectors as one in-memory call for any
batch size, the encoder sees the same blocks, a kill leaves no table and loses at most one
block, and cache lookups decode only the row groups holding the wanted hashes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import embedding.encoder as emb
import embedding.stage as est
import embedding.store as est_store
from embedding.store import EmbeddingCache, embed_with_cache
from embedding.vectors import read_embeddings
from flows.config import load_config
from storage.records import Chunk, content_hash
from storage.schemas import CHUNKS, table_from_rows
from storage.store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _stub(calls, fail_at=None):
    def encode(texts, model=None, batch_size=64, progress=None, device="cpu"):
        calls.append(list(texts))
        if fail_at is not None and len(calls) == fail_at:
            raise KeyboardInterrupt("killed")
        v = np.array([[sum(map(ord, t)) % 97 + 1, len(t), 3.0, 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    return encode


def _run(tmp_path: Path, name: str, n: int = 45, dup_every: int = 7):
    cfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(tmp_path), "embed.cache_dir": str(tmp_path / name),
                                               "embed.batch_size": 2, "embed.device": "cpu"})
    store = RunStore(str(tmp_path / name / "run")).ensure()
    texts = [f"text {i % dup_every if i % 5 == 0 else i}" for i in range(n)]   # some repeated texts
    rows = [Chunk(f"d{i}#0", f"d{i}", 0, "", t, 0, len(t)).to_row() for i, t in enumerate(texts)]
    store.write_table("chunks", table_from_rows(rows, CHUNKS))
    return store, cfg, rows


def test_any_batch_size_gives_the_same_table_and_blocks(tmp_path, monkeypatch):
    tables = {}
    blocks = {}
    for rows in (1, 4, 10_000):
        calls = []
        monkeypatch.setattr(emb, "encode", _stub(calls))
        store, cfg, chunk_rows = _run(tmp_path, f"b{rows}")
        summary = est.embed(store, cfg, batch_rows=rows)
        tables[rows] = store.read_table("embeddings").to_pylist()
        blocks[rows] = calls
        assert summary["newly_embedded"] == len({r["content_hash"] for r in chunk_rows})
    assert tables[1] == tables[4] == tables[10_000]
    # the reference: one in-memory embed_with_cache call over every text (its blocks and vectors)
    calls = []
    monkeypatch.setattr(emb, "encode", _stub(calls))
    _, _, chunk_rows = _run(tmp_path, "ref")
    vecs, _ = embed_with_cache([r["text"] for r in chunk_rows], [r["content_hash"] for r in chunk_rows],
                               EmbeddingCache(tmp_path / "ref-cache"), batch_size=2)
    assert blocks[1] == blocks[4] == blocks[10_000] == calls
    assert np.array_equal(np.stack([np.asarray(r["vector"], np.float32) for r in tables[1]]), vecs)
    ids, read = read_embeddings(RunStore(str(tmp_path / "b1" / "run")))
    assert ids == [r["chunk_id"] for r in chunk_rows] and np.array_equal(read, vecs)


def test_a_killed_embed_stage_leaves_no_table_and_resumes(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(emb, "encode", _stub(calls, fail_at=3))
    store, cfg, rows = _run(tmp_path, "k")
    with pytest.raises(KeyboardInterrupt):
        est.embed(store, cfg, batch_rows=4)
    assert not store.has_table("embeddings")
    assert not [p for p in Path(store.path).iterdir() if p.name.startswith(".")]
    done = sum(len(c) for c in calls[:2])                      # two blocks of 16 committed before the kill
    calls.clear()
    monkeypatch.setattr(emb, "encode", _stub(calls))
    summary = est.embed(store, cfg, batch_rows=4)
    unique = len({r["content_hash"] for r in rows})
    assert summary["newly_embedded"] == unique - done == sum(len(c) for c in calls)
    assert store.num_rows("embeddings") == len(rows)
    again = est.embed(store, cfg)
    assert again["newly_embedded"] == 0 and again["from_cache"] == len(rows)


def test_cache_lookup_decodes_only_the_row_groups_it_needs(tmp_path, monkeypatch):
    monkeypatch.setattr(est_store, "PART_ROW_GROUP", 10)
    cache = EmbeddingCache(tmp_path)
    hashes = [content_hash(str(i)) for i in range(95)]
    vecs = np.arange(95 * 3, dtype=np.float32).reshape(95, 3)
    parts = [cache.add("m", hashes[a:a + 19], vecs[a:a + 19]) for a in range(0, 95, 19)]
    cache.compact("m", parts)
    (part,) = (tmp_path / "m").glob("part-*.parquet")
    assert pq.ParquetFile(part).metadata.num_row_groups == 10
    extra = cache.add("m", ["f" * 64], np.ones((1, 3), np.float32))   # a second part
    reads = []
    real = pq.ParquetFile.read_row_group

    def spy(self, i, *a, **k):
        reads.append(i)
        return real(self, i, *a, **k)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    fresh = EmbeddingCache(tmp_path)                                  # index built from the parts on disk
    found = fresh.lookup("m", [hashes[42], hashes[47], "0" * 63 + "x"])
    assert set(found) == {hashes[42], hashes[47]} and np.array_equal(found[hashes[47]], vecs[47])
    assert reads == [4]                                              # one row group of one part
    assert fresh.contains("m", [hashes[0], "f" * 64, "nope"]).tolist() == [True, True, False]
    assert extra is not None


def test_one_row_parts_are_merged_once_there_are_many(tmp_path):
    """A query vector is a part of one row; past ``SMALL_PARTS_MAX`` small parts they are merged, so a lookup
    (which lists the parts) stays fast, and every vector is still found, by this cache and a fresh one."""
    cache = EmbeddingCache(tmp_path)
    hashes = [content_hash(f"q{i}") for i in range(3 * est_store.SMALL_PARTS_MAX)]
    vecs = np.arange(len(hashes) * 4, dtype=np.float32).reshape(-1, 4)
    for i, h in enumerate(hashes):
        cache.add("m", [h], vecs[i:i + 1])
        assert len(list((tmp_path / "m").glob("part-*.parquet"))) <= est_store.SMALL_PARTS_MAX
    for c in (cache, EmbeddingCache(tmp_path)):
        found = c.lookup("m", hashes)
        assert len(found) == len(hashes) and all(np.array_equal(found[h], vecs[i]) for i, h in enumerate(hashes))
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in (tmp_path / "m").glob("part-*.parquet")) == len(hashes)
