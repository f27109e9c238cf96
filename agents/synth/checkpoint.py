"""The conversation graph's checkpointer: LangGraph's ``AsyncSqliteSaver`` with group commit.

The stock saver commits every ``aput`` (a checkpoint) and every ``aput_writes`` (a node's
writes) on its own: two round trips to aiosqlite's thread and one WAL sync each, all behind
one lock. With 64 conversations in flight the writes queue behind each other and every
graph run's first read (``aget_tuple``) waits at the end of that queue.

:class:`GroupCommitSqliteSaver` writes the same rows (the parent's SQL and serialisation)
but queues them: a single flusher writes everything queued while the previous transaction
was in flight as ONE transaction in ONE call into aiosqlite's thread, then wakes every
caller. A call still returns only after its rows are committed, and the order of the
calls is kept (one FIFO queue, one writer), so what a killed run leaves in the database is
what the stock saver would have left at a commit boundary. The connection runs WAL with
``synchronous=NORMAL``: a commit survives a killed process (only an OS crash or power loss
can drop the last commits; the LLM calls behind them stay in the LLM cache either way).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, ChannelVersions, Checkpoint, CheckpointMetadata, \
    get_checkpoint_metadata
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

BUSY_TIMEOUT_S = 120.0    # how long a write waits for another process's transaction (sqlite's default: 5 s)

_PUT = ("INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
        "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)")
_WRITES = ("{} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


class GroupCommitSqliteSaver(AsyncSqliteSaver):
    """See module docstring. Use like the parent: ``async with GroupCommitSqliteSaver.from_conn_string(path)``."""

    def __init__(self, conn, *, serde=None) -> None:
        super().__init__(conn, serde=serde)
        self._queue: list[tuple[str, list[tuple], asyncio.Future]] = []
        self._flusher: asyncio.Task | None = None
        self.transactions = 0          # commits made (tests, benchmarks)
        self.statements = 0            # aput / aput_writes calls written

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str) -> AsyncIterator["GroupCommitSqliteSaver"]:
        """The parent's, with a busy timeout of ``BUSY_TIMEOUT_S``: synthesis batches in parallel worker
        processes share the run's checkpoint database, and on a loaded machine one process's commit
        (or the first one's switch to WAL) can hold the write lock past sqlite's default 5 s."""
        async with aiosqlite.connect(conn_string, timeout=BUSY_TIMEOUT_S) as conn:
            yield cls(conn)

    async def setup(self) -> None:
        first = not self.is_setup
        await super().setup()
        if first:
            async with self.lock:
                await self.conn.execute("PRAGMA synchronous=NORMAL")

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        await self.setup()
        conf = config["configurable"]
        thread_id, checkpoint_ns = conf["thread_id"], conf["checkpoint_ns"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
        await self._write(_PUT, [(str(thread_id), checkpoint_ns, checkpoint["id"], conf.get("checkpoint_id"), type_,
                                  blob, meta)])
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        verb = "INSERT OR REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "INSERT OR IGNORE"
        await self.setup()
        conf = config["configurable"]
        rows = [(str(conf["thread_id"]), str(conf["checkpoint_ns"]), str(conf["checkpoint_id"]), task_id, task_path,
                 WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
                for idx, (channel, value) in enumerate(writes)]
        await self._write(_WRITES.format(verb), rows)

    # -- group commit ------------------------------------------------------------------------
    async def _write(self, sql: str, rows: list[tuple]) -> None:
        fut = asyncio.get_running_loop().create_future()
        self._queue.append((sql, rows, fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        await asyncio.shield(fut)     # a cancelled caller does not cancel the others' commit

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                async with self.lock:
                    await self.conn._execute(_write_batch, self.conn._conn, [(s, r) for s, r, _ in batch])
                self.transactions += 1
                self.statements += len(batch)
            except BaseException as exc:  # noqa: BLE001 - every waiter of this transaction gets the error
                for *_, f in batch:
                    if not f.done():
                        f.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for *_, f in batch:
                if not f.done():
                    f.set_result(None)


def _write_batch(db, items: list[tuple[str, list[tuple]]]) -> None:
    """Runs in aiosqlite's thread: every queued statement in one transaction."""
    try:
        for sql, rows in items:
            db.executemany(sql, rows)
        db.commit()
    except BaseException:
        db.rollback()
        raise
