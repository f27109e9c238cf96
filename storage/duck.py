"""Read-only DuckDB access to a run's Parquet tables (read in place, never copied).

The connection is a sandbox, not a keyword filter: an in-memory database whose only
visible data are views over the run's own Parquet files (``allowed_paths``), with
``enable_external_access=false`` (no other file, no COPY/EXPORT/ATTACH target, no URL),
no extension install or autoload, and ``lock_configuration=true`` so SQL cannot undo
any of it. The statement check in :func:`check_read_only` only gives a clearer message
for the common mistakes; the sandbox is what makes writes impossible.
"""
from __future__ import annotations

import duckdb

from storage.store import RunStore, StoreError


class QueryRefused(StoreError):
    """The SQL is not a read-only query."""


_ALLOWED = {"SELECT", "EXPLAIN"}


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
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in items) + "]"


def connect(store: RunStore) -> duckdb.DuckDBPyConnection:
    """A sandboxed in-memory connection with one view per table of the run.

    Only the run's table files are readable; nothing can be written outside the
    (throw-away) in-memory database, and the settings are locked.
    """
    return _connect(store)[0]


def _connect(store: RunStore) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    try:
        views: dict[str, list[str]] = {}
        for name in store.tables():
            files = store.table_files(name)
            if files:
                views[name] = files
        allowed = sorted({f for files in views.values() for f in files})
        con.execute(f"SET allowed_paths={_sql_list(allowed)}" if allowed else "SET allowed_paths=[]")
        for name, files in views.items():
            con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM read_parquet({_sql_list(files)}, union_by_name=true)')
        con.execute("SET enable_external_access=false")
        con.execute("SET lock_configuration=true")
    except BaseException:
        con.close()
        raise
    return con, allowed


def query(store: RunStore, sql: str):
    """Run a read-only query over the run's tables; returns a pyarrow Table."""
    check_read_only(sql)
    for attempt in range(5):
        con, files = _connect(store)
        try:
            return con.sql(sql).to_arrow_table()
        except (duckdb.IOException, duckdb.PermissionException) as exc:
            # a part of a folder table compacted away by a running process since the listing:
            # list again (the merged part was written before the old ones were deleted)
            if attempt == 4 or not _vanished(store, files):
                raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from exc
        except duckdb.Error as exc:
            raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from exc
        finally:
            con.close()
    raise AssertionError("unreachable")  # pragma: no cover


def _vanished(store: RunStore, files: list[str]) -> bool:
    """Whether a file the connection's listing named is gone now (a concurrent compaction)."""
    import pyarrow.fs as pafs
    return any(i.type == pafs.FileType.NotFound for i in store.fs.get_file_info(files))
