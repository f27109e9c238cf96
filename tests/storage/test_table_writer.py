"""RunStore.table_writer: a table written batch by batch appears whole or not at all."""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage.schemas import REJECTED, embeddings_schema
from storage.store import RunStore, StoreError


def _rows(a, b):
    return pa.table({"source": [f"s{i}" for i in range(a, b)], "doc_id": [None] * (b - a), "stage": ["load"] * (b - a),
                     "reason": ["empty"] * (b - a), "detail": ["x"] * (b - a), "duplicate_of": [None] * (b - a)},
                    schema=REJECTED)


def test_batches_become_row_groups_with_the_same_rows(tmp_path):
    store = RunStore(str(tmp_path / "run")).ensure()
    with store.table_writer("rejected", row_group_rows=4) as w:
        for a in range(0, 23, 3):
            w.write(_rows(a, min(a + 3, 23)))
    meta = pq.ParquetFile(store.table_path("rejected")).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4] * 5 + [3]
    assert store.read_table("rejected").equals(_rows(0, 23))
    batches = list(store.iter_batches("rejected", batch_size=10))
    assert max(len(b) for b in batches) <= 10 and pa.Table.from_batches(batches).equals(_rows(0, 23))
    assert store.num_rows("rejected") == 23


def test_a_failure_inside_the_block_keeps_the_previous_table(tmp_path):
    store = RunStore(str(tmp_path / "run")).ensure()
    store.write_table("rejected", _rows(0, 2))
    with pytest.raises(RuntimeError):
        with store.table_writer("rejected", row_group_rows=1) as w:
            w.write(_rows(5, 9))                       # row groups already on disk (temp file)
            raise RuntimeError("killed")
    assert store.read_table("rejected").equals(_rows(0, 2))
    assert not [p.name for p in Path(store.path).iterdir() if p.name.startswith(".")]
    with pytest.raises(StoreError, match="does not match its schema"):
        with store.table_writer("rejected") as w:
            w.write(pa.table({"source": ["a"]}))
    assert store.read_table("rejected").equals(_rows(0, 2))


def test_no_rows_writes_an_empty_table_with_the_schema_set_late(tmp_path):
    store = RunStore(str(tmp_path / "run")).ensure()
    with store.table_writer("embeddings") as w:
        w.schema = embeddings_schema(8)
    t = store.read_table("embeddings")
    assert len(t) == 0 and t.schema.field("vector").type == pa.list_(pa.float32(), 8)
