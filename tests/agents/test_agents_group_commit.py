"""Group commit of the call cache and the ``llm_calls`` rows: one sync per batch, rows never
ahead of their cache entries, and a crash between commits repeats only the uncommitted calls,
each once."""
from __future__ import annotations

import asyncio

import pyarrow.parquet as pq

from agents.accounting import CallLog, CallRecord, new_call_id, read_calls
from agents.cache import CallCache
from agents.session import LLMSession
from storage.store import RunStore


def _rec(key: str) -> CallRecord:
    return CallRecord(call_id=new_call_id(), run_id="r", role="qa", step="qa", endpoint="fake", model="m",
                      backend="openai", prompt_version="v1", cache_key=key)


def test_staged_entries_are_visible_at_once_and_committed_with_one_sync(tmp_path, monkeypatch):
    syncs = []
    monkeypatch.setattr("agents.cache.os.sync", lambda: syncs.append(1))
    c = CallCache(tmp_path, group_commit=True)
    keys = [f"{i:02d}" + "a" * 62 for i in range(5)]
    for i, k in enumerate(keys):
        c.put(k, {"content": f"x{i}"})
    assert c.pending == 5 and c.entries() == []           # nothing on disk yet
    assert c.get(keys[3]) == {"content": "x3"}             # but readable: no twin request goes out
    assert c.flush() == 5 and syncs == [1]                 # one sync for the batch
    assert c.pending == 0 and len(c.entries()) == 5
    assert CallCache(tmp_path).get(keys[4]) == {"content": "x4"}   # another reader sees them
    assert c.flush() == 0 and syncs == [1]                 # nothing staged: no sync
    assert not list(tmp_path.glob("*/.*.tmp"))


def test_rows_are_committed_after_their_cache_entries(tmp_path, monkeypatch):
    store = RunStore(str(tmp_path / "run"))
    cache = CallCache(tmp_path / "run" / "cache" / "llm", group_commit=True, fsync=False)
    log = CallLog(store, "r", flush_every=1000, cache=cache, commit_interval_s=3600)
    order = []
    real_flush, real_append = cache.flush, store.append_part
    monkeypatch.setattr(cache, "flush", lambda: (order.append("cache"), real_flush())[1])
    monkeypatch.setattr(store, "append_part", lambda *a, **k: (order.append("rows"), real_append(*a, **k))[1])
    for i in range(3):
        key = f"{i:02d}" + "b" * 62
        cache.put(key, {"content": "x"})
        log.add(_rec(key))
    assert read_calls(store).num_rows == 0 and cache.entries() == []    # uncommitted
    log.flush()
    assert order == ["cache", "rows"]
    assert read_calls(store).num_rows == 3 and len(cache.entries()) == 3
    assert len(store.table_files("llm_calls")) == 1 and log.commits == 1   # one part for the batch
    log.close()
    assert log._thread is None


def test_committer_thread_commits_on_count(tmp_path):
    store = RunStore(str(tmp_path / "run"))
    log = CallLog(store, "r", flush_every=4, commit_interval_s=3600)   # the interval never fires here
    for _ in range(4):
        log.add(_rec("k"))
    for _ in range(500):
        if read_calls(store).num_rows == 4:
            break
        import time
        time.sleep(0.01)
    assert read_calls(store).num_rows == 4
    log.close()


def test_crash_between_commits_repeats_only_uncommitted_calls_once(fake_llm, make_config, qa_step, tmp_path):
    run = tmp_path / "run"
    cfg = make_config(fake_llm, commit_interval_ms=3_600_000, accounting_flush_every=10_000)

    async def first():
        llm = LLMSession(cfg, store=run)
        await llm.map(qa_step(), ["a", "b", "c", "d"])           # map end = a commit boundary
        for x in ["e", "f", "g"]:                                # completed, not yet committed
            await llm.run(qa_step(), x)
        # crash: the committer dies with the process, nothing more is written
        llm.calls._stopping = True
        llm.calls._wake.set()
        llm.calls._thread.join()

    asyncio.run(first())
    store = RunStore(str(run))
    assert read_calls(store).num_rows == 4
    assert len(CallCache(run / "cache" / "llm").entries()) == 4
    assert fake_llm.count == 7
    fake_llm.reset()

    async def again():
        async with LLMSession(cfg, store=run) as llm:
            return await llm.map(qa_step(), ["a", "b", "c", "d", "e", "f", "g"])

    batch = asyncio.run(again())
    assert batch.n_ok == 7
    asked = sorted(r.text.split("Question: ")[1] for r in fake_llm.requests)
    assert asked == ["e", "f", "g"]                             # only the uncommitted, once each
    rows = read_calls(store).to_pylist()
    assert len(rows) == len({r["call_id"] for r in rows}) == 4 + 7
    assert sum(not r["cache_hit"] for r in rows) == 4 + 3
    raw = sum(pq.read_table(f).num_rows for f in store.table_files("llm_calls"))
    assert raw == len(rows)
    fake_llm.reset()
    asyncio.run(again())
    assert fake_llm.count == 0                                  # after a clean close: zero repeats
