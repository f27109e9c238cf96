"""Temporary: the encoder moved to :mod:`embedding.encoder` (the cache to :mod:`embedding.store`).

Only ``agents/synth/offline/semantic.py`` still imports ``load_encoder`` from here; it is being
rewritten and will import :mod:`embedding.encoder` itself, and then this module goes.
"""
from embedding.encoder import load_encoder

__all__ = ["load_encoder"]
