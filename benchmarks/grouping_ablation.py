"""The clustering ablation: the same corpus, seeds and budget synthesized with the greedy
traversal, random groups of C passages, and a plain kNN ball around a seed
(``cluster.grouping``, :mod:`clustering.grouping`), offline backend.

    python benchmarks/grouping_ablation.py tests/data/mtrag/corpus/clapnq.jsonl.gz mtr-runs/ablation-clapnq \
        [--groupings greedy random knn-ball] [--conversations 16 --turns 8] [--retriever bm25 --retriever dense]

One run directory per grouping under OUT (``OUT/<grouping>``; an existing one is reused, the
embedding cache ``OUT/.cache`` is shared). Printed per grouping: share of turns the verifier
failed, uniqueness positives per turn, cohesion of the groups used, switch distances
(:mod:`evaluation.synthesis_stats`), the realism statistics (:mod:`evaluation.realism`) and the
retrievers' discrimination on the result (Recall@20 spread and significant pairs,
:mod:`evaluation.discrimination`). ``--json`` writes everything.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def one(corpus: str, out: Path, grouping: str, config: str, overrides: dict, retrievers: list[str],
        mode: str, embed_cache: str | None = None) -> dict:
    from benchmarks.realism import synthesize
    from evaluation.benchmark_eval import evaluate_benchmark
    from evaluation.discrimination import discrimination, significant_pairs
    from evaluation.realism import question_stats
    from evaluation.synthesis_stats import run_stats
    from storage.benchmark import load_benchmark
    run = out / grouping
    t0 = time.perf_counter()
    from storage.store import RunStore
    cache = embed_cache or str(out / ".cache" / "embeddings")
    if not RunStore(str(run)).has_table("turns"):
        synthesize(corpus, str(run), config, {**overrides, "cluster.grouping": grouping, "embed.cache_dir": cache})
    row: dict = {"grouping": grouping, "run": str(run), "seconds": round(time.perf_counter() - t0, 1)}
    row.update(run_stats(str(run)))
    bench = load_benchmark(run, "ours")
    row["realism"] = question_stats(bench, grouping).as_dict()
    ev = evaluate_benchmark(bench, retrievers, [mode], index_dir=out / ".work" / grouping / "bm25",
                            cache_dir=cache)
    res = {r: ev.results[f"{r}/{mode}"] for r in retrievers}
    d = discrimination(res, "recall_20")
    pc = significant_pairs(res, "recall_20")
    row["retrieval"] = {"mode": mode, "n_queries": ev.n_queries, "recall_20": dict(d.means),
                        "spread": d.spread, "std": d.std, "significant_pairs": f"{pc.n_significant}/{pc.n_pairs}"}
    return row


def _f(x, d=3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else (f"{x:.{d}f}" if isinstance(x, float)
                                                                             else str(x))


def table(rows: list[dict]) -> str:
    cols = ["grouping", "conversations", "turns", "verifier failed", "uniq. pos./turn", "cohesion",
            "switch dist. (mean)", "R@20 " + "/".join(rows[0]["retrieval"]["recall_20"]), "spread", "sig. pairs"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        ret = r["retrieval"]
        lines.append("| " + " | ".join([r["grouping"], str(r["conversations"]), str(r["turns"]),
                                        _f(r["verifier_failed_share"]), _f(r["uniqueness_per_turn"], 2),
                                        _f(r["cohesion_used_groups"]), _f(r["switch_distance_mean"]),
                                        "/".join(_f(v) for v in ret["recall_20"].values()), _f(ret["spread"]),
                                        ret["significant_pairs"]]) + " |")
    realism_keys = [k for k, v in rows[0]["realism"].items() if isinstance(v, (int, float)) and k != "name"]
    lines += ["", "| grouping | " + " | ".join(realism_keys) + " |", "|---|" + "---|" * len(realism_keys)]
    for r in rows:
        lines.append(f"| {r['grouping']} | " + " | ".join(_f(r["realism"][k]) if isinstance(r["realism"][k], float)
                                                          else str(r["realism"][k]) for k in realism_keys) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--groupings", nargs="+", default=["greedy", "random", "knn-ball"])
    ap.add_argument("--config", default=str(ROOT / "benchmarks" / "realism_mtrag.toml"))
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--retriever", action="append", help="default bm25 and dense")
    ap.add_argument("--mode", default="all_user_turns", help="query mode of the discrimination figures")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--embed-cache-dir", help="shared embedding cache (default OUT/.cache/embeddings)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    over = {"synth.conversations": a.conversations, "synth.turns": a.turns}
    rows = [one(a.corpus, out, g, a.config, over, a.retriever or ["bm25", "dense"], a.mode, a.embed_cache_dir)
            for g in a.groupings]
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    main()
