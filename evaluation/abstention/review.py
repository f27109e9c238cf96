"""Step 1 of the practical recipe: a sample of rule-unanswerable contexts for human review.

:func:`sample_for_review` draws ``n`` (100-200 recommended) rule-unanswerable contexts,
spread evenly over the retrievers (seeded), and :func:`write_review` writes them with their
passages as JSON lines and CSV, with empty ``human_label`` (``yes`` / ``partial`` / ``no``)
and ``human_notes`` columns. The judges' labels go to a separate key file so that the
review can be blind. Once filled in, :func:`review_precision` reads the CSV back and gives
the rule's precision and false-miss rates from the human labels alone.
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Mapping, Sequence

from evaluation.abstention.contexts import Context
from evaluation.abstention.rule_metrics import RuleMetrics, rule_metrics
from storage.benchmark import Benchmark


def sample_for_review(contexts: Sequence[Context], n: int, seed: int = 0) -> list[Context]:
    """Up to ``n`` rule-unanswerable contexts, as evenly spread over retrievers as possible."""
    pools: dict[str, list[Context]] = {}
    for c in contexts:
        if c.rule_unanswerable:
            pools.setdefault(c.retriever, []).append(c)
    rng = random.Random(seed)
    for v in pools.values():
        rng.shuffle(v)
    out: list[Context] = []
    names = list(pools)
    i = 0
    while len(out) < n and any(pools.values()):
        p = pools[names[i % len(names)]]
        if p:
            out.append(p.pop())
        i += 1
    return out


def _row(i: int, c: Context, benchmark: Benchmark, turns: Mapping, k: int) -> dict:
    turn = turns[c.sample_id]
    row = {"review_id": f"r{i:04d}", "retriever": c.retriever, "sample_id": c.sample_id,
           "question": turn.question,
           "history": "\n".join(f"{r}: {t}" for r, t in turn.history),
           "reference_answer": turn.reference_answer}
    for j in range(k):
        d = c.doc_ids[j] if j < len(c.doc_ids) else ""
        row[f"p{j + 1}_id"] = d
        row[f"p{j + 1}_text"] = benchmark.corpus[d].text if d in benchmark.corpus else ""
    gold = sorted(c.gold)
    row["qrels_ids"] = " ".join(gold)
    row["qrels_texts"] = "\n---\n".join(benchmark.corpus[d].text for d in gold if d in benchmark.corpus)
    row["human_label"] = ""
    row["human_notes"] = ""
    return row


def write_review(sample: Sequence[Context], benchmark: Benchmark, out_dir: str | Path,
                 judge_labels: Mapping[str, Mapping[tuple, str | None]], k: int, note: str = "") -> dict[str, Path]:
    """Write ``review_sample.jsonl``, ``review_sample.csv`` and ``review_key.csv``.

    Args:
        sample: contexts from :func:`sample_for_review`.
        judge_labels: ``{judge: {context key: label}}`` (goes to the key file only).
        k: passages per context (columns p1..pk).
        note: a column stored with every row (e.g. the offline-demonstration notice).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    turns = benchmark.by_id()
    rows = [_row(i, c, benchmark, turns, k) | ({"note": note} if note else {}) for i, c in enumerate(sample, start=1)]
    paths = {"jsonl": out / "review_sample.jsonl", "csv": out / "review_sample.csv", "key": out / "review_key.csv"}
    with paths["jsonl"].open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    cols = list(rows[0]) if rows else ["review_id", "retriever", "sample_id", "human_label", "human_notes"]
    with paths["csv"].open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    judges = list(judge_labels)
    with paths["key"].open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["review_id", "retriever", "sample_id", *[f"judge:{j}" for j in judges]])
        for r, c in zip(rows, sample):
            w.writerow([r["review_id"], c.retriever, c.sample_id,
                        *[judge_labels[j].get(c.key) or "" for j in judges]])
    return paths


def review_precision(csv_path: str | Path) -> RuleMetrics:
    """Rule precision / false-miss rates from a filled-in review CSV (rows without a
    ``human_label`` are left out; every reviewed context is rule-unanswerable).

    Raises:
        ValueError: a label other than yes / partial / no.
    """
    labels: list[str | None] = []
    with Path(csv_path).open(encoding="utf-8", newline="") as f:
        for i, r in enumerate(csv.DictReader(f), start=2):
            v = (r.get("human_label") or "").strip().lower()
            if not v:
                labels.append(None)
                continue
            if v not in ("yes", "partial", "no"):
                raise ValueError(f"{csv_path}:{i}: human_label must be yes, partial or no, got {v!r}")
            labels.append(v)
    return rule_metrics([True] * len(labels), labels)


__all__ = ["review_precision", "sample_for_review", "write_review"]
