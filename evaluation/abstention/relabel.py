"""Step 10: relabel suggestions. Passages outside the qrels (hard negatives included) that a
judge names as support in a context it labels ``yes`` become *candidate* qrels additions,
written to a file a maintainer can review (JSON lines and CSV). The qrels are never edited.

One row per (turn, passage), pooled over retrievers: which judges named it (``yes`` /
``partial``), in how many retrievers' contexts it appeared and its best rank, whether it is a
benchmark hard negative, its provenance class and its best n-gram Jaccard with a qrels
passage. Rows every judge supports come first, then hard negatives, then by support count.
"""
from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from evaluation.abstention.contexts import Context
from evaluation.abstention.judges import Judgment


@dataclass
class Suggestion:
    sample_id: str
    doc_id: str
    judges_yes: list[str] = field(default_factory=list)
    judges_partial: list[str] = field(default_factory=list)
    retrievers: list[str] = field(default_factory=list)
    best_rank: int = 0
    hard_negative: bool = False
    hard_negative_note: str = ""
    provenance: str = ""
    max_jaccard_to_qrels: float = 0.0
    all_judges_yes: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def suggestions(contexts: Sequence[Context], judgments: Mapping[str, Mapping[tuple, Judgment]],
                judges: Sequence[str], hard_negatives: Mapping[str, Mapping[str, str]],
                classify, jaccard_to_qrels) -> list[Suggestion]:
    """Candidate qrels additions (see module docstring).

    Args:
        contexts: every analysed context.
        judgments: ``{judge: {context key: Judgment}}``.
        judges: judge names, primary first.
        hard_negatives: ``{sample_id: {doc_id: note}}``.
        classify: ``classify(sample_id, doc_id) -> provenance class``.
        jaccard_to_qrels: ``jaccard_to_qrels(sample_id, doc_id) -> float``.
    """
    acc: dict[tuple[str, str], Suggestion] = {}
    for c in contexts:
        for j in judges:
            jm = judgments.get(j, {}).get(c.key)
            if jm is None or jm.label not in ("yes", "partial"):
                continue
            for d in jm.supporting:
                if d in c.gold:
                    continue
                s = acc.get((c.sample_id, d))
                if s is None:
                    hn = hard_negatives.get(c.sample_id, {})
                    s = Suggestion(c.sample_id, d, hard_negative=d in hn, hard_negative_note=hn.get(d, ""),
                                   best_rank=c.doc_ids.index(d) + 1)
                    acc[(c.sample_id, d)] = s
                target = s.judges_yes if jm.label == "yes" else s.judges_partial
                if j not in target:
                    target.append(j)
                if c.retriever not in s.retrievers:
                    s.retrievers.append(c.retriever)
                s.best_rank = min(s.best_rank, c.doc_ids.index(d) + 1)
    out = [s for s in acc.values() if s.judges_yes]
    for s in out:
        s.all_judges_yes = set(judges) <= set(s.judges_yes)
        s.provenance = classify(s.sample_id, s.doc_id)
        s.max_jaccard_to_qrels = round(float(jaccard_to_qrels(s.sample_id, s.doc_id)), 4)
    out.sort(key=lambda s: (not s.all_judges_yes, not s.hard_negative, -len(s.judges_yes), -len(s.retrievers),
                            s.sample_id, s.doc_id))
    return out


def write_suggestions(rows: Sequence[Suggestion], out_dir: str | Path, texts: Mapping[str, str],
                      turns: Mapping, note: str = "") -> dict[str, Path]:
    """``relabel_suggestions.jsonl`` / ``.csv`` with the question, reference answer and passage."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    recs = []
    for s in rows:
        t = turns[s.sample_id]
        d = s.to_dict()
        d["judges_yes"] = ";".join(d["judges_yes"])
        d["judges_partial"] = ";".join(d["judges_partial"])
        d["retrievers"] = ";".join(d["retrievers"])
        recs.append(d | {"question": t.question, "reference_answer": t.reference_answer,
                         "passage": texts.get(s.doc_id, ""), "suggested_grade": 1} | ({"note": note} if note else {}))
    paths = {"jsonl": out / "relabel_suggestions.jsonl", "csv": out / "relabel_suggestions.csv"}
    with paths["jsonl"].open("w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    cols = list(recs[0]) if recs else ["sample_id", "doc_id", "suggested_grade"]
    with paths["csv"].open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(recs)
    return paths


__all__ = ["Suggestion", "suggestions", "write_suggestions"]
