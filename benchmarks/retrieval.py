"""Retrieval benchmark: our BM25 vs raw bm25s vs rank_bm25, and exact dense search.

Synthetic corpus (seeded): a Zipf-distributed vocabulary of random lower-case words,
documents of ~60 words, queries of 3-6 words drawn from random documents. Every case runs
in its own spawned process so its peak memory (``ru_maxrss``) is its own; the table shows
that peak and the increase over the process's resident size once the corpus was generated.

* ``ours``: :class:`retrieval.bm25.BM25Retriever` (defaults: lucene, k1 1.2, b 0.75, regex
  tokenizer), in-memory index; ``ours+persist`` also writes the index to a temporary folder
  and reports the time of a second ``index()`` that loads it (hash the corpus + load).
* ``bm25s``: raw ``bm25s`` (its own tokenizer, no stopwords, no stemmer; same k1/b/method),
  ``retrieve(k=10)``.
* ``rank_bm25``: ``BM25Okapi`` + ``get_top_n``; slow per query, so it gets at most
  ``--rank-bm25-queries`` queries and is skipped above ``--rank-bm25-max`` documents.
* ``dense``: exact blocked inner-product search (:func:`retrieval.dense.exact_topk`) on
  random unit vectors (dim 384, MiniLM's) for search throughput; encoding speed is a model
  property (see ``benchmarks/embedding.py``), optional here with ``--encode N``. Skipped above
  ``--dense-max`` documents (1M x 384 float32 = 1.5 GB).

Usage: ``python benchmarks/retrieval.py`` (10k docs, about a minute) or
``python benchmarks/retrieval.py --sizes 10000,100000,1000000``.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

K = 10


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def best_of(n: int, fn) -> float:
    """Fastest of ``n`` timed calls (queries are cheap and timings on shared CPUs are noisy)."""
    best = float("inf")
    for _ in range(max(1, n)):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def synth_corpus(n_docs: int, n_queries: int, seed: int = 0, vocab_size: int = 50_000, doc_len: int = 60):
    import numpy as np
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lens = rng.integers(3, 11, size=vocab_size)
    vocab = {"".join(rng.choice(letters, n)) for n in lens}
    vocab = sorted(vocab)
    ranks = np.arange(1, len(vocab) + 1)
    p = 1.0 / ranks ** 1.07
    p /= p.sum()
    vocab_arr = np.array(vocab, dtype=object)
    lengths = np.clip(rng.poisson(doc_len, size=n_docs), 5, None)
    total = int(lengths.sum())
    words = vocab_arr[rng.choice(len(vocab), size=total, p=p)]
    docs = []
    pos = 0
    for i, n in enumerate(lengths.tolist()):
        docs.append((f"d{i:08d}", " ".join(words[pos:pos + n])))
        pos += n
    queries = {}
    for j in range(n_queries):
        text = docs[int(rng.integers(n_docs))][1].split()
        m = int(rng.integers(3, 7))
        start = int(rng.integers(0, max(1, len(text) - m)))
        queries[f"q{j}"] = " ".join(text[start:start + m])
    return docs, queries


def case(system: str, n_docs: int, n_queries: int, args: dict) -> dict:
    """Run one (system, size) case in this (fresh) process."""
    import numpy as np
    out = {"system": system, "n_docs": n_docs}
    if system == "dense":
        from retrieval.base import id_ranks
        from retrieval.dense import exact_topk
        rng = np.random.default_rng(1)
        base = rss_mb()
        t = time.perf_counter()
        corpus = rng.standard_normal((n_docs, 384), dtype=np.float32)
        corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
        q = rng.standard_normal((n_queries, 384), dtype=np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        rank = id_ranks([f"d{i:08d}" for i in range(n_docs)])
        out["index_s"] = time.perf_counter() - t
        out["base_mb"] = base
        out["query_s"] = best_of(args["repeat"], lambda: exact_topk(q, corpus, K, rank))
        out["n_queries"] = n_queries
        if args.get("encode"):
            from embedding.encoder import encode, load_encoder
            load_encoder()
            docs, _ = synth_corpus(args["encode"], 0, seed=3)
            t = time.perf_counter()
            encode([d for _, d in docs])
            out["encode_per_s"] = args["encode"] / (time.perf_counter() - t)
        out["peak_mb"] = peak_mb()
        return out

    docs, queries = synth_corpus(n_docs, n_queries)
    if system == "rank_bm25":
        queries = dict(list(queries.items())[:args["rank_bm25_queries"]])
    out["n_queries"] = len(queries)
    base = rss_mb()
    out["base_mb"] = base
    if system in ("ours", "ours+persist"):
        import bm25s  # noqa: F401 - import outside the timed section, as for raw bm25s

        from retrieval.bm25 import BM25Retriever
        tmp = tempfile.mkdtemp(prefix="bench-bm25-") if system == "ours+persist" else None
        r = BM25Retriever(index_dir=tmp, n_threads=args["threads"])
        t = time.perf_counter()
        r.index(docs)
        out["index_s"] = time.perf_counter() - t
        out["query_s"] = best_of(args["repeat"], lambda: r.search(queries, K))
        if tmp:
            t = time.perf_counter()
            r2 = BM25Retriever(index_dir=tmp).index(docs)
            out["reload_s"] = time.perf_counter() - t
            assert r2.loaded_from_cache
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    elif system == "bm25s":
        import bm25s
        texts = [d for _, d in docs]
        t = time.perf_counter()
        toks = bm25s.tokenize(texts, stopwords=None, stemmer=None, show_progress=False)
        m = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        m.index(toks, show_progress=False)
        out["index_s"] = time.perf_counter() - t
        def query():
            qt = bm25s.tokenize(list(queries.values()), stopwords=None, stemmer=None, show_progress=False)
            m.retrieve(qt, k=min(K, n_docs), show_progress=False, n_threads=args["threads"])
        out["query_s"] = best_of(args["repeat"], query)
    elif system == "rank_bm25":
        from rank_bm25 import BM25Okapi

        from retrieval.bm25 import BM25Tokenizer
        tok = BM25Tokenizer()
        t = time.perf_counter()
        m = BM25Okapi([tok(d) for _, d in docs], k1=1.2, b=0.75)
        out["index_s"] = time.perf_counter() - t
        ids = [d for d, _ in docs]
        out["query_s"] = best_of(1, lambda: [m.get_top_n(tok(qt), ids, n=K) for qt in queries.values()])
    else:
        raise ValueError(system)
    out["peak_mb"] = peak_mb()
    return out


def run_isolated(system: str, n_docs: int, n_queries: int, args: dict) -> dict:
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(case, system, n_docs, n_queries, args).result()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000", help="comma-separated corpus sizes, e.g. 10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=500, help="queries per case")
    ap.add_argument("--threads", type=int, default=2, help="search threads for ours and bm25s")
    ap.add_argument("--repeat", type=int, default=3, help="query timing: best of N runs (rank_bm25: 1)")
    ap.add_argument("--rank-bm25-queries", type=int, default=50)
    ap.add_argument("--rank-bm25-max", type=int, default=100_000)
    ap.add_argument("--dense-max", type=int, default=100_000)
    ap.add_argument("--encode", type=int, default=0, help="also time MiniLM encoding of N synthetic passages")
    ap.add_argument("--systems", default="ours,ours+persist,bm25s,rank_bm25,dense")
    a = ap.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in a.sizes.split(",") if s]
    systems = [s for s in a.systems.split(",") if s]
    args = {"threads": a.threads, "repeat": a.repeat, "rank_bm25_queries": a.rank_bm25_queries, "encode": a.encode}
    rows = []
    for n in sizes:
        for s in systems:
            if s == "rank_bm25" and n > a.rank_bm25_max:
                continue
            if s == "dense" and n > a.dense_max:
                continue
            print(f"... {s} on {n:,} docs", file=sys.stderr, flush=True)
            rows.append(run_isolated(s, n, a.queries, args))
    print_table(rows)
    return 0


def print_table(rows: list[dict]) -> None:
    ours = {r["n_docs"]: r for r in rows if r["system"] == "ours"}
    head = ("docs", "system", "index s", "docs/s", "queries", "query s", "queries/s",
            "index x ours", "q/s x ours", "reload s", "peak MB", "+MB")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        qps = r["n_queries"] / r["query_s"] if r["query_s"] > 0 else float("inf")
        o = ours.get(r["n_docs"])
        ix = f"{r['index_s'] / o['index_s']:.2f}" if o and r["system"] != "dense" else ""
        qx = ""
        if o and r["system"] != "dense":
            oqps = o["n_queries"] / o["query_s"]
            qx = f"{qps / oqps:.2f}"
        idx_label = "build" if r["system"] != "dense" else "gen"
        extra = f" ({r['encode_per_s']:.0f} enc/s)" if r.get("encode_per_s") else ""
        print(f"| {r['n_docs']:,} | {r['system']}{extra} | {r['index_s']:.2f} ({idx_label}) | "
              f"{r['n_docs'] / r['index_s']:,.0f} | {r['n_queries']} | {r['query_s']:.3f} | {qps:,.1f} | "
              f"{ix} | {qx} | {r.get('reload_s', float('nan')):.2f} | {r['peak_mb']:,.0f} | "
              f"{r['peak_mb'] - r['base_mb']:,.0f} |".replace("nan", ""))
    print("\nindex x ours: build time relative to ours (>1 = slower); q/s x ours: query throughput relative "
          "to ours (>1 = faster). dense 'gen' = generating the random vectors, not encoding.")


if __name__ == "__main__":
    sys.exit(main())
