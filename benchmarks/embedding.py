"""Embedding throughput: the pipeline's embed path vs plain SentenceTransformer.encode.

Same texts, same model, same process; the ratio shows the pipeline's overhead (cache
lookup, Parquet cache writes, blocking). A second pipeline pass shows the cache-hit speed.

    python benchmarks/embedding.py --n 2000
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    import random

    from embedding.encoder import load_encoder
    from embedding.store import EmbeddingCache, embed_with_cache
    from storage.records import content_hash

    rng = random.Random(0)
    words = open(Path(__file__).resolve().parents[1] / "examples/wiki/berlin_wall.md").read().split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(40, 120))) for _ in range(args.n)]
    hashes = [content_hash(t) for t in texts]
    model = load_encoder()
    model.encode(texts[:64], batch_size=args.batch_size)  # warm-up

    t0 = time.perf_counter()
    model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, show_progress_bar=False)
    plain = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        cache = EmbeddingCache(d)
        t0 = time.perf_counter()
        embed_with_cache(texts, hashes, cache, batch_size=args.batch_size)
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        _, n_new = embed_with_cache(texts, hashes, cache, batch_size=args.batch_size)
        hit = time.perf_counter() - t0
    print(f"{'path':<34}{'seconds':>10}{'texts/s':>12}{'ratio vs plain':>16}")
    for name, s in [("SentenceTransformer.encode", plain), ("pipeline embed (cold cache)", ours),
                    ("pipeline embed (warm cache)", hit)]:
        print(f"{name:<34}{s:>10.2f}{args.n / s:>12.1f}{plain / s:>16.2f}")
    print(f"n={args.n} texts of 40-120 words, batch {args.batch_size}; warm pass re-encoded {n_new} texts")


if __name__ == "__main__":
    main()
