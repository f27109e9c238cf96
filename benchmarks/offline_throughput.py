"""Offline synthesis throughput (turns per second, the spine excluded) of this tree against a base commit, measured
in the same run on the same spine: the issue's speed target for the rebuilt offline generator is a ratio >= 1.

    python benchmarks/offline_throughput.py --base b12ab0a [--conversations 12 --turns 6 --rounds 2]

The example corpus spine (examples/wiki) is built once with this tree; each round synthesizes on a fresh copy of it,
once with this tree and once with a ``git worktree`` of ``--base`` (alternating which goes first), each in its own
interpreter. Printed per side: accepted turns, wall seconds of the synthesis, turns per second (best round) and the
ratio this tree / base. The load average is printed first: read the ratio, not the absolute figures, on a shared
machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_CHILD = r"""
import json, sys, time
from agents.config import LLMConfig
from agents.synth.config import SynthConfig
from agents.synth.run import assemble, corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
from storage.store import RunStore
run, emb, n, turns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = RunStore(run)
clusters, cvecs, corpus = load_plan_inputs(store)
cfg = SynthConfig(conversations=n, turns=turns)
plans = plan_conversations(clusters, cvecs, cfg)
search = corpus_searcher(store, corpus, cfg.uniqueness_retriever, emb)
search("warm up the index", 5)
t0 = time.perf_counter()
out = synthesize_batch(store, plans, corpus, LLMConfig(backend="offline"), cfg, search)
assemble(store, plans, out["states"], cfg)
dt = time.perf_counter() - t0
rows = store.read_table("turns").to_pylist()
print(json.dumps({"dt": dt, "turns": len(rows), "ok": sum(r["status"] == "ok" for r in rows)}))
"""


def _spine(root: Path, emb: Path) -> Path:
    from tests.spine import build_example_spine
    path, _ = build_example_spine(root, emb)
    return Path(path)


def _one(tree: Path, spine: Path, work: Path, emb: Path, n: int, turns: int) -> dict:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(spine, work, ignore=shutil.ignore_patterns("cache"))
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(work), str(emb), str(n), str(turns)], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="b12ab0a", help="the commit to compare with")
    ap.add_argument("--conversations", type=int, default=12)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    print(f"load average: {os.getloadavg()[0]:.1f}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="offline-throughput-"))
    try:
        emb = tmp / "emb"
        spine = _spine(tmp / "spine", emb)
        base = tmp / "base-tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), a.base], cwd=ROOT, check=True,
                       capture_output=True)
        best: dict[str, dict] = {}
        try:
            for k in range(a.rounds):
                order = [("this tree", ROOT), ("base " + a.base, base)]
                for label, tree in order if k % 2 == 0 else order[::-1]:
                    r = _one(tree, spine, tmp / "run", emb, a.conversations, a.turns)
                    r["tps"] = r["ok"] / r["dt"]
                    print(f"round {k + 1} {label}: {r['ok']} of {r['turns']} turns ok in {r['dt']:.1f} s = "
                          f"{r['tps']:.2f} turns/s", flush=True)
                    if label not in best or r["tps"] > best[label]["tps"]:
                        best[label] = r
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
        mine, theirs = best["this tree"], best["base " + a.base]
        print(f"best: this tree {mine['tps']:.2f} turns/s, base {theirs['tps']:.2f} turns/s, "
              f"ratio {mine['tps'] / theirs['tps']:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
