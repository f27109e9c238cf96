"""A table written batch by batch to a temp Parquet file in row groups capped by rows and bytes
(:meth:`storage.store.RunStore.table_writer` publishes it when closed)."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from storage.errors import StoreError


class TableWriter:
    """Batches of one table going to a temp Parquet file (see :meth:`RunStore.table_writer`)."""

    def __init__(self, fs: pafs.FileSystem, name: str, tmp: str, schema: pa.Schema | None,
                 row_group_rows: int, row_group_bytes: int) -> None:
        self.fs, self.name, self.tmp, self.schema = fs, name, tmp, schema
        self.row_group_rows, self.row_group_bytes = max(1, row_group_rows), max(1, row_group_bytes)
        self.rows = 0
        self._buf: list[pa.Table] = []
        self._buf_rows = self._buf_bytes = 0
        self._sink = None
        self._writer: pq.ParquetWriter | None = None

    def _conform(self, table: pa.Table) -> pa.Table:
        if self.schema is not None and not table.schema.equals(self.schema, check_metadata=False):
            try:
                table = table.select(self.schema.names).cast(self.schema)
            except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise StoreError(f"table {self.name!r} does not match its schema: {exc}") from exc
        return table

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        """Add rows (validated against the table's schema like :meth:`RunStore.write_table`)."""
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if self.schema is None:
            self.schema = table.schema
        table = self._conform(table)
        if not len(table):
            return
        self._buf.append(table)
        self._buf_rows += len(table)
        self._buf_bytes += table.nbytes
        self.rows += len(table)
        while self._buf_rows >= self.row_group_rows or self._buf_bytes >= self.row_group_bytes:
            self._flush(final=False)

    def _open(self) -> pq.ParquetWriter:
        if self._writer is None:
            self._sink = self.fs.open_output_stream(self.tmp)
            self._writer = pq.ParquetWriter(self._sink, self.schema, compression="zstd")
        return self._writer

    def _flush(self, final: bool) -> None:
        if not self._buf:
            return
        table = pa.concat_tables(self._buf) if len(self._buf) > 1 else self._buf[0]
        # rows per group: the row cap, or fewer when the rows are wide (the byte cap)
        per_row = max(1, table.nbytes // max(1, len(table)))
        n = max(1, min(self.row_group_rows, self.row_group_bytes // per_row))
        if len(table) < n and not final:
            n = len(table)
        cut = len(table) if final else (len(table) // n) * n
        writer = self._open()
        for start in range(0, cut, n):
            writer.write_table(table.slice(start, min(n, cut - start)), row_group_size=n)
        rest = table.slice(cut)
        self._buf = [rest] if len(rest) else []
        self._buf_rows = len(rest)
        self._buf_bytes = rest.nbytes if len(rest) else 0

    def close(self) -> None:
        self._flush(final=True)
        if self._writer is None:   # no rows: an empty table with the schema
            if self.schema is None:
                raise StoreError(f"table {self.name!r}: no rows and no schema to write")
            self._open()
        self._writer.close()
        self._sink.close()

    def abort(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
            if self._sink is not None:
                self._sink.close()
        except Exception:  # noqa: BLE001 - the temp file goes anyway
            pass
        try:
            self.fs.delete_file(self.tmp)
        except (OSError, FileNotFoundError):
            pass
