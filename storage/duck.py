"""Read-only DuckDB access to a run's Parquet tables (read in place, never copied).

The connection is a sandbox, not a keyword filter: an in-memory database whose only
visible data are views over the run's own Parquet files (``allowed_paths``), with
``enable_external_access=false`` (no other file, no COPY/EXPORT/ATTACH target, no URL),
no extension install or autoload, no spilling to disk (``temp_directory=''``), a
``memory_limit``, and ``lock_configuration=true`` so SQL cannot undo any of it. The
statement check in :func:`check_read_only` only gives a clearer message for the common
mistakes; the sandbox is what makes writes impossible.

Which files are the run's (:func:`run_tables`): the tables named in the run's manifest, each a
regular file directly in the run directory (``<name>.parquet``) or regular part files in a
regular folder (``<name>/*.parquet``), checked without following links (``lstat``) and by
``realpath``. A symbolic link (a table pointing at another run or outside the runs root), a
special file, or a ``.parquet`` file the manifest does not name is never read: it is listed
as skipped. A table whose file cannot be opened (truncated, corrupt) fails only the queries
that read it, with one line naming it. Every query runs under a time limit (an interrupt
from a timer thread) and the memory limit; its result is streamed and refused once it
outgrows the memory limit.

A run on an object store (``s3://...``, :attr:`RunStore.remote`) is read the same way but
through Arrow: each table named in the manifest is an Arrow dataset over its objects (read with
the run's ``pyarrow.fs`` filesystem, credentials from the AWS variables) registered on the
connection; DuckDB's httpfs is never loaded, ``allowed_paths`` is empty and external access
stays off, so SQL still reaches nothing but the run's tables.
"""
from __future__ import annotations

import os
import re
import stat
import threading
import time
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from storage.store import MANIFEST, RunStore, StoreError

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_LIMIT = "2GB"


class QueryRefused(StoreError):
    """The SQL is not a read-only query."""


_ALLOWED = {"SELECT", "EXPLAIN"}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4,
          "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4}


def parse_size(text: str) -> int:
    """Bytes of a size such as ``2GB`` or ``512MiB`` (DuckDB's units); raises StoreError."""
    m = _SIZE_RE.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise StoreError(f"invalid memory limit {text!r}: give a size such as 2GB or 512MB")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "B").lower()])


def check_read_only(sql: str) -> None:
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryRefused(f"could not parse the SQL: {exc}") from exc
    if not statements:
        raise QueryRefused("no SQL statement given")
    for st in statements:
        kind = st.type.name if hasattr(st.type, "name") else str(st.type)
        if kind not in _ALLOWED:
            raise QueryRefused(f"only read-only SELECT queries are allowed; refused a {kind} statement")


def _sql_list(items: list[str]) -> str:
    return "[" + ", ".join(_sql_str(f) for f in items) + "]"


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass
class RunTables:
    """The files :func:`run_tables` lets a query read, and what it left out (and why)."""

    tables: dict[str, list[str]] = field(default_factory=dict)     # table -> its files (realpaths)
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (entry relative to the run, reason)

    @property
    def files(self) -> list[str]:
        return sorted({f for files in self.tables.values() for f in files})


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link: links are never followed"
    if stat.S_ISDIR(mode):
        return "a directory, not a table file"
    return "not a regular file"


def _regular(path: str, root: str) -> str | None:
    """Why ``path`` is not a regular file of the run (checked with lstat and realpath), or None."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return _kind(st.st_mode)
    real = os.path.realpath(path)
    if real != os.path.normpath(path) or os.path.commonpath([real, root]) != root:
        return "resolves outside the run directory"
    return None


def run_tables(store: RunStore) -> RunTables:
    """The run's readable tables (see the module docstring) and the entries skipped."""
    if store.remote:
        return _remote_tables(store)
    root = os.path.realpath(store.path)
    if not os.path.isdir(root):
        raise StoreError(f"run directory {store.path} does not exist")
    if not os.path.isfile(os.path.join(root, MANIFEST)):
        raise StoreError(f"{store.path} has no {MANIFEST}; is it a run directory?")
    listed = set(store.read_manifest().get("tables") or {})
    out = RunTables()
    with os.scandir(root) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.name.startswith(".") or e.name == "cache":      # temp files, locks, stage caches: never tables
            continue
        name = e.name[: -len(".parquet")] if e.name.endswith(".parquet") else e.name
        single = e.name.endswith(".parquet")
        if e.is_symlink():
            out.skipped.append((e.name, "a symbolic link: links are never followed"))
            continue
        if not single and not e.is_dir(follow_symlinks=False):
            continue                                        # manifest.json, README ...: not table files
        if name not in listed:
            if single:
                out.skipped.append((e.name, "not a table named in the run's manifest"))
            continue                                        # export/, checkpoints ...: folders of other files
        if single:
            why = _regular(e.path, root)
            if why:
                out.skipped.append((e.name, why))
            else:
                out.tables[name] = [os.path.realpath(e.path)]
            continue
        files = []
        with os.scandir(e.path) as parts:
            for p in sorted(parts, key=lambda p: p.name):
                if p.name.startswith(".") or not p.name.endswith(".parquet"):
                    continue
                why = _regular(p.path, root)
                if why:
                    out.skipped.append((f"{e.name}/{p.name}", why))
                else:
                    files.append(os.path.realpath(p.path))
        if files:
            out.tables[name] = files
    return out


