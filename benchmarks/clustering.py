"""Clustering at scale: kNN + greedy traversal + repair + topics, time, peak RSS, quality.

Synthetic normalised 384-d vectors around 1 centre per 200 points (generated in float32
blocks). Each size runs in a fresh subprocess; peak RSS is the process's max RSS
(``resource.getrusage``), data included. Printed per size:

* kNN / greedy / topics wall seconds and CPU seconds (user + system of the child, all
  threads) and the 1-minute load average, with the pipeline's defaults (exact kNN up to
  ``cluster.exact_max``, FAISS IVF above, ``nprobe`` auto: the calibrated nprobe, its sample
  recall and the calibration seconds are printed; topics on the clusters' centroids above
  ``topics.sample_size``; peak RSS after the topic step, i.e. of the spine, and at the end);
* recall@10 of the kNN graph against exact search for 1,000 sampled queries;
* with ``--exact-compare`` (sizes where exact kNN is affordable): greedy clusters from the
  exact graph vs from the approximate one: mean intra-cluster cosine and share of clusters
  of exactly C members, plus the exact kNN time (the peer, same data, same run);
* ``--sklearn-peer``: sklearn NearestNeighbors(brute, cosine) at <= 50k;
* topics (the cluster stage's step: HDBSCAN on the greedy clusters' weighted centroids): topics
  found of the planted ones, coverage (share of chunks with a topic) and ARI against the planted
  topics (``sklearn.metrics.adjusted_rand_score``), with the greedy clusters' purity; with
  ``--topics-compare`` also, in the same process, the old step (HDBSCAN on a fixed 20,000 sample,
  ``topics.method = "sample"``) and the measured alternative (a sample grown with the number of
  clusters, see :func:`grown_sample_topics`): wall and CPU seconds, topics, coverage, ARI.
  ``--hard``: the ``--topics-ari`` data (uneven topic sizes, 10% background noise planted as -1).

``--topics-ari N [N ...]``: ARI of sampled topics (sample ``--topics-sample``, default 20,000 =
``topics.sample_size``) against full HDBSCAN on the same data (full HDBSCAN is quadratic: keep
N <= 50k), wall and CPU seconds of both.

``--corpus PATH [PATH ...]``: the same comparisons on real MiniLM vectors. The corpora (files
or folders the curate stage reads) go through the project's own stages into a scratch run
(``corpus.stages.curate`` and ``chunk``, ``embedding.stage.embed`` with its
``EmbeddingCache`` in ``--embed-cache-dir``, so a rerun encodes nothing), config
``--corpus-config`` (default ``benchmarks/realism_mtrag.toml``: passages kept as they are).
On those vectors the approximate path is forced (FAISS IVF whatever N, at the config's
``nlist``/``nprobe`` or ``--nprobe``, ints or ``auto``: calibrated to ``cluster.target_recall``
on 1,000 sampled queries, the chosen nprobe and that sample's recall printed) and compared
with exact kNN: recall@10 over every
vector, greedy clusters from both graphs (mean intra-cluster cosine, share at C), seconds;
``--topics-ari`` adds sampled vs full topics (sample ``--topics-sample``, halved to N/2 when
it is not below N). ``--embed-cache-from DIR ...`` first copies the parts of other embedding
caches (read only) into ``--embed-cache-dir`` and merges them into one part.

    python benchmarks/clustering.py --sizes 100000 300000 1000000 --exact-compare-max 100000
    python benchmarks/clustering.py --sizes 100000 1000000 --topics-compare
    python benchmarks/clustering.py --topics-ari 30000 50000
    python benchmarks/clustering.py --corpus tests/data/mtrag/corpus/cloud.jsonl.gz \
        tests/data/mtrag/corpus/clapnq.jsonl.gz --embed-cache-dir /tmp/mtr-emb --topics-ari
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """User + system CPU seconds of this process, all threads (the machine is shared: wall
    seconds depend on the load, CPU seconds much less)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Timer:
    """Wall and CPU seconds of a block, plus the 1-minute load average at its end."""

    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), cpu_s()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.t0, cpu_s() - self.c0
        self.load = os.getloadavg()[0]


