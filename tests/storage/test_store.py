import json

import pyarrow as pa
import pytest

from storage.duck import QueryRefused, check_read_only, query
from storage.schemas import CHUNKS, LLM_CALLS, table_from_rows
from storage.store import RunStore, StoreError, list_runs


def _chunks():
    return table_from_rows([{"chunk_id": "d#0", "doc_id": "d", "chunk_index": 0, "title": "T", "text": "hello",
                             "start_char": 0, "end_char": 5, "content_hash": "h"}], CHUNKS)


def test_schema_round_trip_atomic_and_manifest(tmp_path):
    store = RunStore(str(tmp_path / "r1"))
    store.write_table("chunks", _chunks())
    t = store.read_table("chunks")
    assert t.schema.equals(CHUNKS) and t.to_pylist()[0]["text"] == "hello"
    assert [p.name for p in (tmp_path / "r1").iterdir()] == ["chunks.parquet"]  # no temp files left
    man = store.write_manifest(config={"a": 1})
    assert man["tables"]["chunks"]["rows"] == 1 and len(man["tables"]["chunks"]["sha256"]) == 64
    assert json.loads((tmp_path / "r1" / "manifest.json").read_text())["config"] == {"a": 1}
    assert [r.run_id for r in list_runs(tmp_path)] == ["r1"]


def test_schema_mismatch_and_unknown_table(tmp_path):
    store = RunStore(str(tmp_path / "r"))
    with pytest.raises(StoreError, match="does not match"):
        store.write_table("chunks", pa.table({"chunk_id": ["x"]}))
    with pytest.raises(StoreError, match="no table"):
        store.read_table("chunks")
    with pytest.raises(ValueError, match="not in the schema"):
        table_from_rows([{"chunk_id": "x", "bogus": 1}], CHUNKS)


def test_append_parts_and_duckdb(tmp_path):
    store = RunStore(str(tmp_path / "r"))
    store.write_table("chunks", _chunks())
    row = {n: None for n in LLM_CALLS.names}
    for i in range(3):
        store.append_part("llm_calls", table_from_rows([{**row, "call_id": f"c{i}", "role": "judge"}], LLM_CALLS))
    assert store.read_table("llm_calls").num_rows == 3
    assert set(store.tables()) == {"chunks", "llm_calls"}
    out = query(store, "SELECT role, count(*) AS n FROM llm_calls GROUP BY role")
    assert out.to_pylist() == [{"role": "judge", "n": 3}]
    assert query(store, "SELECT text FROM chunks").to_pylist() == [{"text": "hello"}]


@pytest.mark.parametrize("sql", ["DELETE FROM chunks", "INSERT INTO chunks VALUES (1)", "DROP VIEW chunks",
                                 "COPY chunks TO '/tmp/x.csv'", "CREATE TABLE t AS SELECT 1",
                                 "ATTACH 'x.db'", "SELECT 1; DROP VIEW chunks", "UPDATE chunks SET text='x'",
                                 "INSTALL httpfs", "SET threads=1"])
def test_duckdb_refuses_writes(sql):
    with pytest.raises(QueryRefused):
        check_read_only(sql)


def test_duckdb_bad_sql_is_clear(tmp_path):
    store = RunStore(str(tmp_path / "r"))
    store.write_table("chunks", _chunks())
    with pytest.raises(StoreError, match="query failed"):
        query(store, "SELECT nope FROM chunks")
