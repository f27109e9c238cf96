"""GPU path: embedding throughput on CUDA and the clustering spine with exact kNN on the GPU.

Run on a machine where torch sees CUDA (the figures in the README came from a lent H200). Two parts,
each printed as it finishes and appended as one JSON object per line to ``--out``:

* **embed**: the MTRAG Cloud + ClapNQ pool passages (``tests/data/mtrag/corpus``, repeated
  ``--embed-repeat`` times) through ``embedding.encoder.encode`` on ``cuda`` at the device's
  default batch size (``batch_size_for('cuda')``) and at ``--embed-batch`` sizes, passages/s; the
  peer is the same function on the same machine's CPU (batch 64, ``--embed-cpu-texts``
  passages, all its cores), and the GPU vectors of those passages are compared with the CPU ones
  (max |difference|, min cosine). ``--model`` is a model directory; without the bundled MiniLM
  package, ``--random-init CONFIG_DIR`` builds the same architecture from its config and tokenizer
  files with seeded random weights (same arithmetic, so the same throughput; the vectors are then
  only good for the GPU-vs-CPU comparison).
* **spine**, per ``--sizes``: synthetic clustered 384-d vectors (``benchmarks/clustering.py``'s
  ``data``), ``clustering.knn.build_knn(device='cuda')`` (exact: FAISS GPU when installed, else
  ``torch_knn``), greedy traversal and sampled topics on the CPU, seconds, peak RSS and peak GPU
  memory, recall@10 against numpy exact search on 1,000 sampled queries; the peer in the same run
  is the CPU path (``device='cpu'``: FAISS IVF, nprobe auto) on the same vectors and cores, and
  the greedy clusters of both graphs (mean intra-cluster cosine, share at C): the GPU graph is
  exact, so this is the approximate-vs-exact cluster check at sizes where exact search does not
  fit on a CPU.

``--profile N``: the kNN's float32 products alone and with the top-k, at N random vectors.

    python benchmarks/gpu.py --sizes 100000 300000 1000000 --profile 1000000 --out /tmp/gpu.jsonl
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def bench_clustering():
    spec = importlib.util.spec_from_file_location("bench_clustering", ROOT / "benchmarks" / "clustering.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def emit(out: Path | None, rec: dict) -> None:
    print(json.dumps(rec), flush=True)
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")


def passages() -> list[str]:
    texts = []
    for name in ("cloud", "clapnq"):
        with gzip.open(ROOT / "tests" / "data" / "mtrag" / "corpus" / f"{name}.jsonl.gz", "rt") as f:
            texts += [json.loads(line)["text"] for line in f if line.strip()]
    return texts


def random_init_model(config_dir: str, dest: Path) -> str:
    """A sentence-transformers folder with ``config_dir``'s architecture, pooling and tokenizer
    and seeded random weights (for throughput where the real weights cannot be shipped)."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModel
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for p in Path(config_dir).iterdir():
        if p.name != "model.safetensors":
            (shutil.copytree if p.is_dir() else shutil.copy)(p, dest / p.name)
    torch.manual_seed(0)
    AutoModel.from_config(AutoConfig.from_pretrained(config_dir)).save_pretrained(dest)
    return str(dest)


def embed_part(a, out) -> None:
    import numpy as np
    import torch

    from embedding import encoder as emb
    model = a.model
    if a.random_init:
        model = random_init_model(a.random_init, Path(a.work) / "random-init-model")
    texts = passages()[:a.embed_limit]
    n_pool = len(texts)
    texts = texts * a.embed_repeat
    dev = emb.resolve_device("auto")
    rec = {"part": "embed", "device": dev, "gpu": torch.cuda.get_device_name(0) if dev == "cuda" else None,
           "torch": torch.__version__, "model": "random-init " + a.random_init if a.random_init else (model or emb.DEFAULT_MODEL),
           "passages": len(texts), "pool_passages": n_pool, "cpu_threads": torch.get_num_threads()}
    emb.encode(texts[:512], model=model, device=dev, batch_size=emb.batch_size_for(dev))   # load + warm up
    for bs in [emb.batch_size_for(dev)] + [b for b in a.embed_batch if b != emb.batch_size_for(dev)]:
        torch.cuda.synchronize() if dev == "cuda" else None
        t0 = time.perf_counter()
        v = emb.encode(texts, model=model, device=dev, batch_size=bs)
        dt = time.perf_counter() - t0
        rec[f"gpu_bs{bs}_s"] = dt
        rec[f"gpu_bs{bs}_per_s"] = len(texts) / dt
        emit(None, {"embed_batch": bs, "seconds": round(dt, 2), "passages_per_s": round(len(texts) / dt, 1)})
    sub = texts[:a.embed_cpu_texts]
    emb.encode(sub[:64], model=model, device="cpu", batch_size=64)
    t0 = time.perf_counter()
    vc = emb.encode(sub, model=model, device="cpu", batch_size=64)
    dt = time.perf_counter() - t0
    rec.update(cpu_texts=len(sub), cpu_s=dt, cpu_per_s=len(sub) / dt)
    vg = v[:len(sub)]
    rec.update(max_abs_diff=float(np.abs(vg - vc).max()), min_cos=float((vg * vc).sum(1).min()),
               gpu_over_cpu=rec[f"gpu_bs{emb.batch_size_for(dev)}_per_s"] / rec["cpu_per_s"])
    emit(out, rec)


