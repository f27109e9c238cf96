"""A persistent, content-addressed cache of LLM responses.

Key: sha256 of the canonical JSON of everything that determines the answer: model id,
sampling parameters, messages, requested JSON schema, logprob options, prompt version and
sample index. Never the API key, the base URL or the endpoint's name: the same request to
the same model is the same call wherever it is served from.

Storage: one JSON file per key, ``<root>/<key[:2]>/<key>.json``. A writer writes a unique
temporary file in the same folder, fsyncs it and ``os.replace``-s it onto the final name,
so a reader sees either nothing or a complete entry: a kill at any moment leaves no torn
entry, and concurrent writers (threads or processes) of the same key both write complete,
equivalent files (last rename wins). Each entry carries its key and a checksum of its
payload; anything that does not verify is treated as a miss.

Group commit (``group_commit=True``, what :class:`agents.session.LLMSession` uses): ``put``
stages the entry in memory (``get`` sees it at once, so no twin request goes out) and
:meth:`CallCache.flush` commits every staged entry as one batch: temp files written, one
``os.sync()`` for the whole batch (when ``fsync``), then the renames. The session's
:class:`agents.accounting.CallLog` calls it before writing the matching ``llm_calls``
rows, every few milliseconds or calls, at the end of every ``map`` and at close. A kill
loses only the staged entries, whose rows are lost with them, so those calls are asked
again exactly once on a rerun and nothing is ever duplicated.

Mirror (an object-store run, :class:`storage.run_files.ObjectMirror`): every committed entry is also
written through to the store before ``put`` / ``flush`` return, so another machine resuming the run
finds it there (:meth:`agents.session.LLMSession` fetches what its local folder lacks).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

log = logging.getLogger("mtr.agents.cache")

FORMAT = 1


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(*, model: str, sampling: dict[str, Any], messages: list[dict[str, Any]],
              schema: dict[str, Any] | None, prompt_version: str,
              logprobs: bool = False, top_logprobs: int | None = None, sample: int = 0) -> str:
    """The content address of one request (see module docstring)."""
    material = {
        "v": FORMAT, "model": model, "sampling": sampling, "messages": messages,
        "schema": schema, "prompt_version": prompt_version,
        "logprobs": bool(logprobs), "top_logprobs": top_logprobs if logprobs else None,
        "sample": sample,
    }
    return hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()


class CallCache:
    """Read and write cache entries under ``root`` (see module docstring).

    Args:
        root: cache directory (created on first write).
        fsync: fsync each entry before the rename (durable across power loss; a process
            kill is safe either way).
    """

    def __init__(self, root: str | os.PathLike, *, fsync: bool = True, group_commit: bool = False,
                 mirror: Any = None) -> None:
        self.root = Path(root)
        self.mirror = mirror                     # write-through copy (an object-store run: storage.run_files)
        self._root = os.fspath(self.root)
        self.fsync = fsync
        self.group_commit = group_commit
        self._staged: dict[str, bytes] = {}
        self._dirs: set[str] = set()             # entry folders known to exist
        self._tmp_tag = uuid.uuid4().hex[:8]     # temp names: tag + counter (no random per entry)
        self._tmp_seq = itertools.count()
        self._lock = threading.Lock()            # the staged entries
        self._commit_lock = threading.Lock()     # one committer at a time

    def __repr__(self) -> str:
        return f"CallCache({str(self.root)!r})"

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _spath(self, key: str) -> str:
        # plain strings on the hot path (a Path costs more than the lookup itself)
        return f"{self._root}/{key[:2]}/{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached response payload of ``key``, or None (missing or not verifiable)."""
        data = self._staged.get(key)
        try:
            if data is None:
                with open(self._spath(key), "rb") as f:
                    data = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cache entry %s.json unreadable (%s); treating as a miss", key, type(exc).__name__)
            return None
        try:
            entry = json.loads(data)
            payload = entry["response"]
            ok = (entry.get("format") == FORMAT and entry.get("key") == key
                  and entry.get("checksum") == _checksum(payload))
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            log.warning("cache entry %s.json does not verify; treating as a miss", key)
            return None
        return payload

    def put(self, key: str, payload: dict[str, Any], meta: dict[str, Any] | None = None) -> Path:
        """Write ``payload`` for ``key`` atomically (temp file + fsync + rename), or, with
        group commit, stage it for the next :meth:`flush`. Returns the entry's path."""
        entry = {"format": FORMAT, "key": key, "created_at": time.time(),
                 "meta": meta or {}, "response": payload, "checksum": _checksum(payload)}
        data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        if self.group_commit:
            with self._lock:
                self._staged[key] = data
            return self.path(key)
        tmp = self._write_temp(key, data, fsync=self.fsync)
        os.replace(tmp, self._spath(key))
        if self.mirror is not None:
            self.mirror.push([(f"{key[:2]}/{key}.json", data)])
        return self.path(key)

    @property
    def pending(self) -> int:
        """Entries staged and not yet committed."""
        return len(self._staged)

    def flush(self) -> int:
        """Commit every staged entry (one sync for the batch); returns how many."""
        with self._commit_lock:
            with self._lock:
                batch = list(self._staged.items())
            if not batch:
                return 0
            temps = [(self._write_temp(key, data, fsync=False), self._spath(key)) for key, data in batch]
            if self.fsync:
                os.sync()                                   # one sync for the whole batch
            for tmp, final in temps:
                os.replace(tmp, final)
            if self.mirror is not None:                    # before the llm_calls rows that count these calls
                self.mirror.push([(f"{key[:2]}/{key}.json", data) for key, data in batch])
            with self._lock:
                for key, data in batch:
                    if self._staged.get(key) is data:       # unless re-staged meanwhile
                        del self._staged[key]
            return len(batch)

    def _write_temp(self, key: str, data: bytes, *, fsync: bool) -> str:
        folder = f"{self._root}/{key[:2]}"
        if folder not in self._dirs:
            os.makedirs(folder, exist_ok=True)
            self._dirs.add(folder)
        tmp = f"{folder}/.{key}.{os.getpid()}.{self._tmp_tag}{next(self._tmp_seq)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:       # the folder was removed under us
            self._dirs.discard(folder)
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if fsync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        os.close(fd)
        return tmp

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def entries(self) -> list[Path]:
        """Paths of all final entries (temporary files excluded)."""
        if not self.root.exists():
            return []
        return sorted(q for q in self.root.glob("*/*.json") if not q.name.startswith("."))

    def clean_temp(self, older_than_s: float = 3600.0) -> int:
        """Remove temporary files left by killed writers; returns how many were removed."""
        n = 0
        cutoff = time.time() - older_than_s
        for q in self.root.glob("*/.*.tmp") if self.root.exists() else []:
            try:
                if q.stat().st_mtime < cutoff:
                    q.unlink()
                    n += 1
            except FileNotFoundError:
                pass
        return n


def _checksum(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:32]
