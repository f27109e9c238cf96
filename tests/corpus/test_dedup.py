import random

import pytest

from corpus.dedup import DedupConfig, exact_jaccard, find_duplicates, shingles


def _text(seed, n=200):
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                    for _ in range(n))


def test_shingles_reference_normalisation():
    assert shingles("AB  c\nD", 3) == {b"ab ", b"b c", b" c ", b"c d"}
    assert shingles("ab", 5) == {b"ab"}  # too short: hashed whole, never silently dropped


def test_planted_near_duplicate_dropped_distinct_kept():
    base = _text(1)
    near = base[:-30] + " with a slightly different ending"
    other = _text(2)
    assert exact_jaccard(base, near) > 0.8 and exact_jaccard(base, other) < 0.5
    dups = find_duplicates(["a", "b", "c", "d"], [base, other, near, "tiny"])
    assert [(d.item_id, d.duplicate_of) for d in dups] == [("c", "a")]
    assert dups[0].jaccard > 0.5


def test_first_occurrence_kept_and_disabled():
    base = _text(3)
    dups = find_duplicates(["x", "y", "z"], [base, base, base])
    assert [(d.item_id, d.duplicate_of) for d in dups] == [("y", "x"), ("z", "x")]
    assert find_duplicates(["x", "y"], [base, base], DedupConfig(enabled=False)) == []


class _ReferenceDeduper:
    """The previous implementation (datasketch MinHashLSH of LeanMinHash objects), kept as the
    oracle: the compact index must give exactly its duplicates, pairs and Jaccard values."""

    def __init__(self, cfg):
        from datasketch import MinHashLSH
        self.cfg = cfg
        self._lsh = MinHashLSH(threshold=cfg.threshold, num_perm=cfg.num_perm)
        self._kept, self._order, self._seen = {}, {}, 0

    def add(self, ids, texts):
        from datasketch import LeanMinHash, MinHash
        from corpus.dedup import Duplicate
        cfg = self.cfg
        hashes = MinHash.generator((shingles(t, cfg.ngram) or {b""} for t in texts), num_perm=cfg.num_perm,
                                   seed=cfg.seed)
        dups = []
        for item_id, mh in zip(ids, hashes):
            i = self._seen
            self._seen += 1
            best = None
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
            self._kept[item_id], self._order[item_id] = lean, i
            self._lsh.insert(item_id, lean)
        return dups


def _planted_corpus(n_base=150, seed=7):
    """Distinct passages, near-duplicates at several edit levels (some just above, some just below
    the threshold), exact copies, passages sharing a long template (band collisions that fail
    verification), near-duplicates of dropped items, tiny and empty texts; shuffled."""
    rng = random.Random(seed)
    texts = [_text(1000 + k, n=rng.randint(40, 160)) for k in range(n_base)]
    template = _text(99, n=60)
    texts += [template + " " + _text(2000 + k, n=rng.randint(30, 70)) for k in range(60)]
    for k in range(200):
        src = rng.choice(texts)
        words = src.split()
        for _ in range(rng.choice([1, 3, 8, 15, 25, 40])):
            words[rng.randrange(len(words))] = _text(rng.randrange(10 ** 6), n=1)
        texts.append(" ".join(words) if rng.random() < 0.8 else src)
    texts += ["tiny", "tiny", "", "  ", "abcd", "ABCD e"]
    rng.shuffle(texts)
    return [f"doc-{k}" for k in range(len(texts))], texts


@pytest.mark.parametrize("verify", [True, False])
def test_compact_index_matches_datasketch_lsh(monkeypatch, verify):
    from corpus.dedup import Deduper
    ids, texts = _planted_corpus()
    cfg = DedupConfig(verify=verify)
    ref = _ReferenceDeduper(cfg)
    expected = [d for a in range(0, len(ids), 50) for d in ref.add(ids[a:a + 50], texts[a:a + 50])]
    assert 100 < len(expected) < len(ids) - 150          # many planted duplicates, many kept
    assert find_duplicates(ids, texts, cfg) == expected
    monkeypatch.setattr(Deduper, "_BLOCK_BITS", 4)        # many signature blocks, many table rebuilds
    monkeypatch.setattr(Deduper, "_MIN_SLOTS", 8)
    for size in (1, 7, 64):
        d = Deduper(cfg)
        got = [x for a in range(0, len(ids), size) for x in d.add(ids[a:a + size], texts[a:a + size])]
        assert got == expected, size
        assert len(d) == len(ids) - len(expected)


def test_compact_index_is_small(monkeypatch):
    from corpus.dedup import Deduper
    monkeypatch.setattr(Deduper, "_BLOCK_BITS", 10)       # blocks of 1024 signatures
    d = Deduper(DedupConfig())
    n = 3000
    d.add([f"p{k}" for k in range(n)], [_text(5000 + k, n=40) for k in range(n)])
    assert len(d) == n
    assert d.nbytes() / n < 1200          # ~512 B signature + 25 bands x 4 B x 2..4 slots + id
