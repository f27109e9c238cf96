"""The embedding cache with the bundled MiniLM: a text is never embedded twice."""
import numpy as np

import embedding.encoder as emb
from embedding.encoder import encode
from embedding.store import EmbeddingCache, embed_with_cache
from storage.records import content_hash


def test_embedding_cache_never_embeds_twice(tmp_path, monkeypatch):
    calls = []
    real = emb.encode

    def counting(texts, **kw):
        calls.append(len(texts))
        return real(texts, **kw)

    monkeypatch.setattr(emb, "encode", counting)
    cache = EmbeddingCache(tmp_path)
    texts = ["reset my password", "change a forgotten password", "pizza in Naples", "reset my password"]
    hashes = [content_hash(t) for t in texts]
    v1, n1 = embed_with_cache(texts, hashes, cache)
    v2, n2 = embed_with_cache(texts[:3], hashes[:3], cache)
    assert (n1, n2) == (3, 0) and calls == [3]
    assert np.allclose(v1[:3], v2, atol=1e-6) and np.allclose(v1[0], v1[3])
    assert np.allclose(np.linalg.norm(v1, axis=1), 1, atol=1e-5)
    sims = v1 @ v1.T
    assert sims[0, 1] > 0.6 > 0.2 > sims[0, 2]   # bundled MiniLM, loaded offline
    assert encode([]).shape == (0, 384)
