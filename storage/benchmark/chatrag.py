"""``chatrag``: ChatRAG-Bench style rows (``messages``, ``answers``, ``ground_truth_ctx``,
``ctxs``). The corpus is the union of every row's passages; each row's ``ctxs`` is kept as its
candidate list."""
from __future__ import annotations

from pathlib import Path

from storage.benchmark.model import Benchmark, BenchTurn, norm_text, speaker_role, text_doc_id
from storage.formats.io import FormatError, pick_split_file, read_json_rows
from storage.records import Document, hash_doc_id


def _ctx_text(c: object) -> tuple[str, str]:
    """(title, text) of a ChatRAG passage given as a dict (``ctx`` or ``text``) or a string."""
    if isinstance(c, str):
        return "", c
    if isinstance(c, dict):
        text = c.get("ctx", c.get("text"))
        if isinstance(text, str):
            return str(c.get("title") or ""), text
    raise ValueError("a passage needs a 'ctx' or 'text' string")


def load_chatrag(path: str | Path, split: str = "test", name: str | None = None) -> Benchmark:
    """ChatRAG-Bench style rows (one JSON object per sample; a JSONL file, a JSON array, or a
    folder holding ``{split}.jsonl`` / ``{split}.json``).

    Row fields:

    * ``messages``: ``[{"role": "user"|"assistant", "content": ...}]``, the history up to
      and including the current user question (the last message must be the user's);
    * ``answers``: reference answers (the first is the turn's reference answer);
    * ``ground_truth_ctx``: the gold passage ``{"ctx"|"text", "title"?, "index"?}`` or a list
      of them (all are gold, grade 1); missing or empty = no gold (UNANSWERABLE);
    * ``ctxs``: the sample's candidate passages ``[{"ctx"|"text", "title"?}]``;
    * optional ``id`` / ``sample_id`` (else ``<file stem>:<row>``), ``conv_id``, ``document``.

    ChatRAG-Bench ships no corpus: the corpus is the union of every row's ``ctxs``, doc ids
    are content hashes of the whitespace-normalised text, and a gold passage is located by
    that text. A gold passage that appears in no row's ``ctxs`` is kept in ``gold`` but is
    *not* added to the corpus, so audits see it as missing (and skip, not zero, the item).
    Each row's ``ctxs`` ids become :attr:`BenchTurn.candidates` (the benchmark's own list).

    Args:
        path: file or folder.
        split: file name to look for in a folder.
        name: benchmark name (default: the file stem, or folder name for ``{split}`` files).
    """
    p = Path(path)
    f = pick_split_file(p, split, "ChatRAG rows", ("{split}.jsonl", "{split}.json", "{split}.jsonl.gz")) \
        if p.is_dir() else p
    bench_name = name or (p.name if p.is_dir() else f.name.split(".")[0])
    corpus: dict[str, Document] = {}
    turns: list[BenchTurn] = []
    for i, (lineno, row) in enumerate(read_json_rows(f)):
        msgs = row.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise FormatError(f, lineno, f"row {i}: 'messages' must be a non-empty list")
        hist = []
        for m in msgs:
            if not isinstance(m, dict) or not isinstance(m.get("content", m.get("text")), str):
                raise FormatError(f, lineno, f"row {i}: each message needs a role and string content")
            hist.append((speaker_role(str(m.get("role", "user"))), m.get("content", m.get("text"))))
        if hist[-1][0] != "user":
            raise FormatError(f, lineno, f"row {i}: the last message must be the user's question")
        cand: list[str] = []
        try:
            for c in row.get("ctxs") or []:
                title, text = _ctx_text(c)
                if not text.strip():
                    continue
                did = text_doc_id(text)
                corpus.setdefault(did, Document(did, title, text, bench_name))
                if did not in cand:
                    cand.append(did)
            gt = row.get("ground_truth_ctx")
            gts = gt if isinstance(gt, list) else ([gt] if gt else [])
            gold = {}
            for g in gts:
                _, text = _ctx_text(g)
                if text.strip():
                    gold[text_doc_id(text)] = 1
        except ValueError as exc:
            raise FormatError(f, lineno, f"row {i}: {exc}") from None
        answers = row.get("answers") or []
        if isinstance(answers, str):
            answers = [answers]
        sid = str(row.get("id", row.get("sample_id", f"{bench_name}:{i}")))
        first_user = next(t for r, t in hist if r == "user")
        conv = str(row.get("conv_id") or hash_doc_id(f"{row.get('document', '')}\n{norm_text(first_user)}"))
        turns.append(BenchTurn(sample_id=sid, conv_id=conv, turn=sum(1 for r, _ in hist if r == "user"),
                               question=hist[-1][1], history=tuple(hist[:-1]),
                               reference_answer=str(answers[0]) if answers else "", gold=gold,
                               answerability="ANSWERABLE" if gold else "UNANSWERABLE",
                               candidates=tuple(cand)))
    return Benchmark(name=bench_name, format="chatrag", corpus=corpus, turns=turns)
