"""The offline generator's realism targets, pool by pool, with the worst pool reported (issue: offline generator).

    # a pool without titles (forum and ticket corpora have none): the same passages, titles and heading lines removed
    python benchmarks/realism_targets.py untitle tests/data/mtrag/corpus/cloud.jsonl.gz mtr-runs/cloud-untitled.jsonl.gz
    # synthesize each pool with benchmarks/realism.py synthesize ..., then:
    python benchmarks/realism_targets.py check --pool clapnq=mtr-runs/rt-clapnq \
        --pool cloud=mtr-runs/rt-cloud --pool clapnq=mtr-runs/rt-clapnq-untitled ... [--human tests/data/mtrag]

``--pool DOMAIN=RUN``: a synthesis run and the MTRAG domain whose human conversations search the same passages.
``--pool DOMAIN=RUN1,RUN2``: runs of one pool with other ``synth.seed`` values; the pool's row is their mean (the
order on the mean Recall@20s, with how many runs keep it on their own): one seed's order is noise when the gap is
a few hundredths.
Targets (every pool): failed turns <= 10%; every kept conversation keeps >= 75% of its turns; history-dependent
follow-ups >= 40%; pronoun share 20-40%; BM25 nDCG@5 rewrite / last turn >= 1.15; every pair of retrievers (bm25,
dense, hybrid; Recall@20, last turn) that the human benchmark separates by >= 0.05 keeps its order; BM25 Recall@20
(last turn) <= 1.5x the human benchmark's.
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RETRIEVERS = ("bm25", "dense", "hybrid")


def _heading(line: str) -> bool:
    """A short line without end punctuation: a page or section heading."""
    s = line.strip()
    return 0 < len(s.split()) <= 8 and not s.endswith((".", "!", "?", ":", ";"))


def untitle(src: str, dst: str) -> None:
    """Write the corpus ``src`` (JSONL, gzipped or not) with every title removed: the title field, and the text's
    first line when it repeats the title or, for a corpus without titles, when it is a heading (a forum post or a
    ticket has neither)."""
    opener = gzip.open if src.endswith(".gz") else open
    out_open = gzip.open if dst.endswith(".gz") else open
    with opener(src, "rt", encoding="utf-8") as f, out_open(dst, "wt", encoding="utf-8") as g:
        for line in f:
            if line.strip():
                d = json.loads(line)
                lines = d["text"].lstrip().split("\n")
                first = lines[0].strip()
                if len(lines) > 1 and ((d.get("title") and first == d["title"].strip()) or _heading(first)):
                    d["text"] = "\n".join(lines[1:]).strip()
                d["title"] = ""
                g.write(json.dumps(d) + "\n")


def recall_and_ratio(bench, work: Path, emb: str | None = None) -> dict:
    from evaluation.benchmark_eval import evaluate_benchmark
    ev = evaluate_benchmark(bench, list(RETRIEVERS), ["last_turn", "rewrite"], depth=20, index_dir=work / "bm25",
                            cache_dir=emb or work / "emb", ks=(5, 20))
    out = {}
    for key, res in ev.results.items():
        r, m = key.split("/", 1)
        means = res.means()
        out[f"{r}/{m}/recall_20"] = means.get("recall_20", float("nan"))
        out[f"{r}/{m}/ndcg_cut_5"] = means.get("ndcg_cut_5", float("nan"))
    out["bm25_ratio"] = out["bm25/rewrite/ndcg_cut_5"] / max(out["bm25/last_turn/ndcg_cut_5"], 1e-9)
    return out


def check(pools: list[tuple[str, str]], human_path: str, work: str, emb: str | None = None) -> list[dict]:
    """One row per pool. ``RUN`` may list several runs of the same pool (``a,b``: other ``synth.seed`` values); the
    row then holds their mean (:func:`combine`)."""
    from storage.benchmark import load_benchmark
    human_cache: dict[str, dict] = {}
    rows = []
    for domain, spec in pools:
        if domain not in human_cache:
            hb = load_benchmark(human_path, "mtrag", domain=domain)
            human_cache[domain] = recall_and_ratio(hb, Path(work) / f"human-{domain}", emb)
        runs = [r for r in spec.split(",") if r]
        rows.append(combine([run_row(domain, run, human_cache[domain], work, emb) for run in runs]))
    return rows


def run_figures(run: str, work: str, emb: str | None = None) -> dict:
    """The figures of one synthesis run that need no human benchmark: turn health, history dependence, pronoun share,
    BM25 rewrite / last turn and the last turn's Recall@20 per retriever."""
    from evaluation.realism import question_stats, turn_health
    from storage.benchmark import load_benchmark
    from storage.store import RunStore
    bench = load_benchmark(run, "ours")
    st = question_stats(bench)
    r = recall_and_ratio(bench, Path(work) / Path(run).name, emb)
    health = turn_health(RunStore(run).read_table("turns", columns=["conv_id", "status"]).to_pylist())
    health["failed"] = health.pop("failed_share")
    return {**health, "history_dependent": st.history_dependent, "pronoun": st.pronoun, "bm25_ratio": r["bm25_ratio"],
            **{f"{k}_r20": r[f"{k}/last_turn/recall_20"] for k in RETRIEVERS}}


