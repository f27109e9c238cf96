"""`mtr query` is really read-only: the DuckDB sandbox, not a keyword filter, stops every bypass.

Each SQL string below passes or sidesteps a statement-type filter (EXPLAIN ANALYZE, comments,
CTEs, multi-statements, table functions) and would write a file or read outside the run.
After each attempt, the run's files are byte-identical and nothing new exists on disk.
"""
from __future__ import annotations

import hashlib
import os

import pytest

from storage.duck import query
from storage.schemas import CHUNKS, table_from_rows
from storage.store import RunStore, StoreError


def _store(root, run_id="r"):
    store = RunStore(str(root / run_id))
    rows = [{"chunk_id": f"d#{i}", "doc_id": "d", "chunk_index": i, "title": "T", "text": f"text {i}",
             "start_char": 0, "end_char": 6, "content_hash": f"h{i}"} for i in range(10)]
    store.write_table("chunks", table_from_rows(rows, CHUNKS))
    store.write_manifest(config={})
    return store


def _snapshot(root):
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            out[p] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def _attacks(run_dir, other_dir):
    own = f"{run_dir}/chunks.parquet"
    return [
        f"EXPLAIN ANALYZE COPY (SELECT * FROM chunks LIMIT 1) TO '{own}' (FORMAT parquet)",
        f"COPY (SELECT * FROM chunks LIMIT 1) TO '{own}' (FORMAT parquet)",
        f"/* comment */ COPY chunks TO '{run_dir}/x.csv'",
        f"WITH x AS (SELECT 1) SELECT * FROM x; COPY chunks TO '{run_dir}/y.csv'",
        f"SELECT 1; COPY chunks TO '{run_dir}/z.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_blob('/etc/hostname')",
        "SELECT * FROM glob('/root/*')",
        f"SELECT * FROM read_parquet('{other_dir}/chunks.parquet')",
        f"EXPLAIN ANALYZE SELECT * FROM read_parquet('{other_dir}/chunks.parquet')",
        f"ATTACH '{run_dir}/evil.duckdb'",
        f"EXPORT DATABASE '{run_dir}/exp'",
        "SET enable_external_access=true",
        "PRAGMA enable_external_access",
        "SET lock_configuration=false",
        "INSTALL httpfs",
        "LOAD httpfs",
        "CALL pragma_version()",
        "SELECT * FROM read_csv('https://example.com/x.csv')",
    ]


def test_no_statement_can_write_or_read_outside_the_run(tmp_path):
    store = _store(tmp_path)
    other = _store(tmp_path, "other")
    before = _snapshot(tmp_path)
    for sql in _attacks(store.path, other.path):
        with pytest.raises(StoreError):
            query(store, sql)
    assert _snapshot(tmp_path) == before
    # the run's own tables still answer, and only they are visible
    assert query(store, "SELECT count(*) AS n FROM chunks").to_pylist() == [{"n": 10}]


def test_reads_of_other_files_are_refused_with_a_clear_error(tmp_path):
    store = _store(tmp_path)
    for sql in ("SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM glob('/root/*')"):
        with pytest.raises(StoreError, match="(?i)permission|disabled|refused|only read-only"):
            query(store, sql)


def test_cli_query_exit_2_and_output_never_inside_the_run(tmp_path, mtr):
    store = _store(tmp_path)
    before = _snapshot(tmp_path)
    res = mtr("query", "r", "--root", tmp_path,
              f"EXPLAIN ANALYZE COPY (SELECT * FROM chunks LIMIT 1) TO '{store.path}/chunks.parquet'")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(res.err.strip().splitlines()) == 1
    res = mtr("query", "r", "SELECT * FROM chunks LIMIT 1", "--root", tmp_path,
              "--output", f"{store.path}/chunks.parquet")
    assert res.exit_code == 2, res.output
    assert "inside the run" in res.err
    assert _snapshot(tmp_path) == before
    (tmp_path / "results").mkdir()
    out = tmp_path / "results" / "result.parquet"
    res = mtr("query", store.path, "SELECT * FROM chunks", "--root", tmp_path / "other-root", "--output", out)
    assert res.exit_code == 0, res.output
    assert "wrote 10 rows" in res.output
