"""Question/answer semantic fit with the bundled MiniLM (the spine's embedding model, loaded
once per process from the installed package, offline). Texts are encoded in one batch per
call and cached, so a turn costs one small forward pass."""
from __future__ import annotations

import numpy as np

_CACHE: dict[str, np.ndarray] = {}
_MAX = 20000


def _encoder():
    from embedding.encoder import load_encoder
    return load_encoder(None, "cpu")


def embed_many(texts: list[str]) -> list[np.ndarray]:
    """Normalised MiniLM vectors of ``texts`` (uncached ones encoded in one batch)."""
    todo = list(dict.fromkeys(t for t in texts if t not in _CACHE))
    if todo:
        import torch
        threads = torch.get_num_threads()
        torch.set_num_threads(1)        # a few short texts: one thread is several times faster on a busy CPU
        try:
            vecs = _encoder().encode(todo, normalize_embeddings=True, show_progress_bar=False, batch_size=64)
        finally:
            torch.set_num_threads(threads)
        if len(_CACHE) > _MAX:
            _CACHE.clear()
        for t, v in zip(todo, vecs):
            _CACHE[t] = np.asarray(v, dtype=np.float32)
    return [_CACHE[t] for t in texts]


def similarity(a: str, b: str) -> float:
    """Cosine similarity of two texts (MiniLM, normalised)."""
    va, vb = embed_many([a, b])
    return float(va @ vb)


def best_similarity(a: str, others: list[str]) -> float:
    """The highest cosine of ``a`` with any of ``others`` (0.0 for none)."""
    if not others:
        return 0.0
    vecs = embed_many([a, *others])
    return float(max(vecs[0] @ v for v in vecs[1:]))