def run_row(domain: str, run: str, h: dict, work: str, emb: str | None = None) -> dict:
    """The figures of one synthesis run against the human benchmark's (``h``: :func:`recall_and_ratio`)."""
    return {"pool": f"{domain}:{Path(run).name}", **run_figures(run, work, emb),
            **{f"human_{k}_r20": h[f"{k}/last_turn/recall_20"] for k in RETRIEVERS}}


def order(r: dict) -> list[str]:
    """The retriever pairs whose order the human benchmark fixes (Recall@20 apart by 0.05 or more) and the run's
    Recall@20 reverses (a tie counts as reversed)."""
    broken = []
    for a, b in itertools.combinations(RETRIEVERS, 2):
        ha, hb = r[f"human_{a}_r20"], r[f"human_{b}_r20"]
        if abs(ha - hb) >= 0.05 and (ha > hb) != (r[f"{a}_r20"] > r[f"{b}_r20"]):
            broken.append(f"{a}/{b}")
    return broken


def combine(runs: list[dict]) -> dict:
    """One pool's row from its runs (other seeds of the same pool): each share and ratio is the runs' mean, the least
    kept share the lowest, counts (turns, conversations below 75%) the total; the order is judged on the mean Recall@20s, and ``order_runs`` counts the
    runs that keep it on their own."""
    if not runs:
        raise ValueError("a pool needs at least one run")
    out = dict(runs[0])
    if len(runs) > 1:
        out["pool"] = f"{runs[0]['pool']} (+{len(runs) - 1} seeds)"
        for k, v in runs[0].items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            out[k] = sum(r[k] for r in runs) / len(runs) if isinstance(v, float) else sum(r[k] for r in runs)
        out["min_kept"] = min(r["min_kept"] for r in runs)
    out["broken"] = order(out)
    out["order_ok"] = not out["broken"]
    out["order_runs"] = f"{sum(not order(r) for r in runs)}/{len(runs)}"
    out["bm25_r20_x_human"] = out["bm25_r20"] / max(out["human_bm25_r20"], 1e-9)
    return out


def passes(r: dict) -> dict[str, bool]:
    return {"failed<=10%": r["failed"] <= 0.10, "kept>=75%": r["min_kept"] >= 0.75,
            "history>=40%": r["history_dependent"] >= 0.40, "pronoun 20-40%": 0.20 <= r["pronoun"] <= 0.40,
            "bm25 ratio>=1.15": r["bm25_ratio"] >= 1.15, "order kept": r["order_ok"],
            "bm25 R@20<=1.5x": r["bm25_r20_x_human"] <= 1.5}


def format_rows(rows: list[dict]) -> str:
    head = ("| pool | turns | failed | min kept | history-dep. | pronoun | BM25 rw/last | R@20 bm25/dense/hybrid "
            "(human) | BM25 R@20 x human | order | targets met |\n|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        p = passes(r)
        lines.append(f"| {r['pool']} | {r['turns']} | {r['failed']:.1%} | {r['min_kept']:.0%} | "
                     f"{r['history_dependent']:.0%} | {r['pronoun']:.0%} | {r['bm25_ratio']:.3f} | "
                     f"{r['bm25_r20']:.2f}/{r['dense_r20']:.2f}/{r['hybrid_r20']:.2f} "
                     f"({r['human_bm25_r20']:.2f}/{r['human_dense_r20']:.2f}/{r['human_hybrid_r20']:.2f}) | "
                     f"{r['bm25_r20_x_human']:.2f} | {'kept' if r['order_ok'] else 'broken ' + ','.join(r['broken'])} "
                     f"({r['order_runs']} runs) | "
                     f"{sum(p.values())}/{len(p)}{'' if all(p.values()) else ' (missed: ' + ', '.join(k for k, v in p.items() if not v) + ')'} |")
    worst = min(rows, key=lambda r: sum(passes(r).values()), default=None)
    if worst is not None:
        lines.append(f"\nWorst pool: {worst['pool']} ({sum(passes(worst).values())} of {len(passes(worst))} "
                     "targets met)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("untitle", help="a corpus with its titles removed")
    u.add_argument("src")
    u.add_argument("dst")
    c = sub.add_parser("check", help="the targets, pool by pool")
    c.add_argument("--pool", action="append", required=True,
                   help="DOMAIN=RUN_DIR[,RUN_DIR...] (repeatable; several runs of one pool, other seeds, are averaged)")
    c.add_argument("--human", default=str(ROOT / "tests" / "data" / "mtrag"))
    c.add_argument("--work", default="mtr-eval/realism-targets")
    c.add_argument("--json", help="also write the rows here")
    c.add_argument("--embed-cache-dir", help="an embedding cache to reuse (the spines')")
    a = ap.parse_args(argv)
    if a.cmd == "untitle":
        untitle(a.src, a.dst)
        return
    pools = [tuple(p.split("=", 1)) for p in a.pool]
    rows = check(pools, a.human, a.work, a.embed_cache_dir)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))
    print(format_rows(rows))


if __name__ == "__main__":
    main()
