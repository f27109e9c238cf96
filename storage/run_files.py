"""Folders and objects of an object-store run that are not tables (issue #51).

A run on ``s3://`` writes its folders (``export/``, ``audit/``, ``eval/``) on this machine's disk first, in
its local directory (:meth:`storage.store.RunStore.local_dir`), where the writers (exports, reports, the card's
editors) work with plain files as on a local run; :func:`push_dir` then copies the folder to the store, and
:func:`pull_dir` brings it back to another machine's local directory (e.g. a Dask worker that edits the
card). :class:`ObjectMirror` writes immutable content-addressed entries (the LLM cache) through to the store
and fetches the ones a fresh machine lacks. On a local run every function here is a no-op: the local
directory *is* the run directory.

Folders on the store are published file by file (each object appears whole; a reader may see a mix of
the old and new folder while a push runs), files no longer in the local folder are deleted afterwards,
and ``cache/`` subfolders and hidden temp files stay local.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow.fs as pafs

from storage.errors import StoreError
from storage.store import RunStore

_THREADS = 8


@contextmanager
def store_errors(store: RunStore, what: str | None = None) -> Iterator[None]:
    """An ``OSError`` of the store (down, access denied) as the one-line :class:`StoreError` of the run
    (``what``: what the line names instead of the run's URI)."""
    try:
        yield
    except (FileNotFoundError, StoreError):
        raise
    except OSError as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise StoreError(f"object store error on {what or store.path}: {first}") from None


def location(store: RunStore, *parts: str) -> str:
    """Where a folder of the run is, for people: its URI on an object store, else the local path."""
    if store.remote:
        return "/".join([store.path, *parts])
    return str(Path(store.path).joinpath(*parts))


def _skip(rel: str) -> bool:
    return any(p == "cache" or p.startswith(".") for p in rel.split("/"))


def _local_files(base: Path) -> dict[str, Path]:
    out = {}
    if base.is_dir():
        for p in base.rglob("*"):
            rel = p.relative_to(base).as_posix()
            if p.is_file() and not _skip(rel):
                out[rel] = p
    return out


def _remote_files(store: RunStore, prefix: str) -> dict[str, pafs.FileInfo]:
    info = store.fs.get_file_info(prefix)
    if info.type != pafs.FileType.Directory:
        return {}
    return {i.path[len(prefix) + 1:]: i for i in store.fs.get_file_info(pafs.FileSelector(prefix, recursive=True))
            if i.type == pafs.FileType.File and not _skip(i.path[len(prefix) + 1:])}


def _put(store: RunStore, key: str, data: bytes) -> None:
    with store.fs.open_output_stream(key) as f:      # one PUT: the object appears whole or not at all
        f.write(data)


def push_dir(store: RunStore, *parts: str) -> int:
    """Copy the local folder ``parts`` of an object-store run to the store (no-op on a local run);
    returns how many files were written."""
    if not store.remote:
        return 0
    base, prefix = store.local_dir(*parts), store._p(*parts)
    local = _local_files(base)
    with store_errors(store):
        remote = _remote_files(store, prefix)
        with ThreadPoolExecutor(_THREADS) as pool:
            list(pool.map(lambda kv: _put(store, f"{prefix}/{kv[0]}", kv[1].read_bytes()), local.items()))
        for rel in set(remote) - set(local):
            try:
                store.fs.delete_file(f"{prefix}/{rel}")
            except FileNotFoundError:  # pragma: no cover - deleted meanwhile
                pass
    return len(local)


def pull_dir(store: RunStore, *parts: str) -> Path:
    """The local folder ``parts`` of the run, brought up to date from the store first on an
    object-store run (files of another size or missing here are fetched)."""
    base = store.local_dir(*parts)
    if not store.remote:
        return base
    prefix = store._p(*parts)
    with store_errors(store):
        remote = _remote_files(store, prefix)

        def fetch(item: tuple[str, pafs.FileInfo]) -> None:
            rel, info = item
            dst = base / rel
            if dst.is_file() and dst.stat().st_size == info.size:
                return
            dst.parent.mkdir(parents=True, exist_ok=True)
            with store.fs.open_input_stream(info.path) as f:
                data = f.read()
            tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, dst)
        with ThreadPoolExecutor(_THREADS) as pool:
            list(pool.map(fetch, remote.items()))
    return base


class ObjectMirror:
    """Immutable entries of a local folder written through to ``<run>/<parts>/`` on the store (the LLM
    cache of an object-store run: one object per content-addressed entry), and the entries a local
    folder lacks fetched back (:meth:`pull`), so a fresh machine resuming the run repeats no LLM call."""

    def __init__(self, store: RunStore, *parts: str, what: str | None = None) -> None:
        self.store = store
        self.prefix = store._p(*parts)
        self.what = what        # what an error line names (default: the run's URI)

    def __repr__(self) -> str:
        return f"ObjectMirror({location(self.store)!r})"

    def push(self, items: Iterable[tuple[str, bytes]]) -> None:
        """Write each ``(relative name, bytes)`` to the store (in parallel; returns once all are written)."""
        items = list(items)
        if not items:
            return
        with store_errors(self.store, self.what):
            if len(items) == 1:
                _put(self.store, f"{self.prefix}/{items[0][0]}", items[0][1])
                return
            with ThreadPoolExecutor(min(_THREADS, len(items))) as pool:
                list(pool.map(lambda kv: _put(self.store, f"{self.prefix}/{kv[0]}", kv[1]), items))

    def push_new(self, local_root: str | os.PathLike) -> int:
        """Write every entry of ``local_root`` that the store lacks (hidden files and ``cache/`` folders
        stay local); returns how many."""
        local = _local_files(Path(local_root))
        with store_errors(self.store, self.what):
            missing = set(local) - set(_remote_files(self.store, self.prefix))
        self.push((rel, local[rel].read_bytes()) for rel in sorted(missing))
        return len(missing)

    def pull(self, local_root: str | os.PathLike) -> int:
        """Fetch every entry of the store that ``local_root`` lacks; returns how many."""
        root = Path(local_root)
        with store_errors(self.store, self.what):
            remote = _remote_files(self.store, self.prefix)
            missing = [(rel, i) for rel, i in remote.items() if not (root / rel).is_file()]

            def fetch(item: tuple[str, pafs.FileInfo]) -> None:
                rel, info = item
                dst = root / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                with self.store.fs.open_input_stream(info.path) as f:
                    data = f.read()
                tmp = dst.with_name(f".{dst.name}.pull-{os.getpid()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, dst)
            with ThreadPoolExecutor(_THREADS) as pool:
                list(pool.map(fetch, missing))
        return len(missing)