def _remote_tables(store: RunStore) -> RunTables:
    """The tables of an object-store run: those its manifest names, each its table's objects
    (temp objects, locks and caches are never tables; there are no links on a store)."""
    man = store.read_manifest()
    if not man:
        raise StoreError(f"{store.path} has no {MANIFEST}; is it a run directory?")
    out = RunTables()
    present = set(store.tables())
    for name in sorted(man.get("tables") or {}):
        if name in present:
            files = store.table_files(name)
            if files:
                out.tables[name] = files
    return out


def _arrow_dataset(store: RunStore, files: list[str]) -> pads.Dataset:
    schema = pa.unify_schemas([pq.read_schema(f, filesystem=store.fs) for f in files],
                              promote_options="default")
    return pads.dataset(files, schema=schema, filesystem=store.fs, format="parquet")


def connect(store: RunStore, memory_limit: str = DEFAULT_MEMORY_LIMIT) -> duckdb.DuckDBPyConnection:
    """A sandboxed in-memory connection with one view per table of the run.

    Only the run's table files are readable; nothing can be written outside the
    (throw-away) in-memory database, and the settings are locked.
    """
    return _connect(store, run_tables(store), memory_limit)[0]


def _connect(store: RunStore, listing: RunTables, memory_limit: str = DEFAULT_MEMORY_LIMIT
             ) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    try:
        allowed = [] if store.remote else listing.files
        try:
            con.execute(f"SET memory_limit={_sql_str(memory_limit)}")
        except duckdb.Error as exc:
            raise StoreError(f"invalid memory limit {memory_limit!r}: {str(exc).splitlines()[0]}") from None
        con.execute("SET temp_directory=''")      # nothing spills to disk: the memory limit is the limit
        con.execute(f"SET allowed_paths={_sql_list(allowed)}" if allowed else "SET allowed_paths=[]")
        for name, files in listing.tables.items():
            if store.remote:
                try:
                    con.register(name, _arrow_dataset(store, files))
                except (OSError, pa.ArrowInvalid) as exc:     # unreadable: only queries reading it fail
                    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM range(1) WHERE error('
                                f'{_sql_str(f"table {name} of the run cannot be read: {reason}")}) IS NULL')
                continue
            try:
                con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM read_parquet({_sql_list(files)}, '
                            'union_by_name=true)')
            except duckdb.Error as exc:     # a truncated or corrupt file: only queries reading it fail
                reason = str(exc).splitlines()[0]
                con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM range(1) WHERE error('
                            f'{_sql_str(f"table {name} of the run cannot be read: {reason}")}) IS NULL')
        con.execute("SET enable_external_access=false")
        con.execute("SET lock_configuration=true")
    except BaseException:
        con.close()
        raise
    return con, listing.files


def query(store: RunStore, sql: str, *, timeout_s: float | None = DEFAULT_TIMEOUT_S,
          memory_limit: str = DEFAULT_MEMORY_LIMIT, skipped: list | None = None) -> pa.Table:
    """Run a read-only query over the run's tables; returns a pyarrow Table.

    Args:
        timeout_s: the query is interrupted after this many seconds (None: no limit).
        memory_limit: DuckDB's ``memory_limit`` (``2GB``); the result is refused once larger.
        skipped: a list that receives the ``(entry, reason)`` pairs of files left out.
    """
    check_read_only(sql)
    cap = parse_size(memory_limit)
    for attempt in range(5):
        listing = run_tables(store)
        con, files = _connect(store, listing, memory_limit)
        try:
            table = _run(con, sql, timeout_s, cap, memory_limit)
            if skipped is not None:
                skipped.extend(listing.skipped)
            return table
        except (duckdb.IOException, duckdb.PermissionException) as exc:
            # a part of a folder table compacted away by a running process since the listing:
            # list again (the merged part was written before the old ones were deleted)
            if attempt == 4 or not _vanished(store, files):
                raise StoreError(f"query failed: {_first_line(exc)}") from exc
        except duckdb.InterruptException:
            raise StoreError(f"query stopped after the time limit of {timeout_s:g} s (--timeout)") from None
        except duckdb.OutOfMemoryException as exc:
            raise StoreError(f"query failed: {_first_line(exc)} (memory limit {memory_limit}, --memory-limit)") \
                from None
        except duckdb.Error as exc:
            raise StoreError(f"query failed: {_first_line(exc)}") from exc
        finally:
            con.close()
    raise AssertionError("unreachable")  # pragma: no cover


def _first_line(exc: BaseException) -> str:
    line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return line.removeprefix("Invalid Input Error: ")


def _run(con: duckdb.DuckDBPyConnection, sql: str, timeout_s: float | None, cap: int, memory_limit: str) -> pa.Table:
    """The query's rows, streamed batch by batch under the time limit and the size cap."""
    timer = threading.Timer(timeout_s, con.interrupt) if timeout_s is not None else None
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        reader = con.sql(sql).to_arrow_reader(65536)
        batches, size = [], 0
        for batch in reader:
            size += batch.nbytes
            if size > cap:
                raise StoreError(f"the query's result is larger than the memory limit {memory_limit} "
                                 "(--memory-limit): add a LIMIT or aggregate")
            if deadline is not None and time.monotonic() > deadline:
                raise duckdb.InterruptException("interrupted")
            batches.append(batch)
        return pa.Table.from_batches(batches, schema=reader.schema)
    finally:
        if timer is not None:
            timer.cancel()


def _vanished(store: RunStore, files: list[str]) -> bool:
    """Whether a file the connection's listing named is gone now (a concurrent compaction)."""
    return any(i.type == pafs.FileType.NotFound for i in store.fs.get_file_info(files))
