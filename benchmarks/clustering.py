"""Clustering time and peak memory (kNN + greedy traversal + repair, and HDBSCAN topics).

Synthetic normalised 384-d vectors around 1 centre per 200 points. Peak memory is the
process's max RSS growth (resource.getrusage), measured per size in a fresh subprocess.
The peer is sklearn's NearestNeighbors(brute, cosine) for the kNN part, same data, same run.

    python benchmarks/clustering.py --sizes 10000 50000 100000
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one(n: int, k: int, topics: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from clustering.greedy import greedy_clusters
    from clustering.knn import knn
    from clustering.topics import TopicConfig, fit_topics
    rng = np.random.default_rng(0)
    c = rng.normal(size=(max(1, n // 200), 384)).astype(np.float32)
    x = c[rng.integers(0, len(c), n)] + 0.5 * rng.normal(size=(n, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    idx, _ = knn(x, k=k)
    t_knn = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = greedy_clusters(idx, size=8, seed=0, vectors=x)
    t_greedy = time.perf_counter() - t0
    t_topics = None
    if topics:
        t0 = time.perf_counter()
        fit_topics(x, [""] * n, TopicConfig(min_cluster_size=15))
        t_topics = time.perf_counter() - t0
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    t_peer = None
    if n <= 50000:
        from sklearn.neighbors import NearestNeighbors
        t0 = time.perf_counter()
        NearestNeighbors(n_neighbors=k + 1, algorithm="brute", metric="cosine").fit(x).kneighbors(x)
        t_peer = time.perf_counter() - t0
    return {"n": n, "knn_s": t_knn, "greedy_s": t_greedy, "topics_s": t_topics, "peak_mb": peak,
            "clusters": len(res.clusters), "sklearn_knn_s": t_peer}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--no-topics", action="store_true")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.k, not args.no_topics)))
        return
    print(f"{'n':>8}{'kNN s':>9}{'greedy s':>10}{'topics s':>10}{'peak MB':>9}{'clusters':>10}"
          f"{'sklearn kNN s':>15}{'ratio':>7}")
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--one", str(n), "--k", str(args.k)] + (["--no-topics"] if args.no_topics else [])
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        peer = r["sklearn_knn_s"]
        print(f"{r['n']:>8}{r['knn_s']:>9.2f}{r['greedy_s']:>10.2f}"
              f"{(r['topics_s'] if r['topics_s'] is not None else float('nan')):>10.2f}{r['peak_mb']:>9.0f}"
              f"{r['clusters']:>10}{(peer if peer else float('nan')):>15.2f}"
              f"{(peer / r['knn_s'] if peer else float('nan')):>7.2f}")


if __name__ == "__main__":
    main()
