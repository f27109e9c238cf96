"""``embed.cache_dir = "s3://..."``: the embedding cache shared through an object store (issue #51), against the
moto S3 server: a second machine (another ``MTR_LOCAL_CACHE``) encodes nothing the first one pushed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pytest

import embedding.encoder as emb
import embedding.stage as est
from flows.config import load_config
from storage import shared_cache
from storage.errors import StoreError
from storage.records import Chunk
from storage.schemas import CHUNKS, table_from_rows
from storage.store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _encoder(calls):
    def encode(texts, model=None, batch_size=64, progress=None, device="cpu"):
        calls.append(list(texts))
        v = np.array([[sum(map(ord, t)) % 97 + 1, len(t), 3.0, 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    return encode


def _on_store(uri: str) -> set[str]:
    """The cache's files on the store, relative to its prefix."""
    store = RunStore(uri)
    return {i.path[len(store._p()) + 1:] for i in store.fs.get_file_info(pafs.FileSelector(store._p(), recursive=True))
            if i.type == pafs.FileType.File}


def _machine(tmp_path: Path, name: str, cache_uri: str, monkeypatch, texts: list[str]):
    monkeypatch.setenv("MTR_LOCAL_CACHE", str(tmp_path / name / "local-cache"))
    cfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(tmp_path / name), "embed.cache_dir": cache_uri,
                                               "embed.batch_size": 2, "embed.device": "cpu"})
    store = RunStore(str(tmp_path / name / "run")).ensure()
    rows = [Chunk(f"d{i}#0", f"d{i}", 0, "", t, 0, len(t)).to_row() for i, t in enumerate(texts)]
    store.write_table("chunks", table_from_rows(rows, CHUNKS))
    return store, cfg


def test_an_s3_embedding_cache_is_shared_between_machines(tmp_path, monkeypatch, s3_store):
    bucket, env = s3_store
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    uri = f"{bucket}/shared/emb-{tmp_path.name}"
    texts = [f"passage number {i} about buckets" for i in range(9)]
    calls: list = []
    monkeypatch.setattr(emb, "encode", _encoder(calls))

    store_a, cfg_a = _machine(tmp_path, "a", uri, monkeypatch, texts)
    first = est.embed(store_a, cfg_a)
    assert first["newly_embedded"] == 9 and calls
    on_store = _on_store(uri)
    assert on_store and all(r.endswith(".parquet") and "/part-" in f"/{r}" for r in on_store)   # no lock, no temp
    assert shared_cache.push(uri) == 0                                  # nothing left to push

    calls.clear()
    store_b, cfg_b = _machine(tmp_path, "b", uri, monkeypatch, texts + ["a new passage"])
    second = est.embed(store_b, cfg_b)
    assert second["newly_embedded"] == 1 and calls == [["a new passage"]]   # the rest came from the store
    assert store_b.read_table("embeddings").to_pylist()[:9] == store_a.read_table("embeddings").to_pylist()
    assert len(_on_store(uri)) == len(on_store) + 1        # machine b's part was pushed


def test_a_local_embedding_cache_is_not_mirrored(tmp_path):
    assert shared_cache.pull(str(tmp_path / "emb")) == tmp_path / "emb"
    assert shared_cache.push(str(tmp_path / "emb")) == 0


def test_an_unreachable_shared_cache_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MTR_LOCAL_CACHE", str(tmp_path))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")            # nothing listens on port 9
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(StoreError) as err:
        shared_cache.pull("s3://mtr-none/emb")
    assert "\n" not in str(err.value) and "shared cache s3://mtr-none/emb" in str(err.value)
    assert "testing" not in str(err.value)
