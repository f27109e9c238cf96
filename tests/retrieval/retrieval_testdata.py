"""Helpers for the retrieval tests (imported as ``retrieval_testdata``): MTRAG test-data loaders and a trec_eval scorer."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

MTRAG = Path(__file__).resolve().parents[1] / "data" / "mtrag"
DOMAINS = ("clapnq", "cloud")
QUERY_TYPES = ("lastturn", "questions", "rewrite")


def _open(path: Path):
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        path = path.with_name(path.name + ".gz")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def load_corpus(domain: str) -> list[tuple[str, str]]:
    with _open(MTRAG / "corpus" / f"{domain}.jsonl.gz") as f:
        return [(r["doc_id"], r["text"]) for r in map(json.loads, f)]


def load_queries(domain: str, qtype: str) -> dict[str, str]:
    with _open(MTRAG / "queries" / f"{domain}_{qtype}.jsonl") as f:
        return {r["qid"]: r["text"] for r in map(json.loads, f)}


def load_qrels(domain: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with _open(MTRAG / "qrels" / f"{domain}.tsv") as f:
        for line in f:
            q, _, d, g = line.rstrip("\n").split("\t")
            qrels.setdefault(q, {})[d] = int(g)
    return qrels


def load_conversations(domain: str) -> list[dict]:
    with _open(MTRAG / "conversations" / f"{domain}.jsonl") as f:
        return [json.loads(line) for line in f]


def mean_metrics(run, qrels, metrics=("ndcg_cut_5", "recall_5", "ndcg_cut_10", "recall_10")) -> dict[str, float]:
    """trec_eval (pytrec_eval) values averaged over the qrels queries; empty/missing lists score 0."""
    import pytrec_eval
    measures = {"{}.{}".format(*m.rsplit("_", 1)) for m in metrics}
    ev = pytrec_eval.RelevanceEvaluator(qrels, measures)
    res = ev.evaluate({q: v for q, v in run.items() if v and q in qrels})
    return {m: sum(res.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels) for m in metrics}
