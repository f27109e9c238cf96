"""Advisory file locks (``fcntl.flock``): one process at a time per run directory, and
serialised writes to the shared caches.

* :func:`claim_run` - the exclusive lock of a run directory (``<run>/.lock``, holding the
  holder's pid), taken without waiting: a second ``mtr`` command on the same run fails at once
  with :class:`RunLocked` naming the holder's pid. Re-entrant inside one process (``mtr
  synthesize`` runs the spine, then the synthesis flow, under one claim). A run directory the
  claim created is removed again when the command fails before any table was written.
* :func:`exclusive_file_lock` - a blocking lock for short critical sections (the embedding
  cache's check-then-write); every call opens its own descriptor, so threads of one process
  exclude each other as well as other processes.

The kernel drops a lock when its holder dies (even on ``kill -9``): there are no stale locks.

A run on an object store (``s3://...``) has no ``flock``: its lock is a lease object
(``<run>/.lock``) created with a conditional write, renewed while held and taken over only
once it ran out (:func:`storage.objectstore.acquire_lease`); a second writer gets the same
:class:`RunLocked` error.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from common.errors import require_visible
from storage.filesystems import is_remote
from storage.store import RunStore, StoreError

LOCK_NAME = ".lock"

_held: dict[str, list[int]] = {}     # realpath of a run dir -> [fd, depth] (re-entrant run locks)
_held_guard = threading.Lock()


class RunLocked(StoreError):
    """Another process holds the run directory's lock."""


def _os_error(path: Path, exc: OSError) -> StoreError:
    return StoreError(f"cannot create run directory {path}: {exc.strerror or exc}")


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _holder_pid(fd: int) -> int | None:
    """The pid the holder wrote (it writes it right after locking; give it a moment)."""
    for _ in range(50):
        pid = _read_pid(fd)
        if pid is not None:
            return pid
        time.sleep(0.02)
    return None


def _make_run_dir(path: Path) -> bool:
    """Create ``path`` (and parents); True when this call created it."""
    require_visible(path.name, "run id")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        return True
    except OSError as exc:   # exists already; PermissionError, a path component that is a file, EROFS...
        if isinstance(exc, FileExistsError) and path.is_dir():
            return False
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise StoreError(f"cannot create run directory {path}: {blocker} is not a directory") from None
        raise _os_error(path, exc) from None


@contextmanager
def run_lock(run_dir: str | os.PathLike) -> Iterator[bool]:
    """Hold the exclusive lock of ``run_dir`` (created when missing); yields whether this call
    created the directory. Raises :class:`RunLocked` at once when another process holds it."""
    if is_remote(run_dir):     # an object-store run: a lease object instead of flock
        with _remote_run_lock(RunStore(str(run_dir))) as created:
            yield created
        return
    path = Path(run_dir).expanduser().resolve()
    key = str(path)
    if _reenter(key):
        try:
            yield False
        finally:
            _leave(key)
        return
    created = _make_run_dir(path)
    try:
        fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise _os_error(path, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise _os_error(path, exc) from None
            pid = _holder_pid(fd)
            raise RunLocked(f"run directory {path} is in use by another mtr process "
                            f"(pid {pid if pid is not None else 'unknown'}); wait for it to finish "
                            "or use another run id") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        with _held_guard:
            _held[key] = [fd, 1]
        try:
            yield created
        finally:
            with _held_guard:
                del _held[key]
    finally:
        os.close(fd)   # closing the descriptor releases the lock


def _reenter(key: str) -> bool:
    """True (and one more hold counted) when this process already holds the lock of ``key``; see :func:`_leave`."""
    with _held_guard:
        if key in _held:
            _held[key][1] += 1
            return True
    return False


def _leave(key: str) -> None:
    with _held_guard:
        _held[key][1] -= 1


@contextmanager
def _remote_run_lock(store: RunStore) -> Iterator[bool]:
    from storage.objectstore import LeaseHeld, acquire_lease
    key = store.path
    if _reenter(key):
        try:
            yield False
        finally:
            _leave(key)
        return
    require_visible(store.run_id, "run id")
    created = not store.exists()
    try:
        lease = acquire_lease(store)
    except LeaseHeld as exc:
        raise RunLocked(str(exc)) from None
    with _held_guard:
        _held[key] = [-1, 1]
    try:
        yield created
    finally:
        with _held_guard:
            del _held[key]
        lease.release()


def discard_if_empty(run_dir: str | os.PathLike) -> bool:
    """Remove ``run_dir`` when no table was written into it (only the manifest, the lock and
    caches of a run that failed at once); returns whether it was removed."""
    store = RunStore(str(run_dir))
    if not store.exists() or store.tables():
        return False
    if store.remote:
        try:
            store.fs.delete_dir(store._root)
        except OSError:
            return False
        return True
    shutil.rmtree(store.path, ignore_errors=True)
    return True


@contextmanager
def claim_run(run_dir: str | os.PathLike) -> Iterator[bool]:
    """:func:`run_lock`, and when the body fails, remove the run directory again if this call
    created it and nothing was written (a failed run leaves no empty directory behind)."""
    with run_lock(run_dir) as created:
        try:
            yield created
        except BaseException:
            if created:
                discard_if_empty(run_dir)
            raise


@contextmanager
def exclusive_file_lock(path: str | os.PathLike) -> Iterator[None]:
    """Block until this thread holds an exclusive lock on ``path`` (created when missing)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
