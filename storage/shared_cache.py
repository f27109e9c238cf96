"""A shared cache of immutable part files on an object store (``embed.cache_dir = "s3://bucket/prefix"``).

The embedding cache (:class:`embedding.store.EmbeddingCache`) is a folder of append-only Parquet parts with
unique names (``<model>/part-<uuid>.parquet``), so it syncs with an object store by name alone: before a stage
reads it, :func:`pull` copies the parts this machine lacks into a local mirror (under
:func:`storage.filesystems.local_cache_root`, keyed by the URI); after the stage has written and compacted its
parts, :func:`push` copies the parts the store lacks. A part is written with one PUT, so a reader never sees half
of one; a part another worker compacted away stays on the store (its vectors are found in the merged part too, and
a lookup takes the first one found). Hidden files (the cache's lock, temp files) never leave the machine. The
endpoint and credentials are the store's (``AWS_ENDPOINT_URL`` and the AWS variables or profile): never in the URI.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.fs as pafs

from storage.errors import StoreError
from storage.filesystems import _resolve, is_remote, local_cache_root


def mirror_dir(uri: str) -> Path:
    """The local mirror of the shared cache ``uri``."""
    key = hashlib.sha256(uri.rstrip("/").encode("utf-8")).hexdigest()[:12]
    name = uri.rstrip("/").rsplit("/", 1)[-1] or "cache"
    p = local_cache_root() / "shared" / f"{name}-{key}"
    p.mkdir(parents=True, exist_ok=True)
    return p


def _visible(rel: str) -> bool:
    return not any(part.startswith(".") for part in rel.split("/"))


def _remote(fs: pafs.FileSystem, root: str) -> set[str]:
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return set()
    return {i.path[len(root) + 1:] for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))
            if i.type == pafs.FileType.File and _visible(i.path[len(root) + 1:])}


def _local(base: Path) -> set[str]:
    return {p.relative_to(base).as_posix() for p in base.rglob("*")
            if p.is_file() and _visible(p.relative_to(base).as_posix())}


def _errors(uri: str, exc: OSError) -> StoreError:
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return StoreError(f"object store error on the shared cache {uri}: {first}")


def pull(uri: str) -> Path:
    """The local folder of the cache ``uri``: the path itself for a local cache, else its mirror with every part
    of the store copied in (the ones it lacks)."""
    if not is_remote(uri):
        return Path(uri).expanduser()
    local = mirror_dir(uri)
    fs, root = _resolve(uri)
    try:
        for rel in sorted(_remote(fs, root) - _local(local)):
            dst = local / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(f".{dst.name}.part")
            with fs.open_input_stream(f"{root}/{rel}") as src, open(tmp, "wb") as out:
                out.write(src.read())
            tmp.replace(dst)        # a reader of the mirror sees a whole part or none
    except OSError as exc:
        raise _errors(uri, exc) from None
    return local


def push(uri: str) -> int:
    """Copy the parts of the local mirror that the store lacks to the cache ``uri`` (a local cache: nothing to
    do); returns how many were written."""
    if not is_remote(uri):
        return 0
    local = mirror_dir(uri)
    fs, root = _resolve(uri)
    try:
        todo = sorted(_local(local) - _remote(fs, root))
        for rel in todo:
            with fs.open_output_stream(f"{root}/{rel}") as out:     # one PUT: the part appears whole
                out.write((local / rel).read_bytes())
    except OSError as exc:
        raise _errors(uri, exc) from None
    return len(todo)
