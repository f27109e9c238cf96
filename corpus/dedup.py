"""MinHash near-duplicate removal (datasketch signatures and banding, a compact LSH index), reference defaults.

Shingles are character 5-grams of the lower-cased, whitespace-collapsed text; 128
permutations; LSH at Jaccard threshold 0.5. Items are processed in input order and the
first occurrence is kept. Unlike the reference, an item is compared with *kept* items
only (no chains through dropped items), candidates are confirmed with the MinHash Jaccard
estimate, and texts too short for a 5-gram are hashed whole instead of silently dropped.
Every dropped item records which kept item it duplicates.
"""
from __future__ import annotations

import functools
import re
from array import array
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class DedupConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    ngram: int = Field(5, ge=1, description="character n-gram size of the shingles")
    num_perm: int = Field(128, ge=16)
    threshold: float = Field(0.5, gt=0, le=1, description="Jaccard threshold of the LSH")
    verify: bool = Field(True, description="confirm LSH candidates with the MinHash Jaccard estimate")
    seed: int = 1


@dataclass(frozen=True, slots=True)
class Duplicate:
    item_id: str
    duplicate_of: str
    jaccard: float


def shingles(text: str, n: int = 5) -> set[bytes]:
    t = re.sub(r"\s+", " ", text.lower()).strip()
    if len(t) < n:
        return {t.encode("utf-8")} if t else set()
    return {t[i:i + n].encode("utf-8") for i in range(len(t) - n + 1)}


