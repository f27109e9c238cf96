"""The in-memory lookup index of one model folder of the embedding cache: 64-bit keys of
content hashes -> (part, row), in a large sorted tier plus the parts indexed since the last
merge (about 16 bytes per cached vector, no hash strings)."""
from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np


def _key(h: str) -> int:
    """64-bit index key of a content hash: its first 16 hex digits (sha256 hashes), else a
    blake2b digest. Keys only narrow a lookup down; every match is confirmed on the full hash."""
    try:
        v = int(h[:16], 16)
        if 0 <= v < 1 << 64:
            return v
    except ValueError:
        pass
    return int.from_bytes(hashlib.blake2b(h.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def keys_of(hashes: Sequence[str]) -> np.ndarray:
    """The index keys of ``hashes`` (uint64)."""
    return np.fromiter((_key(h) for h in hashes), dtype=np.uint64, count=len(hashes))


class Index:
    """hash key -> (part, row) of one model folder: a large merged tier (sorted keys) plus the
    parts indexed since the last merge; about 16 bytes per cached vector, no hash strings."""

    MERGE_AFTER = 32

    def __init__(self) -> None:
        self.names: list[str] = []                     # part id -> file name
        self.groups: dict[int, np.ndarray] = {}        # part id -> row offsets of its row groups (+ end)
        self.live: set[int] = set()
        self.merged = (np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros(0, np.int64))
        self.recent: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def part_names(self) -> set[str]:
        return {self.names[i] for i in self.live}

    def add_part(self, name: str, keys: np.ndarray, groups: np.ndarray) -> None:
        pid = len(self.names)
        self.names.append(name)
        self.groups[pid] = groups
        self.live.add(pid)
        order = np.argsort(keys, kind="stable")
        self.recent.append((keys[order], np.full(len(keys), pid, np.int32), order.astype(np.int64)))
        if len(self.recent) >= self.MERGE_AFTER:
            self._merge()

    def remove_parts(self, names: set[str]) -> None:
        gone = {i for i in self.live if self.names[i] in names}
        if not gone:
            return
        self.live -= gone
        self._merge()
        k, p, r = self.merged
        keep = ~np.isin(p, np.fromiter(gone, np.int32, len(gone)))
        self.merged = (k[keep], p[keep], r[keep])

    def _merge(self) -> None:
        tiers = [self.merged, *self.recent]
        k = np.concatenate([t[0] for t in tiers])
        p = np.concatenate([t[1] for t in tiers])
        r = np.concatenate([t[2] for t in tiers])
        order = np.argsort(k, kind="stable")
        self.merged = (k[order], p[order], r[order])
        self.recent = []

    def candidates(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query position, part id, row) of every entry whose key equals a query key."""
        out_q, out_p, out_r = [], [], []
        for tk, tp, tr in (self.merged, *self.recent):
            if not len(tk):
                continue
            lo = np.searchsorted(tk, keys, "left")
            hi = np.searchsorted(tk, keys, "right")
            n = hi - lo
            if not n.any():
                continue
            q = np.repeat(np.arange(len(keys)), n)
            pos = np.repeat(lo, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
            out_q.append(q)
            out_p.append(tp[pos])
            out_r.append(tr[pos])
        if not out_q:
            return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64)
        return np.concatenate(out_q), np.concatenate(out_p), np.concatenate(out_r)
