"""``coral``: CORAL conversations with ``golden_docs_pids`` plus ``passage_corpus.json``; turns
with one gold passage get the reference's neighbouring-id candidate list."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from storage.benchmark.model import Benchmark, BenchTurn
from storage.formats.io import FormatError, pick_split_file, read_json_rows
from storage.records import Document
from storage.store import StoreError

_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def coral_neighbours(order: Sequence[str], gold: str, n: int = 8) -> tuple[str, ...]:
    """The reference's CORAL candidate list: ``n`` passages with neighbouring corpus positions,
    gold position -3 ... +4 (for ``n=8``), shifted to stay inside the corpus."""
    return _neighbours(order, list(order).index(gold), n)


def _neighbours(order: Sequence[str], i: int, n: int = 8) -> tuple[str, ...]:
    start = max(0, i - (n // 2 - 1))
    end = min(len(order), start + n)
    return tuple(order[max(0, end - n):end])


def load_coral(path: str | Path, split: str = "test") -> Benchmark:
    """CORAL: a conversations file (JSON array or JSONL of ``{"conv_id", "turns": [{"turn_id",
    "question", "response", "golden_docs_pids": [...], "golden_rewrite"?}]}``) and the passage
    corpus ``passage_corpus.json`` (JSON lines or array of ``{"ref_id", "ref_string",
    "title"?}``).

    ``path`` is the CORAL folder (``passage_corpus.json`` plus ``{split}/new_{split}_conversation.json``,
    ``{split}_conversation.json`` ...) or the conversations file itself with the corpus in
    its folder or the folder above. Doc ids are the ``ref_id`` values as strings (the pids).
    Every turn is kept (the reference kept only single-gold turns); the answer is the turn's
    ``response`` with its citation markers (``[12]``) removed. For turns with exactly one
    gold passage :attr:`BenchTurn.candidates` is the reference's candidate list (the 8
    passages at neighbouring corpus positions, see :func:`coral_neighbours`).
    """
    p = Path(path)
    if p.is_dir():
        conv_file = pick_split_file(p, split, "CORAL conversations",
                                    ("{split}/new_{split}_conversation.json", "{split}/{split}_conversation.json",
                                     "new_{split}_conversation.json", "{split}_conversation.json",
                                     "{split}_conversation.jsonl", "{split}.json", "{split}.jsonl"))
        roots = [p]
    else:
        conv_file = p
        roots = [p.parent, p.parent.parent]
    corpus_file = next((r / n for r in roots for n in ("passage_corpus.json", "passage_corpus.jsonl")
                        if (r / n).is_file()), None)
    if corpus_file is None:
        raise StoreError(f"CORAL: no passage_corpus.json next to {conv_file}")
    if conv_file.resolve() == corpus_file.resolve():
        raise StoreError(f"CORAL: {p} holds no conversations file besides the corpus")
    corpus: dict[str, Document] = {}
    order: list[str] = []
    for lineno, row in read_json_rows(corpus_file):
        if "ref_id" not in row or not isinstance(row.get("ref_string"), str):
            raise FormatError(corpus_file, lineno, "a passage needs 'ref_id' and a 'ref_string' string")
        did = str(row["ref_id"])
        if did in corpus:
            raise FormatError(corpus_file, lineno, f"duplicate ref_id {did!r}")
        corpus[did] = Document(did, str(row.get("title") or ""), row["ref_string"], "coral")
        order.append(did)
    pos = {d: i for i, d in enumerate(order)}
    turns: list[BenchTurn] = []
    for lineno, conv in read_json_rows(conv_file):
        cid = conv.get("conv_id")
        ts = conv.get("turns")
        if cid is None or not isinstance(ts, list):
            raise FormatError(conv_file, lineno, "a conversation needs 'conv_id' and a 'turns' list")
        hist: list[tuple[str, str]] = []
        for k, t in enumerate(ts, start=1):
            q, r = t.get("question"), t.get("response", "")
            if not isinstance(q, str):
                raise FormatError(conv_file, lineno, f"conversation {cid}: turn {k} has no question")
            tid = int(t.get("turn_id", k))
            gold = {str(x): 1 for x in (t.get("golden_docs_pids") or [])}
            answer = _CITATION.sub("", r or "").strip()
            g1 = next(iter(gold)) if len(gold) == 1 else None
            cands = _neighbours(order, pos[g1]) if g1 in pos else ()
            turns.append(BenchTurn(sample_id=f"{cid}_{tid}", conv_id=str(cid), turn=tid, question=q,
                                   history=tuple(hist), reference_answer=answer, gold=gold,
                                   answerability="ANSWERABLE" if gold else "UNANSWERABLE",
                                   rewrite=t.get("golden_rewrite") or None, candidates=cands))
            hist.extend([("user", q), ("assistant", answer)])
    return Benchmark(name=f"coral-{split}", format="coral", corpus=corpus, turns=turns)
