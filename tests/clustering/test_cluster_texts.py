"""The cluster stage reads the chunk texts in the embeddings' order."""
from __future__ import annotations

import pytest

import clustering.stages as cst
from storage.records import Chunk
from storage.schemas import CHUNKS, table_from_rows
from storage.store import RunStore


def test_cluster_texts_follow_the_embedding_order(tmp_path):
    store = RunStore(str(tmp_path / "run")).ensure()
    rows = [Chunk(f"d{i}#0", f"d{i}", 0, "", f"text {i}", 0, 6).to_row() for i in range(5)]
    store.write_table("chunks", table_from_rows(rows, CHUNKS))
    texts = cst.chunk_texts(store, ["d3#0", "d0#0", "d4#0"])
    assert list(texts) == ["text 3", "text 0", "text 4"] and texts[1] == "text 0" and len(texts) == 3
    assert [texts[i] for i in (2, 0)] == ["text 4", "text 3"]
    with pytest.raises(ValueError, match="not in the chunks table"):
        cst.chunk_texts(store, ["d1#0", "zz#0"])
