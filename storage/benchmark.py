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
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal

from storage.records import Document
from storage.store import RunStore, StoreError

Format = Literal["ours", "mtrag", "beir"]


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
                               generator=r["model"]))
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


def load_benchmark(path: str | Path, format: str, domain: str | None = None, split: str = "test") -> Benchmark:
    """Load any supported benchmark; ``domain`` is required for MTRAG."""
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
    raise StoreError(f"unknown benchmark format {format!r}; use ours, mtrag or beir")


def iter_formats() -> Iterable[str]:
    return ("ours", "mtrag", "beir")