class Deduper:
    """Streaming MinHash near-duplicate finder: feed items in batches, in input order.

    Holds only the kept items' signatures, ids and an LSH index, never their texts, so a corpus
    can be deduplicated batch by batch; feeding the items in any batch sizes gives the same
    duplicates as one :func:`find_duplicates` call over all of them.

    The banding is datasketch's ``MinHashLSH`` at ``threshold``/``num_perm`` (its ``b`` bands of
    ``r`` values; an item is a candidate when one band is equal), and the results are exactly
    those of querying such an index of the kept items, but the index is compact (peak RSS ~0.9 KB
    per item at 100k items instead of ~9.4 KB of band byte-strings, bucket sets, key lists and
    ``LeanMinHash`` objects; ``benchmarks/memory.py --dedup-only``):

    * signatures: one ``uint32`` row per kept item (datasketch's hash values are 32-bit), in
      fixed blocks of rows (no copy of the whole array when it grows);
    * ids: UTF-8 bytes in one ``bytearray`` plus end offsets (``array('q')``);
    * per band, an open-addressing table (linear probing, load <= 1/2) of ``int32`` kept-item
      numbers at the slot of a 64-bit hash of the band; a probe compares the band *values*
      stored in the signatures, so a hash collision never makes a candidate and no key is
      stored. The tables are rebuilt from the signatures when they grow.

    Item ids are expected to be unique (the callers filter duplicate ids first). Kept items are
    numbered in input order, so "the earliest kept candidate" is the smallest number.
    """

    _BLOCK_BITS = 14        # signature rows per block = 2**_BLOCK_BITS (8 MB at 128 permutations)
    _MIN_SLOTS = 1024       # initial slots per band table (power of two)
    _REBUILD_ROWS = 2048    # kept items re-inserted at a time when the tables grow (bounds temporaries)

    def __init__(self, cfg: DedupConfig | None = None) -> None:
        self.cfg = cfg or DedupConfig()
        self.bands, self.rows = _lsh_params(self.cfg.threshold, self.cfg.num_perm)
        self._blocks: list[np.ndarray] = []          # (2**_BLOCK_BITS, num_perm) uint32 each
        self._ids = bytearray()
        self._id_end = array("q")
        self._n = 0                                  # kept items
        self._table = np.full((self.bands, self._MIN_SLOTS), -1, dtype=np.int32)

    def __len__(self) -> int:
        return self._n

    def nbytes(self) -> int:
        """Bytes held by the index (signatures, ids, band tables)."""
        return (sum(b.nbytes for b in self._blocks) + len(self._ids) + self._id_end.itemsize * len(self._id_end)
                + self._table.nbytes)

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> list[Duplicate]:
        """Near-duplicates (of earlier kept items) among this batch; the others are kept."""
        from datasketch import MinHash   # costly: datasketch

        cfg = self.cfg
        if not cfg.enabled or not ids:
            return []
        sig = np.empty((len(ids), cfg.num_perm), dtype=np.uint32)
        for k, mh in enumerate(MinHash.generator((shingles(t, cfg.ngram) or {b""} for t in texts),
                                                 num_perm=cfg.num_perm, seed=cfg.seed)):
            hv = mh.hashvalues
            if hv.dtype != np.uint32 and hv.max(initial=0) > 0xFFFFFFFF:
                raise ValueError("MinHash values wider than 32 bits")
            sig[k] = hv
        prior = self._prior_best(sig)                # earliest verified kept item of earlier batches
        b, r = self.bands, self.rows
        local: dict[tuple[int, bytes], list[int]] = {}   # (band, values) -> batch positions kept
        kept: list[int] = []
        dups: list[Duplicate] = []
        for i, item_id in enumerate(ids):
            if i in prior:
                c, j = prior[i]
                dups.append(Duplicate(item_id, self._id(c), j))
                continue
            keys = [(band, sig[i, band * r:(band + 1) * r].tobytes()) for band in range(b)]
            cands = sorted({c for key in keys for c in local.get(key, ())})
            best = None
            for c in cands:                          # in input order: the first that passes wins
                j = float(np.count_nonzero(sig[i] == sig[c])) / float(cfg.num_perm)
                if cfg.verify and j < cfg.threshold:
                    continue
                best = (c, j)
                break
            if best is not None:
                dups.append(Duplicate(item_id, ids[best[0]], best[1]))
                continue
            for key in keys:
                local.setdefault(key, []).append(i)
            kept.append(i)
        self._keep(sig[kept], [ids[i] for i in kept])
        return dups

    # -- the index --------------------------------------------------------------------------

    def _id(self, k: int) -> str:
        return self._ids[self._id_end[k - 1] if k else 0:self._id_end[k]].decode("utf-8")

    def _hashes(self, sig: np.ndarray) -> np.ndarray:
        """(n, bands) uint64 hash of each band's values."""
        b, r = self.bands, self.rows
        h = np.full((len(sig), b), 0x9E3779B97F4A7C15, dtype=np.uint64)
        for j in range(r):                      # value j of every band: columns j, r + j, 2r + j, ...
            h ^= sig[:, j:b * r:r]
            h *= np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)      # splitmix64 finaliser
        h ^= h >> np.uint64(31)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(32)
        return h

    def _band_values(self, items: np.ndarray, band: np.ndarray) -> np.ndarray:
        """(m, rows) stored values of band ``band[k]`` of kept item ``items[k]``."""
        shift, mask = self._BLOCK_BITS, (1 << self._BLOCK_BITS) - 1
        cols = band[:, None] * self.rows + np.arange(self.rows)
        out = np.empty((len(items), self.rows), dtype=np.uint32)
        blk = items >> shift
        for bi in np.unique(blk):
            m = blk == bi
            out[m] = self._blocks[bi][(items[m] & mask)[:, None], cols[m]]
        return out

    def _rows(self, items: np.ndarray) -> np.ndarray:
        shift, mask = self._BLOCK_BITS, (1 << self._BLOCK_BITS) - 1
        out = np.empty((len(items), self.cfg.num_perm), dtype=np.uint32)
        blk = items >> shift
        for bi in np.unique(blk):
            m = blk == bi
            out[m] = self._blocks[bi][items[m] & mask]
        return out

    def _prior_best(self, sig: np.ndarray) -> dict[int, tuple[int, float]]:
        """Batch position -> (earliest kept item sharing a band and passing verification, Jaccard)."""
        if not self._n:
            return {}
        b, r = self.bands, self.rows
        n = len(sig)
        mask = np.uint64(self._table.shape[1] - 1)
        q = np.arange(n * b, dtype=np.int64)               # query = position * bands + band
        band = q % b
        pos = (self._hashes(sig).ravel() & mask).astype(np.int64)
        qvals = sig[:, :b * r].reshape(n * b, r)
        found_q, found_c = [], []
        while q.size:
            v = self._table[band, pos]
            occ = v >= 0
            q, band, pos, v = q[occ], band[occ], pos[occ], v[occ].astype(np.int64)
            if not q.size:
                break
            eq = (self._band_values(v, band) == qvals[q]).all(axis=1)
            found_q.append(q[eq] // b)
            found_c.append(v[eq])
            pos = (pos + 1) & np.int64(mask)
        if not found_q:
            return {}
        pairs = np.unique(np.stack([np.concatenate(found_q), np.concatenate(found_c)], axis=1), axis=0)
        if not len(pairs):
            return {}
        same = np.count_nonzero(sig[pairs[:, 0]] == self._rows(pairs[:, 1]), axis=1)
        jac = same.astype(np.float64) / float(self.cfg.num_perm)
        if self.cfg.verify:
            ok = jac >= self.cfg.threshold
            pairs, jac = pairs[ok], jac[ok]
        out: dict[int, tuple[int, float]] = {}
        for (p, c), j in zip(pairs.tolist(), jac.tolist()):   # sorted by (position, item): first wins
            if p not in out:
                out[p] = (c, j)
        return out

    def _keep(self, sig: np.ndarray, ids: list[str]) -> None:
        if not ids:
            return
        start, n = self._n, len(ids)
        for item_id in ids:
            self._ids += item_id.encode("utf-8")
            self._id_end.append(len(self._ids))
        size = 1 << self._BLOCK_BITS
        done = 0
        while done < n:
            k = start + done
            if (k >> self._BLOCK_BITS) == len(self._blocks):
                self._blocks.append(np.empty((size, self.cfg.num_perm), dtype=np.uint32))
            off = k & (size - 1)
            take = min(n - done, size - off)
            self._blocks[-1][off:off + take] = sig[done:done + take]
            done += take
        self._n += n
        slots = self._table.shape[1]
        if 2 * self._n > slots:                             # grow: rebuild from the signatures
            while 2 * self._n > slots:
                slots *= 2
            del self._table                                 # freed before the larger one is made
            self._table = np.full((self.bands, slots), -1, dtype=np.int32)
            for a in range(0, self._n, self._REBUILD_ROWS):
                items = np.arange(a, min(self._n, a + self._REBUILD_ROWS), dtype=np.int64)
                self._insert(items, self._rows(items))
        else:
            self._insert(np.arange(start, start + n, dtype=np.int64), sig)

    def _insert(self, items: np.ndarray, sig: np.ndarray) -> None:
        b = self.bands
        slots = self._table.shape[1]
        val = np.repeat(items, b)
        band = np.tile(np.arange(b, dtype=np.int64), len(items))
        pos = (self._hashes(sig).ravel() & np.uint64(slots - 1)).astype(np.int64)
        while val.size:
            free = np.flatnonzero(self._table[band, pos] < 0)
            _, first = np.unique(band[free] * slots + pos[free], return_index=True)
            win = free[first]                               # one item per free slot
            self._table[band[win], pos[win]] = val[win]
            rest = np.ones(val.size, dtype=bool)
            rest[win] = False
            val, band, pos = val[rest], band[rest], (pos[rest] + 1) & (slots - 1)


@functools.lru_cache(maxsize=None)
def _lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """datasketch MinHashLSH's (bands, rows per band) for this threshold."""
    from datasketch import MinHashLSH   # costly: datasketch

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return lsh.b, lsh.r


def find_duplicates(ids: Sequence[str], texts: Sequence[str], cfg: DedupConfig | None = None) -> list[Duplicate]:
    """Near-duplicates of earlier kept items, in input order."""
    cfg = cfg or DedupConfig()
    if not cfg.enabled or not ids:
        return []
    return Deduper(cfg).add(ids, texts)


def exact_jaccard(a: str, b: str, n: int = 5) -> float:
    sa, sb = shingles(a, n), shingles(b, n)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


__all__ = ["DedupConfig", "Deduper", "Duplicate", "find_duplicates", "shingles", "exact_jaccard"]
