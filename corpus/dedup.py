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


def find_duplicates(ids: Sequence[str], texts: Sequence[str], cfg: DedupConfig | None = None) -> list[Duplicate]:
    """Near-duplicates of earlier kept items, in input order."""
    from datasketch import LeanMinHash, MinHash, MinHashLSH

    cfg = cfg or DedupConfig()
    if not cfg.enabled or not ids:
        return []
    sets = [shingles(t, cfg.ngram) or {b""} for t in texts]
    hashes = MinHash.bulk(sets, num_perm=cfg.num_perm, seed=cfg.seed)
    lsh = MinHashLSH(threshold=cfg.threshold, num_perm=cfg.num_perm)
    kept_hash: dict[str, LeanMinHash] = {}
    order: dict[str, int] = {}
    dups: list[Duplicate] = []
    for i, (item_id, mh) in enumerate(zip(ids, hashes)):
        cands = lsh.query(mh)
        best: tuple[int, str, float] | None = None
        for c in cands:
            j = float(mh.jaccard(kept_hash[c]))
            if cfg.verify and j < cfg.threshold:
                continue
            if best is None or order[c] < best[0]:
                best = (order[c], c, j)
        if best is not None:
            dups.append(Duplicate(item_id, best[1], best[2]))
            continue
        lean = LeanMinHash(mh)
        kept_hash[item_id] = lean
        order[item_id] = i
        lsh.insert(item_id, lean)
    return dups


def exact_jaccard(a: str, b: str, n: int = 5) -> float:
    sa, sb = shingles(a, n), shingles(b, n)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


__all__ = ["DedupConfig", "Duplicate", "find_duplicates", "shingles", "exact_jaccard"]
