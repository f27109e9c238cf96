"""The synthesis checkpointer shared by processes: a write waits for another process's transaction."""
import asyncio
import sqlite3
import threading
import time

from agents.synth.checkpoint import GroupCommitSqliteSaver


def test_a_write_waits_out_another_connections_long_transaction(tmp_path):
    """Synthesis batches on Dask workers share one checkpoint database. A commit of one process that
    holds the write lock longer than sqlite's default 5 s busy timeout (a loaded machine) must make
    the other process's write wait, not fail with 'database is locked' and lose the batch."""
    db = str(tmp_path / "ck.sqlite")
    cfg = {"configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "c1"}}

    async def setup():
        async with GroupCommitSqliteSaver.from_conn_string(db) as saver:
            await saver.setup()
    asyncio.run(setup())

    held, release = threading.Event(), threading.Event()

    def other_process():
        con = sqlite3.connect(db, timeout=1)
        con.execute("BEGIN IMMEDIATE")          # the write lock, held for 6.5 s
        con.execute("INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel) "
                    "VALUES ('other', '', 'c0', 'x', 0, 'c')")
        held.set()
        release.wait(6.5)
        con.commit()
        con.close()
    th = threading.Thread(target=other_process)
    th.start()
    try:
        assert held.wait(30)

        async def write():
            async with GroupCommitSqliteSaver.from_conn_string(db) as saver:
                t0 = time.monotonic()
                await saver.aput_writes(cfg, [("state", {"turn": 1})], task_id="task-1")
                return time.monotonic() - t0
        waited = asyncio.run(write())
    finally:
        release.set()
        th.join()
    assert waited >= 5.0            # it did wait past sqlite's default, and then wrote
    con = sqlite3.connect(db)
    rows = con.execute("SELECT thread_id, task_id FROM writes ORDER BY thread_id").fetchall()
    con.close()
    assert rows == [("other", "x"), ("t1", "task-1")]
