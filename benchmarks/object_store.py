"""A run on an object store (issue #51): offline synthesis on ``s3://`` against the same run on local disk,
and the time a new worker takes to resume a synthesis whose worker was killed (``kill -9``) mid-run.

Starts moto's S3 server on localhost (a child process; moto keeps everything in memory, so its figures are
those of a store with ~ms latency, not of AWS), builds the example spine once on local disk and copies its
tables to the store, then for each disk runs ``mtr synthesize`` (offline backend, no self-audit) on the
same spine with the same settings in a fresh process, ``--repeats`` times alternating local and s3 (a fresh
copy of the spine each time), and prints the best wall time of each and their ratio. Then the
resume: ``mtr synthesize`` on ``s3://`` is killed once its first batch boundary is on the store and it is
half-way through, and a second process with another ``MTR_LOCAL_CACHE`` (a new worker: no local checkpoint,
cache or index) reruns it; printed: its wall time, the wall time of an uninterrupted run, and the
conversations whose checkpoints it found on the store.

    python benchmarks/object_store.py --conversations 16 --turns 4 --batch-size 4
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def start_moto() -> tuple[subprocess.Popen, str]:
    from tests.moto_server import start_moto as start     # the tests' S3 server (moto), one bucket
    return start(bucket="bench")


def copy_run(src: str, dst: str) -> None:
    from storage.store import RunStore
    a, b = RunStore(src), RunStore(dst).ensure()
    for name in a.tables():
        b.write_table(name, a.read_table(name), schema=a.read_table(name).schema)
    b.write_manifest(stages=a.read_manifest().get("stages", {}))


def synthesize(out: str, cfg: Path, args, cache: Path) -> tuple[float, subprocess.Popen]:
    env = {**os.environ, "MTR_LOCAL_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "flows.cli", "synthesize", "--out", out, "-c", str(cfg), "--no-audit",
           "--conversations", str(args.conversations), "--turns", str(args.turns)]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return t0, p


def finish(t0: float, p: subprocess.Popen) -> float:
    out, _ = p.communicate()
    if p.returncode != 0:
        raise SystemExit(f"mtr synthesize failed:\n{out[-3000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mtr-objstore-"))
    moto, ep = start_moto()
    os.environ.update({"AWS_ENDPOINT_URL": ep, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                       "MTR_S3_LEASE_TTL_S": "3", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    os.environ.pop("AWS_PROFILE", None)
    try:
        from tests.spine import build_example_spine
        spine, _ = build_example_spine(tmp / "spine", tmp / "emb")
        cfg = tmp / "mtr.toml"
        cfg.write_text(f'[embed]\ncache_dir = "{tmp / "emb"}"\n[synth]\nbatch_size = {args.batch_size}\n')
        runs: dict[str, list[float]] = {"local": [], "s3": []}
        for i in range(args.repeats):
            for name, out in (("local", str(tmp / f"local-{i}")), ("s3", f"s3://bench/runs/timed-{i}")):
                if name == "local":
                    shutil.copytree(spine, out, ignore=shutil.ignore_patterns("cache"))
                else:
                    copy_run(str(spine), out)
                runs[name].append(finish(*synthesize(out, cfg, args, tmp / f"cache-{name}-{i}")))
        times = {k: min(v) for k, v in runs.items()}
        print(f"offline synthesis, {args.conversations} conversations x {args.turns} turns, batches of "
              f"{args.batch_size} (one process each, Prefect start included):")
        print(f"  local disk  {times['local']:7.1f} s  (all: {', '.join(f'{t:.1f}' for t in runs['local'])})")
        print(f"  s3 (moto)   {times['s3']:7.1f} s  (all: {', '.join(f'{t:.1f}' for t in runs['s3'])})   "
              f"ratio s3/local {times['s3'] / times['local']:.2f}")

        from storage.store import RunStore
        url = "s3://bench/runs/killed"
        copy_run(str(spine), url)
        store = RunStore(url)
        import pyarrow.fs as pafs
        parts = store._p("cache", "synth_checkpoints")
        t0, p = synthesize(url, cfg, args, tmp / "worker-1")
        while p.poll() is None and store.fs.get_file_info(parts).type != pafs.FileType.Directory:
            time.sleep(0.05)
        first = time.perf_counter() - t0
        time.sleep(first * 0.1)                 # well into the next batch
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        killed_at = time.perf_counter() - t0
        time.sleep(3.5)                         # the dead worker's lease (MTR_S3_LEASE_TTL_S=3) runs out
        resume = finish(*synthesize(url, cfg, args, tmp / "worker-2"))
        print(f"resume after kill -9 (first boundary on the store after {first:.1f} s, killed at {killed_at:.1f} s):")
        print(f"  new worker (empty local cache) finishes the run in {resume:.1f} s "
              f"(an uninterrupted run on s3: {times['s3']:.1f} s; lease wait of 3 s not counted)")
        print(json.dumps({"local_s": round(times["local"], 2), "s3_s": round(times["s3"], 2),
                          "ratio": round(times["s3"] / times["local"], 3), "resume_s": round(resume, 2),
                          "killed_at_s": round(killed_at, 2)}))
    finally:
        moto.terminate()
        moto.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
