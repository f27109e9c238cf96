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
    store.write_manifest()          # queries read the tables the manifest names
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
    store.write_manifest()
    with pytest.raises(StoreError, match="query failed"):
        query(store, "SELECT nope FROM chunks")


def _calls(n: int, tag: str) -> pa.Table:
    from agents.accounting import CallRecord, records_table
    recs = [CallRecord(call_id=f"{tag}-{i}", run_id="r", role="q", step="s", endpoint=None, model="m",
                       backend="offline", prompt_version="1", cache_key=f"k{i}", prompt_tokens=3, completion_tokens=2)
            for i in range(n)]
    return records_table([r.values() for r in recs])


def test_a_part_compacted_away_between_listing_and_reading_is_read_again(tmp_path):
    """Another process merges a folder table's parts (writes the merged part, then deletes the
    old ones) after this one listed them: the read and the manifest's stats list again."""
    store = RunStore(str(tmp_path / "r"))
    for i in range(3):
        store.append_part("llm_calls", _calls(2, f"p{i}"))
    real = store.table_files
    compactions = []

    def table_files(name):
        files = real(name)
        if name == "llm_calls" and len(files) > 1 and len(compactions) < 2:   # compact right after this listing
            store.merge_parts("llm_calls", files)
            compactions.append(len(files))
        return files
    store.table_files = table_files
    assert store.read_table("llm_calls").num_rows == 6 and compactions == [3]
    store.append_part("llm_calls", _calls(1, "late"))
    stats = store.write_manifest(x=1)["tables"]["llm_calls"]
    assert compactions == [3, 2] and stats["rows"] == 7 and stats["files"] == 1
    assert store.num_rows("llm_calls") == 7


def test_a_query_whose_parts_were_compacted_away_lists_them_again(tmp_path, monkeypatch):
    import storage.duck as duck
    store = RunStore(str(tmp_path / "r"))
    for i in range(3):
        store.append_part("llm_calls", _calls(2, f"p{i}"))
    store.write_manifest()
    real = duck._connect
    listings = []

    def connect(st, *args):
        con, files = real(st, *args)
        listings.append(len(files))
        if len(listings) == 1:          # another process compacts the folder after this listing
            st.merge_parts("llm_calls", files)
        return con, files
    monkeypatch.setattr(duck, "_connect", connect)
    assert query(store, "SELECT count(*) AS n FROM llm_calls").to_pylist() == [{"n": 6}]
    assert listings == [3, 1]
    with pytest.raises(StoreError, match="query failed"):     # a real error still says so, once
        query(store, "SELECT no_such_column FROM llm_calls")
    assert listings == [3, 1, 1]


def _manifest_writer(path: str, name: str, rounds: int) -> None:
    store = RunStore(path)
    for i in range(rounds):       # as CallLog.compact does at close
        parts = [store.append_part("llm_calls", _calls(1, f"{name}-{i}-{j}")) for j in range(2)]
        store.merge_parts("llm_calls", parts)
        store.write_manifest(writers={name: i + 1})


def test_processes_sharing_a_run_directory_lose_no_manifest_update(tmp_path):
    """Synthesis batches on Dask workers write the same run directory: each one compacts its
    ``llm_calls`` parts and records its totals in the manifest while the others do the same.
    No process fails on a part another one deleted, and no manifest update is lost."""
    import multiprocessing as mp
    path = str(tmp_path / "shared")
    RunStore(path).ensure()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_manifest_writer, args=(path, f"w{k}", 25)) for k in range(3)]
    for p in procs:
        p.start()
    try:
        store = RunStore(path)
        while any(p.is_alive() for p in procs):
            store.read_table("llm_calls") if store.has_table("llm_calls") else None
            store.write_manifest(reader={"alive": sum(p.is_alive() for p in procs)})
    finally:
        for p in procs:
            p.join(120)
            if p.is_alive():
                p.kill()
                p.join()
    assert [p.exitcode for p in procs] == [0, 0, 0]
    man = RunStore(path).read_manifest()
    assert man["writers"] == {"w0": 25, "w1": 25, "w2": 25}
    assert len(set(RunStore(path).read_table("llm_calls").column("call_id").to_pylist())) == 3 * 25 * 2
