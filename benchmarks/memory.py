"""Memory-bounded stages: peak RSS of curate, chunk, embed and export against the corpus size.

Generates a synthetic corpus of N passages (~100 words each) as JSONL files (the files the
curate stage reads), then runs each stage in a fresh subprocess on one run directory and
prints its wall time, peak RSS, the RSS after imports (the interpreter + libraries), and the
ratio (peak - imports) / corpus bytes on disk. The embed stage uses a stub encoder (a
deterministic pseudo-random unit vector per text, 384 dims) so the measure is the stage's
own memory (reading chunks, the cache, writing the table), not the model's; the export
stage runs on the chunks with a few fake conversations.

``--old DIR`` runs the same stages with the code of another checkout (e.g. a
``git worktree`` of the commit before the change) first and prints the ratio new / old.

``--dedup-only N [N ...]`` measures the near-duplicate index alone (``corpus.dedup.Deduper``):
for each N, a fresh subprocess feeds N generated ~100-word passages (5% of them near-duplicates
of a recent passage) in batches of 1,024 and prints the peak RSS above the RSS after imports,
per document, and a digest of the duplicates found (with ``--old``, equal digests = same
duplicates, same pairs, same Jaccard values).

    python benchmarks/memory.py --n 200000
    python benchmarks/memory.py --n 200000 --old /tmp/mtr_old
    python benchmarks/memory.py --dedup-only 20000 100000 --old /tmp/mtr_old
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("curate", "chunk", "embed", "export")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_corpus(folder: Path, n: int, files: int = 20, seed: int = 0) -> int:
    """N passages of ~100 words in ``files`` JSONL files; returns bytes on disk (cached)."""
    stamp = folder / ".done"
    if not stamp.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        rng = random.Random(seed)
        vocab = [("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))))
                 for _ in range(20000)]
        per = -(-n // files)
        for f in range(files):
            with open(folder / f"part-{f:03d}.jsonl", "w") as fh:
                for i in range(f * per, min(n, (f + 1) * per)):
                    words = rng.choices(vocab, k=rng.randint(80, 120))
                    cut = len(words) // 2
                    text = " ".join(words[:cut]) + ".\n\n" + " ".join(words[cut:]) + "."
                    fh.write(json.dumps({"id": f"p{i}", "title": f"Passage {i}", "text": text}) + "\n")
        stamp.touch()
    return sum(p.stat().st_size for p in folder.glob("*.jsonl"))


def _stub_encode(texts, model=None, batch_size=64, progress=None, device="cpu"):
    import zlib

    import numpy as np
    out = np.empty((len(texts), 384), dtype=np.float32)
    for i, t in enumerate(texts):
        v = np.random.default_rng(zlib.crc32(t.encode())).standard_normal(384).astype(np.float32)
        out[i] = v / np.linalg.norm(v)
    if progress:
        progress(len(texts))
    return out


def _qt(mode, messages, rewrites):
    return {sid: f"{mode} {sid}" for sid in messages}


def child(stage: str, run_dir: str, corpus: str) -> None:
    """One stage in this (fresh) process; prints a JSON line with the figures."""
    import corpus.stages as st
    import embedding.encoder as emb
    import embedding.stage as est
    from flows.config import load_config
    from storage.exports import export_benchmark
    from storage.schemas import SCHEMAS, table_from_rows
    from storage.store import RunStore
    emb.encode = _stub_encode
    cfg = load_config(ROOT / "examples" / "demo.toml", {
        "runs_root": str(Path(run_dir).parent), "embed.cache_dir": str(Path(run_dir).parent / "emb-cache"),
        "chunk.min_size": 100, "embed.device": "cpu"})
    store = RunStore(run_dir).ensure()
    base = rss_mb()
    t0 = time.perf_counter()
    if stage == "curate":
        summary = st.curate(store, corpus, cfg)
    elif stage == "chunk":
        summary = st.chunk(store, cfg)
    elif stage == "embed":
        summary = est.embed(store, cfg)
    else:
        ids = store.read_table("chunks", columns=["chunk_id"]).column(0).slice(0, 64).to_pylist()

        def w(name, rows):
            store.write_table(name, table_from_rows(rows, SCHEMAS[name]))
        w("conversations", [{"conv_id": f"c{c}", "cluster_id": 0, "topic_id": 0, "n_turns": 2, "n_ok": 2,
                             "n_failed": 0, "split": "train" if c % 2 else "test", "backend": "offline", "seed": c}
                            for c in range(16)])
        w("turns", [{"sample_id": f"c{c}:{t}", "conv_id": f"c{c}", "turn": t, "status": "ok", "question": f"q{c}{t}?",
                     "standalone_question": f"q{c}{t}?", "answer": f"a{c}{t}", "gold_doc_ids": [ids[(c + t) % 64]],
                     "answerability": "ANSWERABLE", "is_switch": False, "cluster_id": 0, "topic_id": 0,
                     "backend": "offline", "model": "offline"} for c in range(16) for t in (1, 2)])
        w("qrels", [{"sample_id": f"c{c}:{t}", "doc_id": ids[(c + t) % 64], "grade": 1, "provenance": "gold",
                     "reason": None} for c in range(16) for t in (1, 2)])
        t0 = time.perf_counter()
        summary = {k: v for k, v in export_benchmark(store, query_texts=_qt).items() if k in ("conversations",)}
    print(json.dumps({"stage": stage, "seconds": time.perf_counter() - t0, "peak_mb": rss_mb(), "base_mb": base,
                      "summary": {k: v for k, v in summary.items() if not isinstance(v, dict)}}))


def dedup_child(n: int, batch: int = 1024, seed: int = 0) -> None:
    """Feed N generated passages to a Deduper in this (fresh) process; prints a JSON line."""
    import hashlib
    from collections import deque

    from corpus.dedup import DedupConfig, Deduper
    rng = random.Random(seed)
    vocab = [("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))))
             for _ in range(20000)]
    deduper = Deduper(DedupConfig())
    recent: deque[list[str]] = deque(maxlen=256)
    digest = hashlib.sha256()
    n_dups = 0
    base = rss_mb()
    t0 = time.perf_counter()
    for a in range(0, n, batch):
        ids, texts = [], []
        for i in range(a, min(n, a + batch)):
            if recent and rng.random() < 0.05:      # a near-duplicate of a recent passage
                words = list(rng.choice(recent))
                for _ in range(rng.randint(1, 12)):
                    words[rng.randrange(len(words))] = rng.choice(vocab)
            else:
                words = rng.choices(vocab, k=rng.randint(80, 120))
            recent.append(words)
            ids.append(f"p{i}")
            texts.append(" ".join(words))
        for d in deduper.add(ids, texts):
            n_dups += 1
            digest.update(f"{d.item_id}\t{d.duplicate_of}\t{d.jaccard!r}\n".encode())
    print(json.dumps({"n": n, "duplicates": n_dups, "seconds": time.perf_counter() - t0, "peak_mb": rss_mb(),
                      "base_mb": base, "bytes_per_doc": (rss_mb() - base) * 2 ** 20 / n,
                      "digest": digest.hexdigest()[:16]}))


def run_dedup(code: Path, n: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--dedup-child", str(n)],
                       cwd=code, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"dedup {n} failed ({code}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def dedup_only(sizes: list[int], old: str | None) -> None:
    codes = ([("old", Path(old).resolve())] if old else []) + [("new", ROOT)]
    print(f"near-duplicate index alone (Deduper, 128 permutations, threshold 0.5); "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'code':5} {'docs':>8} {'dups':>6} {'seconds':>8} {'peak MB':>8} {'imports MB':>10} "
          f"{'bytes/doc':>10}  digest")
    res: dict[tuple[str, int], dict] = {}
    for n in sizes:
        for name, code in codes:
            r = res[name, n] = run_dedup(code, n)
            print(f"{name:5} {n:8d} {r['duplicates']:6d} {r['seconds']:8.1f} {r['peak_mb']:8.0f} {r['base_mb']:10.0f} "
                  f"{r['bytes_per_doc']:10.0f}  {r['digest']}", flush=True)
    if old:
        for n in sizes:
            o, w = res["old", n], res["new", n]
            print(f"{n} docs: bytes/doc new / old {w['bytes_per_doc'] / max(1e-9, o['bytes_per_doc']):.3f}, "
                  f"seconds new / old {w['seconds'] / o['seconds']:.2f}, same duplicates: {o['digest'] == w['digest']}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def run_all(code: Path, work: Path, corpus: Path, stages) -> dict[str, dict]:
    run_dir = work / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(code), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    out = {}
    for stage in stages:
        r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", stage, str(run_dir), str(corpus)],
                           cwd=code, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{stage} failed ({code}):\n{r.stderr[-3000:]}")
        out[stage] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000, help="passages in the synthetic corpus")
    ap.add_argument("--work", default="/tmp/mtr-memory-bench", help="scratch folder (corpus kept between runs)")
    ap.add_argument("--old", default=None, help="checkout of the code to compare with (its run first)")
    ap.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    ap.add_argument("--dedup-only", nargs="+", type=int, metavar="N", default=None,
                    help="measure the near-duplicate index alone at these corpus sizes")
    ap.add_argument("--child", nargs=3, metavar=("STAGE", "RUN", "CORPUS"), help=argparse.SUPPRESS)
    ap.add_argument("--dedup-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dedup_child is not None:
        sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)))
        dedup_child(args.dedup_child)
        return
    if args.dedup_only:
        dedup_only(args.dedup_only, args.old)
        return
    if args.child:
        sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)))
        child(*args.child)
        return
    work = Path(args.work)
    corpus = work / f"corpus-{args.n}"
    size = make_corpus(corpus, args.n)
    mb = size / 2 ** 20
    print(f"corpus: {args.n} passages, {mb:.1f} MB on disk (JSONL); load average {os.getloadavg()[0]:.2f}")
    results = {}
    if args.old:
        results["old"] = run_all(Path(args.old).resolve(), work / "old", corpus, args.stages)
    results["new"] = run_all(ROOT, work / "new", corpus, args.stages)
    for name, res in results.items():
        print(f"\n{name} code:")
        print(f"{'stage':8} {'seconds':>8} {'peak MB':>8} {'imports MB':>10} {'(peak-imports)/corpus':>22}")
        for stage, r in res.items():
            ratio = (r["peak_mb"] - r["base_mb"]) / mb
            print(f"{stage:8} {r['seconds']:8.1f} {r['peak_mb']:8.0f} {r['base_mb']:10.0f} {ratio:22.2f}")
    if "old" in results:
        print("\nnew / old peak RSS above imports:")
        for stage in args.stages:
            o, n = results["old"][stage], results["new"][stage]
            print(f"  {stage:8} {(n['peak_mb'] - n['base_mb']) / max(1e-9, o['peak_mb'] - o['base_mb']):.2f}"
                  f"   (summaries equal: {o['summary'] == n['summary']})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
