"""A shared cache of immutable part files on an object store (``embed.cache_dir = "s3://bucket/prefix"``).

The embedding cache (:class:`embedding.store.EmbeddingCache`) is a folder of append-only Parquet parts with
unique names (``<model>/part-<uuid>.parquet``), so it syncs with an object store by name alone, as the LLM cache
of an object-store run does (:class:`storage.run_files.ObjectMirror`): before a stage reads it, :func:`pull`
copies the parts this machine lacks into a local mirror (:meth:`storage.store.RunStore.local_dir` of the URI);
after the stage has written and compacted its parts, :func:`push` copies the parts the store lacks. A part is
written with one PUT, so a reader never sees half of one; a part another worker compacted away stays on the store
(its vectors are found in the merged part too, and a lookup takes the first one found). Hidden files (the cache's
lock, temp files) never leave the machine. The endpoint and credentials are the store's (``AWS_ENDPOINT_URL`` and
the AWS variables or profile): never in the URI.
"""
from __future__ import annotations

from pathlib import Path

from storage.filesystems import is_remote
from storage.run_files import ObjectMirror
from storage.store import RunStore


def _mirror(uri: str) -> tuple[Path, ObjectMirror]:
    store = RunStore(uri)
    return store.local_dir(), ObjectMirror(store, what=f"the shared cache {store.path}")


def pull(uri: str) -> Path:
    """The local folder of the cache ``uri``: the path itself for a local cache, else its mirror with every part
    of the store copied in (the ones it lacks)."""
    if not is_remote(uri):
        return Path(uri).expanduser()
    local, mirror = _mirror(uri)
    mirror.pull(local)
    return local


def push(uri: str) -> int:
    """Copy the parts of the local mirror that the store lacks to the cache ``uri`` (a local cache: nothing to
    do); returns how many were written."""
    if not is_remote(uri):
        return 0
    local, mirror = _mirror(uri)
    return mirror.push_new(local)
