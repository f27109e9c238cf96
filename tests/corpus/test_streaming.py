"""Curate and chunk stream their input in batches: any batch size gives the same tables, and a
stage that fails midway leaves no partial table (the previous one, if any, stays whole)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import corpus.stages as st
from corpus.dedup import DedupConfig, Deduper, find_duplicates
from flows.config import load_config
from storage.store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _corpus(root: Path) -> Path:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(800)]

    def para(n):
        return " ".join(rng.choice(words) for _ in range(n)) + "."
    docs = [{"id": f"d{i}", "title": f"T{i}", "text": "\n\n".join(para(rng.randint(30, 90)) for _ in range(3))}
            for i in range(40)]
    docs[7]["text"] = docs[2]["text"] + " tail"        # near duplicate of an earlier document
    docs[8]["text"] = ""                               # empty
    docs[9]["id"] = "d1"                               # duplicate id
    docs[10]["text"] = "tiny"                          # too short after cleaning
    docs[30]["text"] = docs[31]["text"]                # duplicate of a later document: the first is kept
    shared = para(40)                                  # one passage shared by two different documents
    docs[3]["text"] = shared + "\n\n" + docs[3]["text"]
    d = root / "in"
    d.mkdir()
    with open(d / "a.jsonl", "w") as f:
        for r in docs[:25]:
            f.write(json.dumps(r) + "\n")
        f.write("{broken\n")
    pq.write_table(pa.Table.from_pylist(docs[25:]), d / "b.parquet", row_group_size=4)
    (d / "c.md").write_text("# Note\n\n" + shared + "\n\n" + para(70) + "\n\n" + para(70))   # chunk-level dup
    (d / "d.bin").write_bytes(b"\x00\x01")
    return d


def _cfg(root: Path):
    return load_config(EXAMPLES / "demo.toml", {"runs_root": str(root), "chunk.max_size": 300,
                                                "chunk.min_size": 60, "clean.min_chars": 20})


def _tables(store: RunStore) -> dict[str, list[dict]]:
    return {n: store.read_table(n).to_pylist() for n in ("documents", "chunks", "rejected")}


def test_any_batch_size_gives_the_same_tables(tmp_path):
    src = _corpus(tmp_path)
    cfg = _cfg(tmp_path)
    out = {}
    for batch in (1, 3, 10_000):
        store = RunStore(str(tmp_path / f"run{batch}")).ensure()
        cur = st.curate(store, str(src), cfg, batch_docs=batch)
        ch = st.chunk(store, cfg, batch_docs=batch)
        out[batch] = (cur, ch, _tables(store))
    assert out[1] == out[3] == out[10_000]
    cur, ch, tables = out[1]
    reasons = cur["rejected_by_reason"]
    assert reasons["near_duplicate"] == 2 and reasons["duplicate_id"] == 1 and reasons["malformed"] == 1
    assert ch["chunk_duplicates"] >= 1 and ch["chunks"] == len(tables["chunks"])
    # rejections are listed load, then clean, then dedup, then chunk
    stages = [r["stage"] for r in tables["rejected"]]
    assert stages == sorted(stages, key=["load", "clean", "dedup", "chunk"].index)


def test_the_tables_are_written_in_row_groups_and_read_back_in_batches(tmp_path, monkeypatch):
    import storage.store as ss
    monkeypatch.setattr(ss, "ROW_GROUP_ROWS", 5)
    src = _corpus(tmp_path)
    cfg = _cfg(tmp_path)
    store = RunStore(str(tmp_path / "run")).ensure()
    st.curate(store, str(src), cfg, batch_docs=7)
    st.chunk(store, cfg, batch_docs=2)
    meta = pq.ParquetFile(store.table_path("chunks")).metadata
    assert meta.num_row_groups > 1 and max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) <= 5
    ref = RunStore(str(tmp_path / "ref")).ensure()
    monkeypatch.setattr(ss, "ROW_GROUP_ROWS", 65536)
    st.curate(ref, str(src), cfg)
    st.chunk(ref, cfg)
    assert _tables(store) == _tables(ref)


def test_a_stage_failing_midway_leaves_no_partial_table(tmp_path, monkeypatch):
    src = _corpus(tmp_path)
    cfg = _cfg(tmp_path)
    store = RunStore(str(tmp_path / "run")).ensure()
    st.curate(store, str(src), cfg, batch_docs=4)
    st.chunk(store, cfg, batch_docs=4)
    before = _tables(store)
    real = st.clean_documents
    calls = []

    def failing(docs, c=None):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")
        return real(docs, c)
    monkeypatch.setattr(st, "clean_documents", failing)
    with pytest.raises(KeyboardInterrupt):
        st.curate(store, str(src), cfg, batch_docs=4)
    real_chunker = st.Chunker

    class Failing(real_chunker):
        n = 0

        def __call__(self, docs, progress=None):
            Failing.n += 1
            if Failing.n == 2:
                raise RuntimeError("disk full")
            return super().__call__(docs, progress)
    monkeypatch.setattr(st, "Chunker", Failing)
    with pytest.raises(RuntimeError):
        st.chunk(store, cfg, batch_docs=4)
    assert _tables(store) == before                                  # the previous tables, whole
    assert not [p.name for p in Path(store.path).iterdir() if p.name.startswith(".")]   # no temp files
    fresh = RunStore(str(tmp_path / "fresh")).ensure()
    monkeypatch.setattr(st, "Chunker", real_chunker)
    Failing.n = 0
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        st.curate(fresh, str(src), cfg, batch_docs=4)
    assert not fresh.has_table("documents")                          # no table rather than part of one
    assert not [p.name for p in Path(fresh.path).iterdir() if p.name.startswith(".")]


def test_streaming_dedup_matches_one_call():
    rng = random.Random(1)
    base = [" ".join(f"t{rng.randint(0, 300)}" for _ in range(60)) for _ in range(30)]
    texts = base + [b + " x" for b in base[::3]] + ["tiny", "tiny"]
    ids = [f"i{k}" for k in range(len(texts))]
    whole = find_duplicates(ids, texts)
    d = Deduper(DedupConfig())
    streamed = [x for a in range(0, len(ids), 4) for x in d.add(ids[a:a + 4], texts[a:a + 4])]
    assert streamed == whole and len(whole) == 11
