"""``mtrag``: one domain of the MTRAG layout (``corpus/<d>.jsonl.gz``, ``conversations/<d>.jsonl``,
``qrels/<d>.tsv``, ``queries/<d>_rewrite.jsonl``)."""
from __future__ import annotations

from pathlib import Path

from storage.benchmark.model import Benchmark, BenchTurn, speaker_role
from storage.formats.mtrag import read_mtrag_domain
from storage.store import StoreError


def load_mtrag(root: str | Path, domain: str) -> Benchmark:
    """One MTRAG domain; ``sample_id`` is the task id (``conv<::>turn``), rewrites come from
    ``queries/<d>_rewrite.jsonl``."""
    d = read_mtrag_domain(root, domain, query_types=("rewrite",), with_conversations=True)
    rewrites = {q.qid: q.text for q in d.queries.get("rewrite", [])}
    turns = []
    for t in d.conversations:
        msgs = [(speaker_role(m.role), m.text) for m in t.history]
        if not msgs or msgs[-1][0] != "user":
            raise StoreError(f"MTRAG task {t.task_id}: history does not end with the user turn")
        turns.append(BenchTurn(sample_id=t.task_id, conv_id=t.conversation_id, turn=t.turn,
                               question=msgs[-1][1], history=tuple(msgs[:-1]),
                               reference_answer=t.reference_answer, gold=dict(d.qrels.get(t.task_id, {})),
                               answerability=t.answerability, rewrite=rewrites.get(t.task_id)))
    return Benchmark(name=f"mtrag-{domain}", format="mtrag", corpus=d.corpus, turns=turns)
