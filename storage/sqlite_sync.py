"""A local SQLite database of an object-store run, synced with the store at batch boundaries (issue #51).

The synthesis checkpoint database stays on this machine's disk (SQLite needs a real file: locks, WAL),
in the run's local directory. :func:`push_sqlite` publishes a consistent snapshot of it: SQLite's backup
API copies it into a temp file (a reader's view at one commit, while writers go on), and the file is
uploaded under a temp key then moved onto ``<run>/cache/<name>/<token>.sqlite``, so the object is whole or
absent. ``token`` names this local database (a random id kept next to it), so machines that run batches
of one run in parallel (Dask workers without a shared disk) each publish their own part and never
overwrite each other's.

:func:`pull_sqlite` merges every other part that changed since this database last saw it into the local
database (``INSERT OR IGNORE`` of every table: LangGraph's rows are keyed by thread, namespace,
checkpoint and task, and never change once written); with no local database yet the first part is
taken as it is. So a worker that picks up a lost worker's run resumes from that worker's last batch
boundary. A process holds ``<db>.sync.lock`` while it pulls or pushes.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import uuid
from pathlib import Path

import pyarrow.fs as pafs

from storage.locks import exclusive_file_lock
from storage.run_files import store_errors
from storage.store import RunStore

BUSY_TIMEOUT_S = 120.0


def _prefix(store: RunStore, db: Path) -> str:
    return store._p("cache", db.stem)


def _token(db: Path) -> str:
    tok = db.with_name(db.name + ".token")
    if not tok.is_file():
        tmp = tok.with_name(f".{tok.name}.{uuid.uuid4().hex}")
        tmp.write_text(uuid.uuid4().hex[:16])
        try:
            os.link(tmp, tok)          # first writer wins
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return tok.read_text().strip()


def _seen(db: Path) -> dict[str, list]:
    p = db.with_name(db.name + ".sync.json")
    try:
        return json.loads(p.read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _save_seen(db: Path, seen: dict[str, list]) -> None:
    p = db.with_name(db.name + ".sync.json")
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}")
    tmp.write_text(json.dumps(seen, sort_keys=True))
    os.replace(tmp, p)


def _version(info: pafs.FileInfo) -> list:
    return [info.size, info.mtime_ns]


def push_sqlite(store: RunStore, db: str | os.PathLike) -> str | None:
    """Upload a consistent snapshot of the local database ``db`` of an object-store run (no-op on a
    local run or without a database); returns the object's path."""
    db = Path(db)
    if not store.remote or not db.is_file():
        return None
    with exclusive_file_lock(db.with_name(db.name + ".sync.lock")):
        snap = db.with_name(f".{db.name}.snapshot-{uuid.uuid4().hex}")
        try:
            src = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S)
            try:
                dst = sqlite3.connect(snap)
                try:
                    src.backup(dst)
                finally:
                    dst.close()
            finally:
                src.close()
            key = f"{_prefix(store, db)}/{_token(db)}.sqlite"
            tmp = f"{_prefix(store, db)}/.{_token(db)}.sqlite.tmp-{uuid.uuid4().hex[:12]}"
            with store_errors(store):
                with open(snap, "rb") as f, store.fs.open_output_stream(tmp) as out:
                    shutil.copyfileobj(f, out, 8 * 1024 * 1024)
                store.fs.move(tmp, key)
                seen = _seen(db)
                seen[key] = _version(store.fs.get_file_info(key))     # our own part: nothing to merge
                _save_seen(db, seen)
        finally:
            snap.unlink(missing_ok=True)
    return key


def pull_sqlite(store: RunStore, db: str | os.PathLike) -> int:
    """Merge into the local database ``db`` every part of the store that changed since it last saw it
    (see module docstring); returns how many parts were merged (0 on a local run)."""
    db = Path(db)
    if not store.remote:
        return 0
    db.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_file_lock(db.with_name(db.name + ".sync.lock")):
        prefix = _prefix(store, db)
        with store_errors(store):
            if store.fs.get_file_info(prefix).type != pafs.FileType.Directory:
                return 0
            parts = [i for i in store.fs.get_file_info(pafs.FileSelector(prefix))
                     if i.type == pafs.FileType.File and i.path.endswith(".sqlite")
                     and not i.base_name.startswith(".")]
            seen = _seen(db) if db.is_file() else {}
            merged = 0
            for info in sorted(parts, key=lambda i: i.path):
                if seen.get(info.path) == _version(info):
                    continue
                tmp = db.with_name(f".{db.name}.part-{uuid.uuid4().hex}")
                try:
                    with store.fs.open_input_stream(info.path) as f, open(tmp, "wb") as out:
                        shutil.copyfileobj(f, out, 8 * 1024 * 1024)
                    if not db.is_file():
                        os.replace(tmp, db)
                    else:
                        _merge(db, tmp)
                finally:
                    tmp.unlink(missing_ok=True)
                seen[info.path] = _version(info)
                merged += 1
            _save_seen(db, seen)
    return merged


def _merge(db: Path, part: Path) -> None:
    """Every row of ``part`` that ``db`` lacks, in one transaction (tables ``db`` lacks are created)."""
    conn = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute("ATTACH DATABASE ? AS part", (str(part),))
        conn.execute("BEGIN IMMEDIATE")
        mine = {r[0] for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type='table'")}
        for name, sql in conn.execute("SELECT name, sql FROM part.sqlite_master WHERE type='table' "
                                      "AND name NOT LIKE 'sqlite_%'").fetchall():
            if name not in mine:
                conn.execute(sql)
            conn.execute(f'INSERT OR IGNORE INTO main."{name}" SELECT * FROM part."{name}"')
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE part")
    finally:
        conn.close()