def data(n: int, d: int = 384, seed: int = 0, hard: bool = False):
    return planted(n, d, seed, hard)[0]


def planted(n: int, d: int = 384, seed: int = 0, hard: bool = False):
    """(vectors, planted topic of each: its centre, -1 for the hard data's background noise)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((max(1, n // 200), d), dtype=np.float32)
    x = np.empty((n, d), dtype=np.float32)
    if hard:   # uneven topic sizes and 10% background noise (for the topic ARI)
        w = rng.pareto(1.5, len(c)) + 0.2
        lab = rng.choice(len(c), n, p=w / w.sum())
    else:
        lab = rng.integers(0, len(c), n)
    for a in range(0, n, 65536):
        b = min(n, a + 65536)
        x[a:b] = c[lab[a:b]] + (0.8 if hard else 0.5) * rng.standard_normal((b - a, d), dtype=np.float32)
        if hard:
            bg = rng.random(b - a) < 0.1
            x[a:b][bg] = 1.2 * rng.standard_normal((int(bg.sum()), d), dtype=np.float32)
            lab[a:b][bg] = -1
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, lab


def intra(clusters, x) -> float:
    import numpy as np
    vals = []
    for m in clusters:
        if len(m) > 1:
            v = x[m]
            s = v @ v.T
            vals.append((s.sum() - len(m)) / (len(m) * (len(m) - 1)))
    return float(np.mean(vals))


def grown_sample_topics(x, n_clusters: int, cfg):
    """The alternative to the cluster centroids that was measured and not kept: HDBSCAN
    (:func:`clustering.weighted_hdbscan.hdbscan_knn`) on a seeded sample grown with the number of clusters
    (one chunk per cluster), each sample chunk weighted N / sample, the rest by nearest sample
    point (FAISS IVF over the sample, cosine), then the same outlier rule. Same number of HDBSCAN
    points as the centroids."""
    import numpy as np

    from clustering.topics import _outliers_to_noise, _sample_index
    from clustering.weighted_hdbscan import hdbscan_knn
    n = len(x)
    m = min(n, n_clusters)
    sample = np.sort(np.random.default_rng(cfg.seed).choice(n, m, replace=False))
    s_labels, _ = hdbscan_knn(x[sample], np.full(m, n / m), cfg.min_cluster_size, cfg.min_samples, seed=cfg.seed)
    index = _sample_index(np.ascontiguousarray(x[sample]), cfg.assign_nprobe)
    labels = np.empty(n, dtype=np.int64)
    for a in range(0, n, 65536):
        _, nn = index.search(np.ascontiguousarray(x[a:a + 65536]), 1)
        labels[a:a + 65536] = s_labels[nn[:, 0]]
    labels[sample] = s_labels
    _outliers_to_noise(x, labels, np.zeros(n, dtype=np.float32))
    return labels


def topic_quality(labels, lab) -> dict:
    """Topics found, coverage (share of chunks with a topic) and ARI against the planted topics."""
    from sklearn.metrics import adjusted_rand_score
    return {"topics": int(len(set(labels.tolist()) - {-1})), "coverage": float((labels >= 0).mean()),
            "ari": float(adjusted_rand_score(lab, labels))}


def one(n: int, k: int, topics: bool, exact_compare: bool, sklearn_peer: bool, nprobe=None,
        topics_compare: bool = False, hard: bool = False) -> dict:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from clustering.greedy import ClusterConfig, greedy_clusters
    from clustering.knn import build_knn, knn
    from clustering.topics import TopicConfig, fit_topics
    x, lab = planted(n, hard=hard)
    out: dict = {"n": n, "hard": hard, "planted_topics": int(lab.max() + 1), "data_peak_mb": peak_mb()}
    cc = ClusterConfig(k=k) if nprobe is None else ClusterConfig(k=k, nprobe=nprobe)
    loads = [os.getloadavg()[0]]
    with Timer() as t:
        g = build_knn(x, k=k, exact_max=cc.exact_max, nlist=cc.nlist, nprobe=cc.nprobe, seed=0, device="cpu",
                      target_recall=cc.target_recall)
    out.update(knn_s=t.wall, knn_cpu=t.cpu, method=g.method, params=g.params)
    loads.append(t.load)
    with Timer() as t:
        res = greedy_clusters(g.neighbors, size=8, seed=0, vectors=x)
    out.update(greedy_s=t.wall, greedy_cpu=t.cpu)
    loads.append(t.load)
    sizes = res.sizes()
    out.update(clusters=len(res.clusters), at_c=float((sizes == 8).mean()), intra=intra(res.clusters, x))
    # purity: share of a cluster's chunks in its most common planted topic (background noise counts as one)
    out["purity"] = float(np.mean([np.bincount(lab[m] + 1).max() / len(m) for m in res.clusters]))
    if topics:   # the cluster stage's topic step: HDBSCAN on the clusters' weighted centroids
        cfg = TopicConfig(min_cluster_size=15)
        with Timer() as t:
            tr = fit_topics(x, [""] * n, cfg, clusters=res.clusters)
        out.update(topics_s=t.wall, topics_cpu=t.cpu, topics_method=tr.method, **topic_quality(tr.labels, lab))
        loads.append(t.load)
        out["peak_mb_spine"] = peak_mb()
        if topics_compare:   # the same step, old (a fixed 20,000 sample) and the grown-sample alternative
            with Timer() as t:
                old = fit_topics(x, [""] * n, cfg.model_copy(update={"method": "sample"}))
            out["old"] = {"s": t.wall, "cpu": t.cpu, "load": t.load, **topic_quality(old.labels, lab)}
            with Timer() as t:
                grown = grown_sample_topics(x, len(res.clusters), cfg)
            out["grown"] = {"s": t.wall, "cpu": t.cpu, "load": t.load, **topic_quality(grown, lab)}
            loads += [out["old"]["load"], out["grown"]["load"]]
    out.update(peak_mb=peak_mb(), load_min=min(loads), load_max=max(loads))
    # recall@10 against exact search on 1,000 sampled queries
    rng = np.random.default_rng(1)
    q = rng.choice(n, min(n, 1000), replace=False)
    ex = np.empty((len(q), 10), dtype=np.int64)
    for a in range(0, len(q), 100):
        s = x[q[a:a + 100]] @ x.T
        s[np.arange(len(s)), q[a:a + 100]] = -np.inf
        ex[a:a + 100] = np.argpartition(-s, 10, axis=1)[:, :10]
    out["recall10"] = float(np.mean([len(set(g.neighbors[i][:10].tolist()) & set(e.tolist())) / 10
                                     for i, e in zip(q, ex)]))
    if exact_compare and g.method != "exact":
        with Timer() as t:
            exact, _ = knn(x, k=k)
        out.update(exact_knn_s=t.wall, exact_knn_cpu=t.cpu)
        rex = greedy_clusters(exact, size=8, seed=0, vectors=x)
        out.update(exact_intra=intra(rex.clusters, x), exact_at_c=float((rex.sizes() == 8).mean()))
    if sklearn_peer and n <= 50000:
        from sklearn.neighbors import NearestNeighbors
        t0 = time.perf_counter()
        NearestNeighbors(n_neighbors=k + 1, algorithm="brute", metric="cosine").fit(x).kneighbors(x)
        out["sklearn_knn_s"] = time.perf_counter() - t0
    return out


def topics_ari(n: int, sample: int = 20000) -> dict:
    sys.path.insert(0, str(ROOT))
    from sklearn.metrics import adjusted_rand_score

    from clustering.topics import TopicConfig, fit_topics
    x = data(n, hard=True)
    with Timer() as tf:
        full = fit_topics(x, [""] * n, TopicConfig(min_cluster_size=15, sample_size=n))
    cfg = TopicConfig(min_cluster_size=15, sample_size=sample)
    with Timer() as ts:
        samp = fit_topics(x, [""] * n, cfg)
    both = (full.labels >= 0) & (samp.labels >= 0)
    return {"n": n, "sample": min(n, cfg.sample_size), "full_s": tf.wall, "sampled_s": ts.wall,
            "full_cpu": tf.cpu, "sampled_cpu": ts.cpu, "load": max(tf.load, ts.load),
            "ari": adjusted_rand_score(full.labels, samp.labels),
            "ari_non_noise": adjusted_rand_score(full.labels[both], samp.labels[both]),
            "topics_full": int(full.labels.max() + 1), "topics_sampled": int(samp.labels.max() + 1),
            "noise_full": float((full.labels < 0).mean()), "noise_sampled": float((samp.labels < 0).mean())}


def seed_cache(dest: Path, sources: list[str]) -> int:
    """Copy the Parquet parts of other embedding caches (never modified) that hold a vector
    ``dest`` lacks into ``dest``, and merge each model's copied parts into one; returns the
    number of parts copied (0 on a rerun)."""
    sys.path.insert(0, str(ROOT))
    import pyarrow.parquet as pq

    from embedding.store import EmbeddingCache
    cache = EmbeddingCache(dest)
    copied: dict[str, list[Path]] = {}
    for src in sources:
        for part in sorted(Path(src).glob("*/part-*.parquet")):
            folder = part.parent.name
            hashes = pq.read_table(part, columns=["content_hash"]).column(0).to_pylist()
            if cache.contains(folder.replace("__", "/"), hashes).all():
                continue
            target = dest / folder / part.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(part, target)
            copied.setdefault(folder, []).append(target)
    for folder, parts in copied.items():
        cache.compact(folder.replace("__", "/"), parts)
    return sum(len(v) for v in copied.values())


def real_vectors(paths: list[str], work: Path, config: str, cache_dir: Path) -> tuple:
    """(config, N x d vectors, stage seconds) of the corpora through curate -> chunk -> embed."""
    sys.path.insert(0, str(ROOT))
    import corpus.stages as st
    import embedding.stage as est
    from embedding.vectors import read_embeddings
    from flows.config import load_config
    from storage.store import RunStore
    if len(paths) == 1:
        source = Path(paths[0])
    else:   # one folder of copies: the curate stage reads one path
        source = work / "input"
        shutil.rmtree(source, ignore_errors=True)
        source.mkdir(parents=True)
        for i, p in enumerate(paths):
            if Path(p).is_dir():
                shutil.copytree(p, source / f"{i}-{Path(p).name}")
            else:
                shutil.copyfile(p, source / f"{i}-{Path(p).name}")
    run = work / "run"
    shutil.rmtree(run, ignore_errors=True)
    cfg = load_config(config, {"runs_root": str(work), "embed.cache_dir": str(cache_dir)})
    store = RunStore(str(run)).ensure()
    secs: dict = {}
    with Timer() as t:
        cur = st.curate(store, str(source), cfg)
    secs["curate_s"] = t.wall
    with Timer() as t:
        ch = st.chunk(store, cfg)
    secs["chunk_s"] = t.wall
    with Timer() as t:
        em = est.embed(store, cfg)
    secs.update(embed_s=t.wall, embed_cpu=t.cpu, newly_embedded=em["newly_embedded"], from_cache=em["from_cache"],
                model=em["model"], documents=cur["documents"], chunks=ch["chunks"])
    _, x = read_embeddings(store)
    return cfg, x, secs


def describe(params: dict) -> str:
    """kNN params in one phrase: nlist / nprobe, and with nprobe auto the calibration."""
    if "nlist" not in params:
        return str(params)
    out = f"nlist {params['nlist']}, nprobe {params['nprobe']}"
    if params.get("nprobe_auto"):
        curve = ", ".join(f"{p}: {r:.3f}" for p, r in params["recall_curve"])
        out += (f" (auto: sample recall@{params['recall_at']} {params['sample_recall']:.3f} on "
                f"{params['sample_size']} queries, target {params['target_recall']}; {curve}; "
                f"calibration {params['calibration_s']:.1f} s)")
    return out


def real(a) -> None:
    """``--corpus``: approximate (IVF, forced) vs exact kNN, greedy clusters and topics on real vectors."""
    sys.path.insert(0, str(ROOT))   # the package, not this script (benchmarks/clustering.py)
    import numpy as np

    from clustering.greedy import greedy_clusters
    from clustering.knn import build_knn, knn
    from clustering.topics import fit_topics
    work = Path(a.work)
    cache_dir = Path(a.embed_cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    if a.embed_cache_from:
        print(f"embedding cache {cache_dir}: {seed_cache(cache_dir, a.embed_cache_from)} parts copied from "
              f"{', '.join(a.embed_cache_from)}", flush=True)
    cfg, x, secs = real_vectors(a.corpus, work, a.corpus_config, cache_dir)
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, c = len(x), cfg.cluster
    print(f"real vectors: N = {n} chunks ({secs['documents']} documents) of {', '.join(a.corpus)}, "
          f"{secs['model']} {x.shape[1]}-d; curate {secs['curate_s']:.1f} s, chunk {secs['chunk_s']:.1f} s, "
          f"embed {secs['embed_s']:.1f} s ({secs['newly_embedded']} encoded, {secs['from_cache']} from the cache)",
          flush=True)
    with Timer() as t:
        exact, _ = knn(x, k=c.k)
    exact_s, exact_cpu = t.wall, t.cpu
    rex = greedy_clusters(exact, size=c.size, min_size=c.min_size, max_size=c.max_size, seed=c.seed, vectors=x)
    ex_intra, ex_at_c = intra(rex.clusters, x), float((rex.sizes() == c.size).mean())
    out: dict = {"n": n, **secs, "k": c.k, "C": c.size, "exact_knn_s": exact_s, "exact_knn_cpu": exact_cpu,
                 "exact_intra": ex_intra, "exact_at_c": ex_at_c, "ivf": []}
    print(f"exact kNN (k={c.k}) {exact_s:.1f} s ({exact_cpu:.1f} CPU s); greedy C={c.size} on it: "
          f"{len(rex.clusters)} clusters, intra-cos {ex_intra:.4f}, at C {ex_at_c:.1%}", flush=True)
    for nprobe in a.nprobe or [c.nprobe]:
        with Timer() as t:   # exact_max=0: the IVF path whatever N (the pipeline takes it above cluster.exact_max)
            g = build_knn(x, k=c.k, exact_max=0, nlist=c.nlist, nprobe=nprobe, seed=c.seed, device="cpu",
                          target_recall=c.target_recall)
        knn_s, knn_cpu = t.wall, t.cpu
        recall = float(np.mean([len(set(g.neighbors[i, :10].tolist()) & set(exact[i, :10].tolist())) / 10
                                for i in range(n)]))
        with Timer() as t:
            res = greedy_clusters(g.neighbors, size=c.size, min_size=c.min_size, max_size=c.max_size, seed=c.seed,
                                  vectors=x)
        r = {"method": g.method, "params": g.params, "knn_s": knn_s, "knn_cpu": knn_cpu, "recall10": recall,
             "greedy_s": t.wall, "clusters": len(res.clusters), "intra": intra(res.clusters, x),
             "at_c": float((res.sizes() == c.size).mean())}
        out["ivf"].append(r)
        print(f"{g.method} {describe(g.params)}: kNN {knn_s:.1f} s ({knn_cpu:.1f} CPU s), recall@10 {recall:.3f} (all {n} "
              f"queries vs exact); greedy {r['greedy_s']:.1f} s, {r['clusters']} clusters, intra-cos "
              f"{r['intra']:.4f} vs exact {ex_intra:.4f} (approx/exact {r['intra'] / ex_intra:.4f}), at C "
              f"{r['at_c']:.1%} vs exact {ex_at_c:.1%}", flush=True)
    if a.topics_ari is not None:
        from sklearn.metrics import adjusted_rand_score
        sample = a.topics_sample if a.topics_sample < n else n // 2
        with Timer() as tf:
            full = fit_topics(x, [""] * n, cfg.topics.model_copy(update={"sample_size": n}))
        with Timer() as ts:
            samp = fit_topics(x, [""] * n, cfg.topics.model_copy(update={"sample_size": sample}))
        both = (full.labels >= 0) & (samp.labels >= 0)
        out["topics"] = t_ = {"sample": sample, "full_s": tf.wall, "sampled_s": ts.wall,
                              "ari": adjusted_rand_score(full.labels, samp.labels),
                              "ari_non_noise": adjusted_rand_score(full.labels[both], samp.labels[both]),
                              "topics_full": int(full.labels.max() + 1), "topics_sampled": int(samp.labels.max() + 1),
                              "noise_full": float((full.labels < 0).mean()),
                              "noise_sampled": float((samp.labels < 0).mean())}
        print(f"topics (min_cluster_size {cfg.topics.min_cluster_size}): sampled ({sample}) vs full HDBSCAN: ARI "
              f"{t_['ari']:.3f} (non-noise {t_['ari_non_noise']:.3f}), topics {t_['topics_full']}/"
              f"{t_['topics_sampled']}, noise {t_['noise_full']:.1%}/{t_['noise_sampled']:.1%}, "
              f"{t_['full_s']:.1f} s / {t_['sampled_s']:.1f} s", flush=True)
    print(json.dumps(out))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")



def sub(args: list[str]) -> dict:
    r = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100000])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--no-topics", action="store_true")
    ap.add_argument("--topics-compare", action="store_true",
                    help="also the old topic step (fixed 20,000 sample) and a sample grown with the clusters, "
                         "in the same process: seconds, topics, coverage, ARI vs the planted topics")
    ap.add_argument("--hard", action="store_true", help="--sizes on the hard data (uneven topics, 10%% noise)")
    ap.add_argument("--exact-compare-max", type=int, default=0, help="exact-kNN cluster comparison up to this n")
    ap.add_argument("--sklearn-peer", action="store_true")
    ap.add_argument("--topics-ari", type=int, nargs="*")
    ap.add_argument("--topics-sample", type=int, default=20000, help="topics.sample_size for --topics-ari")
    ap.add_argument("--corpus", nargs="+", metavar="PATH", help="real corpora: compare on their MiniLM vectors")
    ap.add_argument("--corpus-config", default=str(ROOT / "benchmarks" / "realism_mtrag.toml"),
                    help="config of the curate/chunk/embed/cluster settings for --corpus")
    ap.add_argument("--embed-cache-dir", default="/tmp/mtr-clustering-bench/embed-cache",
                    help="EmbeddingCache folder for --corpus (kept between runs)")
    ap.add_argument("--embed-cache-from", nargs="+", metavar="DIR",
                    help="embedding caches whose parts are copied into --embed-cache-dir first (read only)")
    ap.add_argument("--work", default="/tmp/mtr-clustering-bench/work", help="scratch run folder for --corpus")
    ap.add_argument("--nprobe", type=lambda v: v if v == "auto" else int(v), nargs="+",
                    help="IVF nprobe values (ints or auto), each measured (default: the config's, auto)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--ari-one", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.corpus:
        real(a)
        return
    if a.one:
        print(json.dumps(one(a.one, a.k, not a.no_topics, a.one <= a.exact_compare_max, a.sklearn_peer,
                             a.nprobe[0] if a.nprobe else None, a.topics_compare, a.hard)))
        return
    if a.ari_one:
        print(json.dumps(topics_ari(a.ari_one, a.topics_sample)))
        return
    if a.topics_ari:
        print(f"{'n':>8}{'sample':>8}{'full s':>9}{'(CPU)':>8}{'sampled s':>11}{'(CPU)':>8}{'load':>6}{'ARI':>7}"
              f"{'ARI non-noise':>15}{'topics full/sampled':>21}{'noise full/sampled':>20}")
        for n in a.topics_ari:
            r = sub(["--ari-one", str(n), "--topics-sample", str(a.topics_sample)])
            print(f"{r['n']:>8}{r['sample']:>8}{r['full_s']:>9.1f}{r['full_cpu']:>8.1f}{r['sampled_s']:>11.1f}"
                  f"{r['sampled_cpu']:>8.1f}{r['load']:>6.1f}{r['ari']:>7.3f}"
                  f"{r['ari_non_noise']:>15.3f}{r['topics_full']:>10}/{r['topics_sampled']:<10}"
                  f"{r['noise_full']:>9.1%}/{r['noise_sampled']:<9.1%}", flush=True)
        return
    for n, nprobe in [(n, p) for n in a.sizes for p in (a.nprobe or [None])]:
        args = ["--one", str(n), "--k", str(a.k), "--exact-compare-max", str(a.exact_compare_max)]
        args += ["--no-topics"] if a.no_topics else []
        args += ["--topics-compare"] if a.topics_compare else []
        args += ["--hard"] if a.hard else []
        args += ["--sklearn-peer"] if a.sklearn_peer else []
        args += ["--nprobe", str(nprobe)] if nprobe is not None else []
        r = sub(args)
        spine = r["knn_s"] + r["greedy_s"] + (r.get("topics_s") or 0)
        spine_cpu = r["knn_cpu"] + r["greedy_cpu"] + (r.get("topics_cpu") or 0)
        print(json.dumps(r))
        line = (f"n={r['n']}: wall s (CPU s): kNN {r['knn_s']:.1f} ({r['knn_cpu']:.1f}) ({r['method']} {describe(r['params'])}), "
                f"greedy {r['greedy_s']:.1f} ({r['greedy_cpu']:.1f}), topics {r.get('topics_s', float('nan')):.1f} "
                f"({r.get('topics_cpu', float('nan')):.1f}), spine {spine:.1f} ({spine_cpu:.1f}), "
                f"load avg {r['load_min']:.1f}-{r['load_max']:.1f}, peak RSS {r['peak_mb']:.0f} MB "
                f"(data alone {r['data_peak_mb']:.0f}), recall@10 {r['recall10']:.3f}, clusters {r['clusters']}, "
                f"at C {r['at_c']:.1%}, intra-cos {r['intra']:.4f}")
        if "exact_intra" in r:
            line += (f"; exact kNN {r['exact_knn_s']:.1f} s ({r['exact_knn_cpu']:.1f} CPU s, "
                     f"x{r['exact_knn_cpu'] / r['knn_cpu']:.1f} CPU), exact intra-cos "
                     f"{r['exact_intra']:.4f} (approx/exact {r['intra'] / r['exact_intra']:.4f}), exact at C "
                     f"{r['exact_at_c']:.1%}")
        if "sklearn_knn_s" in r:
            line += f"; sklearn brute {r['sklearn_knn_s']:.1f} s"
        if "topics_method" in r:
            line += (f"; topics ({r['topics_method']}) {r['topics']} of {r['planted_topics']} planted, coverage "
                     f"{r['coverage']:.1%}, ARI vs planted {r['ari']:.3f}, cluster purity {r['purity']:.3f}, "
                     f"peak RSS after topics {r['peak_mb_spine']:.0f} MB")
        for name, what in (("old", "old fixed sample"), ("grown", "sample grown with the clusters")):
            if name in r:
                o = r[name]
                line += (f"; {what}: {o['s']:.1f} s ({o['cpu']:.1f} CPU s, x{o['cpu'] / r['topics_cpu']:.2f} the "
                         f"new step's CPU) at load {o['load']:.1f}, {o['topics']} topics, coverage "
                         f"{o['coverage']:.1%}, ARI {o['ari']:.3f}")
        print(line, flush=True)


if __name__ == "__main__":
    main()
