"""`mtr query` reads only the run's own table files, within limits (issue: honest outputs #4).

Tables are the ones the run's manifest names, regular files checked without following links;
a link to another run, a file outside the run, a stray or corrupt ``.parquet`` is never read
(listed as skipped) and fails no query that does not read it. Every query has a time limit
(an interrupt) and a memory limit; ``--output`` never writes under the runs root and never
replaces a file without ``--force``.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage.duck import query
from storage.schemas import CHUNKS, DOCUMENTS, table_from_rows
from storage.store import RunStore, StoreError


def _run(root, run_id="r", docs=("a", "b")):
    store = RunStore(str(root / run_id))
    store.write_table("chunks", table_from_rows(
        [{"chunk_id": f"d#{i}", "doc_id": "d", "chunk_index": i, "title": "T", "text": f"text {i}",
          "start_char": 0, "end_char": 6, "content_hash": f"h{i}"} for i in range(3)], CHUNKS))
    store.write_table("documents", table_from_rows(
        [{"doc_id": d, "title": d, "text": f"text of {d}", "source": f"{d}.txt"} for d in docs], DOCUMENTS))
    store.write_manifest(config={})
    return store


def test_links_and_unlisted_files_are_never_read(tmp_path):
    store = _run(tmp_path, "r")
    other = _run(tmp_path, "other", docs=("secret-1", "secret-2", "secret-3"))
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"topic_id": [1], "label": ["outside the run"]}), outside)
    run = tmp_path / "r"
    (run / "other_run").symlink_to(other.path, target_is_directory=True)     # a link to another run
    (run / "topics.parquet").symlink_to(outside)                             # a table pointing outside
    os.unlink(run / "documents.parquet")                                     # documents -> the other run's
    (run / "documents.parquet").symlink_to(other.table_path("documents"))
    store.write_manifest(note="links listed")       # the manifest now names topics and other_run as well
    pq.write_table(pa.table({"x": [1]}), run / "stray.parquet")              # not in the manifest
    for sql in ("SELECT count(*) FROM documents", "SELECT * FROM topics", "SELECT * FROM other_run",
                "SELECT * FROM stray"):
        with pytest.raises(StoreError, match="does not exist"):
            query(store, sql)
    skipped: list = []
    assert query(store, "SELECT count(*) AS n FROM chunks", skipped=skipped).to_pylist() == [{"n": 3}]
    assert len(skipped) == 4
    from storage.duck import run_tables
    listing = run_tables(store)
    assert set(listing.tables) == {"chunks"}
    assert dict(listing.skipped) == {
        "documents.parquet": "a symbolic link: links are never followed",
        "other_run": "a symbolic link: links are never followed",
        "stray.parquet": "not a table named in the run's manifest",
        "topics.parquet": "a symbolic link: links are never followed"}


def _calls(n: int, tag: str) -> pa.Table:
    from agents.accounting import CallRecord, records_table
    return records_table([CallRecord(call_id=f"{tag}-{i}", run_id="r", role="q", step="s", endpoint=None, model="m",
                                     backend="offline", prompt_version="1", cache_key=f"k{i}").values()
                          for i in range(n)])


def test_a_link_inside_a_folder_table_is_skipped(tmp_path):
    store = _run(tmp_path, "r")
    other = _run(tmp_path, "other")
    store.append_part("llm_calls", _calls(2, "own"))
    foreign = other.append_part("llm_calls", _calls(5, "foreign"))
    (tmp_path / "r" / "llm_calls" / "part-zz.parquet").symlink_to(foreign)
    store.write_manifest(x=1)
    skipped: list = []
    assert query(store, "SELECT count(*) AS n FROM llm_calls", skipped=skipped).to_pylist() == [{"n": 2}]
    assert skipped == [("llm_calls/part-zz.parquet", "a symbolic link: links are never followed")]


def test_a_corrupt_table_fails_only_the_queries_that_read_it(tmp_path, mtr):
    store = _run(tmp_path, "r")
    path = store.table_path("documents")
    data = open(path, "rb").read()
    with open(path, "wb") as f:                     # truncated: no footer
        f.write(data[: len(data) // 2])
    (tmp_path / "r" / "junk.parquet").write_bytes(b"PAR1 not parquet")      # a stray corrupt file
    assert query(store, "SELECT count(*) AS n FROM chunks").to_pylist() == [{"n": 3}]
    with pytest.raises(StoreError, match="table documents of the run cannot be read"):
        query(store, "SELECT count(*) FROM documents")
    res = mtr("query", "r", "SELECT count(*) AS n FROM chunks", "--root", tmp_path)
    assert res.exit_code == 0, res.output
    assert "junk.parquet (not a table named in the run's manifest)" in res.out
    res = mtr("query", "r", "SELECT * FROM documents", "--root", tmp_path)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(res.err.strip().splitlines()) == 1
    assert "table documents of the run cannot be read" in res.err


def test_a_long_query_is_interrupted_and_memory_is_limited(tmp_path, mtr, monkeypatch):
    _run(tmp_path, "r")
    monkeypatch.chdir(tmp_path)         # DuckDB would spill into ./.tmp: nothing may be written there
    res = mtr("query", "r", "SELECT count(*) FROM range(1000000000000)", "--root", tmp_path, "--timeout", "0.5")
    assert res.exit_code == 2, res.output
    assert "query stopped after the time limit of 0.5 s (--timeout)" in res.err
    res = mtr("query", "r", "SELECT count(DISTINCT range) FROM range(200000000)", "--root", tmp_path,
              "--memory-limit", "64MB")
    assert res.exit_code == 2, res.output
    assert "Out of Memory" in res.err and "--memory-limit" in res.err
    assert len(res.err.strip().splitlines()) == 1
    res = mtr("query", "r", "SELECT * FROM range(1000000000000)", "--root", tmp_path, "--memory-limit", "64MB")
    assert res.exit_code == 2, res.output
    assert "result is larger than the memory limit 64MB" in res.err
    assert not (tmp_path / ".tmp").exists()


def test_defaults_are_a_minute_and_two_gigabytes():
    import inspect

    import storage.duck as duck
    sig = inspect.signature(duck.query)
    assert sig.parameters["timeout_s"].default == 60 and sig.parameters["memory_limit"].default == "2GB"


def test_output_never_under_the_runs_root_nor_over_a_file_without_force(tmp_path, mtr):
    runs = tmp_path / "runs"
    runs.mkdir()
    _run(runs, "r")
    victim = _run(runs, "victim")
    before = open(victim.table_path("documents"), "rb").read()
    res = mtr("query", "r", "SELECT * FROM documents", "--root", runs, "--output", victim.table_path("documents"))
    assert res.exit_code == 2 and "runs root" in res.err, res.output
    assert open(victim.table_path("documents"), "rb").read() == before
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "into-runs.parquet").symlink_to(victim.table_path("documents"))    # a link into the runs root
    res = mtr("query", "r", "SELECT * FROM documents", "--root", runs, "--output", out_dir / "into-runs.parquet",
              "--force")
    assert res.exit_code == 2 and "runs root" in res.err, res.output
    assert open(victim.table_path("documents"), "rb").read() == before
    existing = out_dir / "old.csv"
    existing.write_text("keep me\n")
    res = mtr("query", "r", "SELECT * FROM documents", "--root", runs, "--output", existing)
    assert res.exit_code == 2 and "already exists; pass --force" in res.err, res.output
    assert existing.read_text() == "keep me\n"
    res = mtr("query", "r", "SELECT * FROM documents", "--root", runs, "--output", existing, "--force")
    assert res.exit_code == 0, res.output
    assert existing.read_text().splitlines()[0].startswith('"doc_id"')
    res = mtr("query", "r", "SELECT 1", "--root", runs, "--output", tmp_path / "missing" / "x.parquet")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(res.err.strip().splitlines()) == 1
    assert "does not exist" in res.err
    assert sorted(os.listdir(out_dir)) == ["into-runs.parquet", "old.csv"]      # no temp file left
