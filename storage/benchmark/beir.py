"""``beir``: a BEIR folder plus an optional ``conversations.jsonl`` (one line per query id:
``{"_id", "history": [{"role", "text"}...], "answer"}``); without it every query is a
one-turn conversation."""
from __future__ import annotations

from pathlib import Path

from storage.benchmark.model import Benchmark, BenchTurn, speaker_role
from storage.formats.beir import read_beir
from storage.formats.io import FormatError, iter_jsonl


def load_beir(folder: str | Path, split: str = "test") -> Benchmark:
    """A BEIR folder; query ids ``conv:turn`` are split into conversation and turn."""
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
        hist = tuple((speaker_role(m.get("role", "user")), m.get("text", "")) for m in e.get("history", []))
        conv, _, t = qid.rpartition(":")
        turn = int(t) if conv and t.isdigit() else 1
        turns.append(BenchTurn(sample_id=qid, conv_id=conv if conv and t.isdigit() else qid, turn=turn,
                               question=q.text, history=hist, reference_answer=e.get("answer", ""),
                               gold=dict(ds.qrels.get(qid, {})),
                               answerability="ANSWERABLE" if ds.qrels.get(qid) else "UNANSWERABLE"))
    return Benchmark(name=Path(folder).name, format="beir", corpus=ds.corpus, turns=turns)
