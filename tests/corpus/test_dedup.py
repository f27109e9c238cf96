import random

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
