"""The storage layer's error (re-exported by :mod:`storage.store`)."""
from __future__ import annotations


class StoreError(RuntimeError):
    """A run directory is missing, malformed or a table is unknown."""
