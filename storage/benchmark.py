"""One in-memory view of a conversational retrieval benchmark, whatever its source format.

Audit (MTR-Eval), abstention and retrieval evaluation all read benchmarks through
:func:`load_benchmark`, so each adapter is written once. A benchmark is a corpus plus a list
of :class:`BenchTurn` records (one per user turn, with its history, gold passages and
reference answer). Ids are stable: ``sample_id`` is the source's own turn id (``conv:turn``
for ours, ``conv<::>turn`` for MTRAG); joins are on ids, never on positions.

Formats:
* ``ours``: a synthesis run directory (tables ``chunks``, ``turns``, ``qrels``,
  ``conversations``; see ``storage/schemas.py``). The corpus is the ``chunks`` table.
* ``mtrag``: the MTRAG layout (``corpus/<d>.jsonl.gz``, ``conversations/<d>.jsonl``,
  ``qrels/<d>.tsv``, ``queries/<d>_rewrite.jsonl``) and a domain name.
* ``beir``: a BEIR folder plus an optional ``conversations.jsonl`` (one line per query id:
  ``{"_id", "history": [{"role", "text"}...], "answer"}``); without it every query is a
  one-turn conversation.
* ``chatrag``: ChatRAG-Bench style rows (see :func:`load_chatrag`): ``messages``,
  ``answers``, ``ground_truth_ctx``, ``ctxs``. The corpus is the union of every row's
  passages; each row's ``ctxs`` is kept as its candidate list.
* ``coral``: CORAL (see :func:`load_coral`): conversations with ``golden_docs_pids`` plus
  ``passage_corpus.json``; turns with one gold passage get the reference's neighbouring-id
  candidate list.
* ``topiocqa``: TopiOCQA-style rows (see :func:`load_topiocqa`) with an optional
  ``full_wiki_segments.tsv`` corpus.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Sequence

from storage.records import Document
from storage.store import RunStore, StoreError

Format = Literal["ours", "mtrag", "beir", "chatrag", "coral", "topiocqa"]


@dataclass(frozen=True, slots=True)
class BenchTurn:
    """One user turn to retrieve for / judge.

    Attributes:
        sample_id: stable id of the turn.
        conv_id: conversation id.
        turn: 1-based turn number.
        question: the current user message.
        history: earlier messages, oldest first, as (role, text) with role user|assistant;
            the current question is *not* included.
        reference_answer: the benchmark's answer for this turn ("" when none).
        gold: {doc_id: grade} (empty for unanswerable turns).
        answerability: ANSWERABLE | PARTIAL | UNANSWERABLE | CONVERSATIONAL.
        rewrite: a standalone rewrite of the question, when the benchmark has one.
        turns_since_switch: 0 at a hard topic switch, k turns after it, None if no switch yet.
        generator: model id that wrote this turn, when known (for self-preference exclusion).
        candidates: the benchmark's own candidate passage list for this turn, in the
            benchmark's order, when it ships one (ChatRAG ``ctxs``, CORAL neighbours); else ().
    """

    sample_id: str
    conv_id: str
    turn: int
    question: str
    history: tuple[tuple[str, str], ...] = ()
    reference_answer: str = ""
    gold: dict[str, int] = field(default_factory=dict)
    answerability: str = "ANSWERABLE"
    rewrite: str | None = None
    turns_since_switch: int | None = None
    generator: str | None = None
    candidates: tuple[str, ...] = ()

    def messages(self) -> list[dict[str, str]]:
        """History plus the current question as role/text dicts (for query builders)."""
        return [{"role": r, "text": t} for r, t in self.history] + [{"role": "user", "text": self.question}]


@dataclass
class Benchmark:
    name: str
    format: str
    corpus: dict[str, Document]
    turns: list[BenchTurn]

    @property
    def qrels(self) -> dict[str, dict[str, int]]:
        return {t.sample_id: dict(t.gold) for t in self.turns if t.gold}

    def conversations(self) -> dict[str, list[BenchTurn]]:
        out: dict[str, list[BenchTurn]] = {}
        for t in self.turns:
            out.setdefault(t.conv_id, []).append(t)
        for v in out.values():
            v.sort(key=lambda t: t.turn)
        return out

    def by_id(self) -> dict[str, BenchTurn]:
        return {t.sample_id: t for t in self.turns}


def _role(r: str) -> str:
    return "assistant" if r in ("agent", "assistant", "system_response") else "user"


def load_mtrag(root: str | Path, domain: str) -> Benchmark:
    from storage.formats import read_mtrag_domain
    d = read_mtrag_domain(root, domain, query_types=("rewrite",), with_conversations=True)
    rewrites = {q.qid: q.text for q in d.queries.get("rewrite", [])}
    turns = []
    for t in d.conversations:
        msgs = [(_role(m.role), m.text) for m in t.history]
        if not msgs or msgs[-1][0] != "user":
            raise StoreError(f"MTRAG task {t.task_id}: history does not end with the user turn")
        turns.append(BenchTurn(sample_id=t.task_id, conv_id=t.conversation_id, turn=t.turn,
                               question=msgs[-1][1], history=tuple(msgs[:-1]),
                               reference_answer=t.reference_answer, gold=dict(d.qrels.get(t.task_id, {})),
                               answerability=t.answerability, rewrite=rewrites.get(t.task_id)))
    return Benchmark(name=f"mtrag-{domain}", format="mtrag", corpus=d.corpus, turns=turns)


def load_ours(run_dir: str | Path) -> Benchmark:
    store = RunStore(str(run_dir))
    for name in ("chunks", "turns", "qrels"):
        if not store.has_table(name):
            raise StoreError(f"{run_dir} is not a synthesized benchmark: no {name!r} table "
                             "(run `mtr synthesize` first)")
    corpus = {r["chunk_id"]: Document(r["chunk_id"], r["title"] or "", r["text"], r["doc_id"])
              for r in store.read_table("chunks", columns=["chunk_id", "doc_id", "title", "text"]).to_pylist()}
    qrels: dict[str, dict[str, int]] = {}
    for r in store.read_table("qrels").to_pylist():
        qrels.setdefault(r["sample_id"], {})[r["doc_id"]] = int(r["grade"])
    pools: dict[int, tuple[str, ...]] = {}
    if store.has_table("clusters"):   # the benchmark's own candidate list: the turn's cluster (its passage pool)
        members: dict[int, list[tuple[int, str]]] = {}
        for r in store.read_table("clusters", columns=["cluster_id", "position", "chunk_id"]).to_pylist():
            members.setdefault(int(r["cluster_id"]), []).append((int(r["position"]), r["chunk_id"]))
        pools = {c: tuple(cid for _, cid in sorted(m)) for c, m in members.items()}
    rows = [r for r in store.read_table("turns").to_pylist() if r["status"] == "ok"]
    rows.sort(key=lambda r: (r["conv_id"], r["turn"]))
    turns: list[BenchTurn] = []
    hist: dict[str, list[tuple[str, str]]] = {}
    for r in rows:
        h = hist.setdefault(r["conv_id"], [])
        turns.append(BenchTurn(sample_id=r["sample_id"], conv_id=r["conv_id"], turn=int(r["turn"]),
                               question=r["question"], history=tuple(h), reference_answer=r["answer"] or "",
                               gold=qrels.get(r["sample_id"], {}), answerability=r["answerability"],
                               rewrite=r["standalone_question"], turns_since_switch=r["turns_since_switch"],
                               generator=r["model"],
                               candidates=pools.get(r["cluster_id"], ()) if r["cluster_id"] is not None else ()))
        h.extend([("user", r["question"]), ("assistant", r["answer"] or "")])
    return Benchmark(name=store.run_id, format="ours", corpus=corpus, turns=turns)


def load_beir(folder: str | Path, split: str = "test") -> Benchmark:
    from storage.formats import FormatError, iter_jsonl, read_beir
    ds = read_beir(folder, split=split)
    conv_path = Path(folder) / "conversations.jsonl"
    extra: dict[str, dict] = {}
    if conv_path.exists():
        for lineno, obj in iter_jsonl(conv_path):
            if "_id" not in obj:
                raise FormatError(conv_path, lineno, "missing '_id'")
            extra[str(obj["_id"])] = obj
    turns = []
    for qid, q in ds.queries.items():
        e = extra.get(qid, {})
        hist = tuple((_role(m.get("role", "user")), m.get("text", "")) for m in e.get("history", []))
        conv, _, t = qid.rpartition(":")
        turn = int(t) if conv and t.isdigit() else 1
        turns.append(BenchTurn(sample_id=qid, conv_id=conv if conv and t.isdigit() else qid, turn=turn,
                               question=q.text, history=hist, reference_answer=e.get("answer", ""),
                               gold=dict(ds.qrels.get(qid, {})),
                               answerability="ANSWERABLE" if ds.qrels.get(qid) else "UNANSWERABLE"))
    return Benchmark(name=Path(folder).name, format="beir", corpus=ds.corpus, turns=turns)


# --------------------------------------------------------------------------------------
# ChatRAG-Bench, CORAL, TopiOCQA
# --------------------------------------------------------------------------------------
_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def _norm_text(text: str) -> str:
    return " ".join(str(text).split())


def _pick_file(folder: Path, split: str, what: str, patterns: Sequence[str]) -> Path:
    """The first existing ``folder/pattern`` (``{split}`` substituted), else the only JSON/JSONL file."""
    for pat in patterns:
        f = folder / pat.format(split=split)
        if f.is_file():
            return f
    found = sorted(f for f in folder.iterdir() if f.is_file() and f.name.endswith((".json", ".jsonl", ".json.gz",
                                                                                  ".jsonl.gz")))
    if len(found) == 1:
        return found[0]
    raise StoreError(f"{folder}: cannot tell which file holds the {what} "
                     f"(looked for {', '.join(p.format(split=split) for p in patterns)})")


def _read_json_rows(path: Path) -> list[tuple[int | None, dict]]:
    """Rows of a JSON array file or a JSON-lines file: ``[(line or None, object)]``."""
    from storage.formats import FormatError, iter_jsonl, iter_lines
    first = next(iter_lines(path), (None, ""))[1].lstrip()
    if first.startswith("["):
        import gzip
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8-sig") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as exc:
                raise FormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from None
        if not all(isinstance(x, dict) for x in data):
            raise FormatError(path, None, "expected a JSON array of objects")
        return [(None, x) for x in data]
    return list(iter_jsonl(path))


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
    from storage.formats import FormatError
    from storage.records import hash_doc_id
    p = Path(path)
    f = _pick_file(p, split, "ChatRAG rows", ("{split}.jsonl", "{split}.json", "{split}.jsonl.gz")) if p.is_dir() else p
    bench_name = name or (p.name if p.is_dir() else f.name.split(".")[0])
    corpus: dict[str, Document] = {}
    turns: list[BenchTurn] = []
    for i, (lineno, row) in enumerate(_read_json_rows(f)):
        where = lineno if lineno is not None else None
        msgs = row.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise FormatError(f, where, f"row {i}: 'messages' must be a non-empty list")
        hist = []
        for m in msgs:
            if not isinstance(m, dict) or not isinstance(m.get("content", m.get("text")), str):
                raise FormatError(f, where, f"row {i}: each message needs a role and string content")
            hist.append((_role(str(m.get("role", "user"))), m.get("content", m.get("text"))))
        if hist[-1][0] != "user":
            raise FormatError(f, where, f"row {i}: the last message must be the user's question")
        cand: list[str] = []
        try:
            for c in row.get("ctxs") or []:
                title, text = _ctx_text(c)
                if not text.strip():
                    continue
                did = hash_doc_id(_norm_text(text))
                corpus.setdefault(did, Document(did, title, text, bench_name))
                if did not in cand:
                    cand.append(did)
            gt = row.get("ground_truth_ctx")
            gts = gt if isinstance(gt, list) else ([gt] if gt else [])
            gold = {}
            for g in gts:
                _, text = _ctx_text(g)
                if text.strip():
                    gold[hash_doc_id(_norm_text(text))] = 1
        except ValueError as exc:
            raise FormatError(f, where, f"row {i}: {exc}") from None
        answers = row.get("answers") or []
        if isinstance(answers, str):
            answers = [answers]
        sid = str(row.get("id", row.get("sample_id", f"{bench_name}:{i}")))
        first_user = next(t for r, t in hist if r == "user")
        conv = str(row.get("conv_id") or hash_doc_id(f"{row.get('document', '')}\n{_norm_text(first_user)}"))
        turns.append(BenchTurn(sample_id=sid, conv_id=conv, turn=sum(1 for r, _ in hist if r == "user"),
                               question=hist[-1][1], history=tuple(hist[:-1]),
                               reference_answer=str(answers[0]) if answers else "", gold=gold,
                               answerability="ANSWERABLE" if gold else "UNANSWERABLE",
                               candidates=tuple(cand)))
    return Benchmark(name=bench_name, format="chatrag", corpus=corpus, turns=turns)


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
    from storage.formats import FormatError
    p = Path(path)
    if p.is_dir():
        conv_file = _pick_file(p, split, "CORAL conversations",
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
    for lineno, row in _read_json_rows(corpus_file):
        if "ref_id" not in row or not isinstance(row.get("ref_string"), str):
            raise FormatError(corpus_file, lineno, "a passage needs 'ref_id' and a 'ref_string' string")
        did = str(row["ref_id"])
        if did in corpus:
            raise FormatError(corpus_file, lineno, f"duplicate ref_id {did!r}")
        corpus[did] = Document(did, str(row.get("title") or ""), row["ref_string"], "coral")
        order.append(did)
    pos = {d: i for i, d in enumerate(order)}
    turns: list[BenchTurn] = []
    for lineno, conv in _read_json_rows(conv_file):
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
    from storage.formats import FormatError, iter_lines
    p = Path(path)
    f = _pick_file(p, split, "TopiOCQA rows", ("topiocqa_{split}.json", "{split}.json", "{split}.jsonl")) \
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
    for lineno, row in _read_json_rows(f):
        try:
            conv, tno, q = str(row["Conversation_no"]), int(row["Turn_no"]), row["Question"]
        except (KeyError, TypeError, ValueError):
            raise FormatError(f, lineno, "a row needs Conversation_no, Turn_no and Question") from None
        ctx = row.get("Context") or []
        hist = tuple((("user" if j % 2 == 0 else "assistant"), str(x)) for j, x in enumerate(ctx))
        gp = row.get("Gold_passage") or {}
        gold: dict[str, int] = {}
        if isinstance(gp, dict) and gp.get("text"):
            did = str(gp.get("id") or hash_doc_id_text(gp["text"]))
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


def hash_doc_id_text(text: str) -> str:
    from storage.records import hash_doc_id
    return hash_doc_id(_norm_text(text))


def load_benchmark(path: str | Path, format: str, domain: str | None = None, split: str = "test") -> Benchmark:
    """Load any supported benchmark (see :func:`iter_formats`); ``domain`` is required for MTRAG."""
    p = Path(path)
    if not p.exists():
        raise StoreError(f"benchmark path {p} does not exist")
    if format == "ours":
        return load_ours(p)
    if format == "mtrag":
        if not domain:
            raise StoreError("the mtrag format needs a domain (e.g. --domain clapnq)")
        return load_mtrag(p, domain)
    if format == "beir":
        return load_beir(p, split)
    if format == "chatrag":
        return load_chatrag(p, split=split, name=domain)
    if format == "coral":
        return load_coral(p, split=split)
    if format == "topiocqa":
        return load_topiocqa(p, split=split)
    raise StoreError(f"unknown benchmark format {format!r}; use {', '.join(iter_formats())}")


def iter_formats() -> Iterable[str]:
    return ("ours", "mtrag", "beir", "chatrag", "coral", "topiocqa")
