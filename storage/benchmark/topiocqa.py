"""``topiocqa``: TopiOCQA-style rows with an optional ``full_wiki_segments.tsv`` corpus."""
from __future__ import annotations

from pathlib import Path

from storage.benchmark.model import Benchmark, BenchTurn, text_doc_id
from storage.formats.io import FormatError, iter_lines, pick_split_file, read_json_rows
from storage.records import Document


def load_topiocqa(path: str | Path, split: str = "dev") -> Benchmark:
    """TopiOCQA-style rows: a JSON array / JSONL of ``{"Conversation_no", "Turn_no",
    "Question", "Answer", "Context": [q1, a1, ...], "Gold_passage": {"id", "title", "text"},
    "Rewrite"?}`` (``path`` = that file, or a folder with ``topiocqa_{split}.json`` /
    ``{split}.json``).

    The corpus is ``full_wiki_segments.tsv`` (``id<TAB>text<TAB>title`` with a header) next to
    the rows when present; otherwise the union of the gold passages of all rows (then the
    hard negatives of an audit are other turns' gold passages). Answers ``UNANSWERABLE`` mark
    unanswerable turns.
    """
    p = Path(path)
    f = pick_split_file(p, split, "TopiOCQA rows", ("topiocqa_{split}.json", "{split}.json", "{split}.jsonl")) \
        if p.is_dir() else p
    corpus: dict[str, Document] = {}
    seg = f.parent / "full_wiki_segments.tsv"
    has_segments = seg.is_file()
    if has_segments:
        for lineno, line in iter_lines(seg):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and parts[0] == "id":
                continue
            if len(parts) < 2:
                raise FormatError(seg, lineno, "expected id<TAB>text<TAB>title")
            corpus[parts[0]] = Document(parts[0], parts[2] if len(parts) > 2 else "", parts[1], "topiocqa")
    turns: list[BenchTurn] = []
    for lineno, row in read_json_rows(f):
        try:
            conv, tno, q = str(row["Conversation_no"]), int(row["Turn_no"]), row["Question"]
        except (KeyError, TypeError, ValueError):
            raise FormatError(f, lineno, "a row needs Conversation_no, Turn_no and Question") from None
        ctx = row.get("Context") or []
        hist = tuple((("user" if j % 2 == 0 else "assistant"), str(x)) for j, x in enumerate(ctx))
        gp = row.get("Gold_passage") or {}
        gold: dict[str, int] = {}
        if isinstance(gp, dict) and gp.get("text"):
            did = str(gp.get("id") or text_doc_id(gp["text"]))
            gold[did] = 1
            if not has_segments:
                corpus.setdefault(did, Document(did, str(gp.get("title") or ""), gp["text"], "topiocqa"))
        answer = str(row.get("Answer") or "")
        unans = answer.strip().upper() == "UNANSWERABLE"
        turns.append(BenchTurn(sample_id=f"{conv}_{tno}", conv_id=conv, turn=tno, question=q, history=hist,
                               reference_answer="" if unans else answer, gold={} if unans else gold,
                               answerability="UNANSWERABLE" if unans or not gold else "ANSWERABLE",
                               rewrite=row.get("Rewrite") or None))
    return Benchmark(name=f"topiocqa-{split}", format="topiocqa", corpus=corpus, turns=turns)
