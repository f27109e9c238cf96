"""Read-only DuckDB access to a run's Parquet tables (read in place, never copied)."""
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


def connect(store: RunStore) -> duckdb.DuckDBPyConnection:
    """An in-memory connection with one view per table of the run."""
    con = duckdb.connect(":memory:")
    for name in store.tables():
        files = store.table_files(name)
        if not files:
            continue
        lst = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM read_parquet([{lst}], union_by_name=true)')
    return con


def query(store: RunStore, sql: str):
    """Run a read-only query over the run's tables; returns a pyarrow Table."""
    check_read_only(sql)
    con = connect(store)
    try:
        return con.sql(sql).to_arrow_table()
    except duckdb.Error as exc:
        raise StoreError(f"query failed: {str(exc).splitlines()[0]}") from exc
    finally:
        con.close()
