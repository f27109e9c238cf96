"""MinHash near-duplicate removal (datasketch), reference defaults.

Shingles are character 5-grams of the lower-cased, whitespace-collapsed text; 128
permutations; LSH at Jaccard threshold 0.5. Items are processed in input order and the
first occurrence is kept. Unlike the reference, an item is compared with *kept* items
only (no chains through dropped items), candidates are confirmed with the MinHash Jaccard
estimate, and texts too short for a 5-gram are hashed whole instead of silently dropped.
Every dropped item records which kept item it duplicates.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

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

    Holds only the kept items' MinHash signatures and the LSH index, never their texts, so a
    corpus can be deduplicated batch by batch; feeding the items in any batch sizes gives
    the same duplicates as one :func:`find_duplicates` call over all of them.
    """

    def __init__(self, cfg: DedupConfig | None = None) -> None:
        from datasketch import MinHashLSH

        self.cfg = cfg or DedupConfig()
        self._lsh = MinHashLSH(threshold=self.cfg.threshold, num_perm=self.cfg.num_perm) if self.cfg.enabled else None
        self._kept: dict[str, object] = {}     # kept id -> LeanMinHash
        self._order: dict[str, int] = {}       # kept id -> input position
        self._seen = 0

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> list[Duplicate]:
        """Near-duplicates (of earlier kept items) among this batch; the others are kept."""
        from datasketch import LeanMinHash, MinHash

        cfg = self.cfg
        if not cfg.enabled or not ids:
            self._seen += len(ids)
            return []
        hashes = MinHash.generator((shingles(t, cfg.ngram) or {b""} for t in texts), num_perm=cfg.num_perm,
                                   seed=cfg.seed)
        dups: list[Duplicate] = []
        for item_id, mh in zip(ids, hashes):
            i = self._seen
            self._seen += 1
            best: tuple[int, str, float] | None = None
            for c in self._lsh.query(mh):
                j = float(mh.jaccard(self._kept[c]))
                if cfg.verify and j < cfg.threshold:
                    continue
                if best is None or self._order[c] < best[0]:
                    best = (self._order[c], c, j)
            if best is not None:
                dups.append(Duplicate(item_id, best[1], best[2]))
                continue
            lean = LeanMinHash(mh)
            self._kept[item_id] = lean
            self._order[item_id] = i
            self._lsh.insert(item_id, lean)
        return dups


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