def spine_part(n: int, a, out) -> None:
    import numpy as np
    import torch

    from clustering.greedy import ClusterConfig, greedy_clusters
    from clustering.knn import build_knn
    from clustering.topics import TopicConfig, fit_topics
    bc = bench_clustering()
    t0 = time.perf_counter()
    x = bc.data(n)
    rec = {"part": "spine", "n": n, "data_s": time.perf_counter() - t0}
    cc = ClusterConfig(k=a.k)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    g = build_knn(x, k=a.k, exact_max=cc.exact_max, seed=0, device="cuda" if cuda else "cpu")
    rec.update(knn_s=time.perf_counter() - t0, method=g.method, params=g.params,
               gpu_peak_mb=torch.cuda.max_memory_allocated() / 2**20 if cuda else None)
    t0 = time.perf_counter()
    res = greedy_clusters(g.neighbors, size=8, seed=0, vectors=x)
    rec["greedy_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    tr = fit_topics(x, [""] * n, TopicConfig(min_cluster_size=15), clusters=res.clusters)   # the default method
    rec.update(topics_s=time.perf_counter() - t0, topics=len([s for s in tr.sizes if s >= 0]))
    rec["spine_s"] = rec["knn_s"] + rec["greedy_s"] + rec["topics_s"]
    rec.update(clusters=len(res.clusters), at_c=float((res.sizes() == 8).mean()), intra=bc.intra(res.clusters, x))
    rng = np.random.default_rng(1)
    q = rng.choice(n, min(n, 1000), replace=False)
    s = x[q] @ x.T
    s[np.arange(len(q)), q] = -np.inf
    ex = np.argpartition(-s, 10, axis=1)[:, :10]
    del s

    def recall(nb):
        return float(np.mean([len(set(nb[i][:10].tolist()) & set(e.tolist())) / 10 for i, e in zip(q, ex)]))
    rec["recall10"] = recall(g.neighbors)
    rec["peak_mb"] = peak_mb()
    if a.cpu_peer:
        t0 = time.perf_counter()
        c = build_knn(x, k=a.k, exact_max=cc.exact_max, seed=0, device="cpu", target_recall=cc.target_recall)
        rec.update(cpu_knn_s=time.perf_counter() - t0, cpu_method=c.method, cpu_params=c.params,
                   cpu_recall10=recall(c.neighbors))
        rc = greedy_clusters(c.neighbors, size=8, seed=0, vectors=x)
        rec.update(cpu_intra=bc.intra(rc.clusters, x), cpu_at_c=float((rc.sizes() == 8).mean()),
                   cpu_over_gpu_knn=rec["cpu_knn_s"] / rec["knn_s"], approx_over_exact_intra=None)
        rec["approx_over_exact_intra"] = rec["cpu_intra"] / rec["intra"]
    emit(out, rec)


def profile_part(n: int, a, out) -> None:
    """Where the exact GPU kNN's time goes: the float32 products of ``torch_knn``'s query blocks
    against ``n`` random unit vectors, alone and with the top-(k+1) selection."""
    import torch
    torch.set_float32_matmul_precision("highest")
    d, k = 384, a.k + 1
    x = torch.nn.functional.normalize(torch.randn(n, d, device="cuda"), dim=1)
    block = max(1, int(max(64 << 20, min(4 << 30, torch.cuda.mem_get_info()[0] // 8)) // (4 * n)))

    def run(topk: bool) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for s in range(0, n, block):
            m = x[s:s + block] @ x.T
            if topk:
                torch.topk(m, k, dim=1)
        torch.cuda.synchronize()
        return time.perf_counter() - t0
    run(False)
    emit(out, {"part": "profile", "n": n, "query_block_rows": block, "matmul_only_s": run(False),
               "matmul_topk_s": run(True)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[100000, 300000, 1000000])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--no-embed", action="store_true")
    ap.add_argument("--model", help="embedding model directory (default: the bundled MiniLM)")
    ap.add_argument("--random-init", metavar="CONFIG_DIR", help="same architecture, seeded random weights")
    ap.add_argument("--embed-repeat", type=int, default=8)
    ap.add_argument("--embed-limit", type=int, help="first N pool passages only (a smoke test on a CPU)")
    ap.add_argument("--embed-batch", type=int, nargs="*", default=[64, 1024])
    ap.add_argument("--embed-cpu-texts", type=int, default=2000)
    ap.add_argument("--profile", type=int, metavar="N", help="time the kNN's products and top-k at N vectors")
    ap.add_argument("--no-cpu-peer", dest="cpu_peer", action="store_false")
    ap.add_argument("--work", default="/tmp/mtr-gpu-bench")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    Path(a.work).mkdir(parents=True, exist_ok=True)
    parts = [(f"spine {n}", lambda n=n: spine_part(n, a, a.out)) for n in a.sizes]
    parts += [] if a.no_embed else [("embed", lambda: embed_part(a, a.out))]
    parts += [("profile", lambda: profile_part(a.profile, a, a.out))] if a.profile else []
    for name, fn in parts:
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - report and go on to the next part
            import traceback
            traceback.print_exc()
            emit(a.out, {"part": name, "error": f"{type(exc).__name__}: {exc}"})
        print(f"# {name}: {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
