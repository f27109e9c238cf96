"""Exports of a synthesized benchmark: BEIR folders (one per query mode), TREC qrels,
MTRAG-style JSONL, Parquet splits loadable with ``datasets``, and a dataset card.

Everything is derived from the run's tables joined on ids (``sample_id``, ``conv_id``,
``doc_id``); the train/test split is by conversation, so no conversation is in both.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections import Counter
from pathlib import Path
from statistics import mean, median
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage.benchmark import load_ours
from storage.formats import atomic_text_writer, write_trec_qrels
from storage.store import RunStore, StoreError

EXPORT_MODES = ("last_turn", "all_user_turns", "full_history", "rewrite")

QueryTexts = Callable[[str, Mapping[str, list[dict[str, str]]], Mapping[str, str]], Mapping[str, str]]
"""``(mode, {sample_id: messages}, {sample_id: rewrite}) -> {sample_id: query text}``: how the
caller's retrieval layer turns a conversation into the query of one export mode."""


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_text_writer(path) as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def export_benchmark(store: RunStore, out: Path | None = None, minutes_per_turn: float | None = None,
                     hourly_usd: float | None = None, *, query_texts: QueryTexts, human_cost_source: str | None = None,
                     card_sections: Sequence[str] = ()) -> dict[str, Any]:
    """Write every export of the run under ``out`` (default ``<run>/export``) and return the
    dataset card's statistics plus ``export_dir``.

    Args:
        store: the synthesized run.
        out: export folder.
        minutes_per_turn: human writing time per turn, for the card's cost estimate (None: no
            estimate; the card says what to set).
        hourly_usd: human hourly rate, for the card's cost estimate (None: no estimate).
        human_cost_source: where the two figures come from (stated on the card; without it
            they are marked as assumptions).
        card_sections: Markdown sections added to the card (the caller's realism, difficulty,
            examples and cost sections, see :mod:`evaluation.card`).
        query_texts: builds the ``queries.jsonl`` texts of each BEIR folder (one per
            :data:`EXPORT_MODES` mode); the caller hands in its retrieval layer's builder.

    Atomic as a whole: everything is written into a staging folder next to ``out``, which then
    replaces ``out`` (see :func:`replace_dir`); a failing export leaves the previous export
    untouched and no partial files. Ids TSV/TREC cannot hold are refused before any writing.
    """
    final = Path(out) if out else Path(store.local_dir()) / "export"
    final.parent.mkdir(parents=True, exist_ok=True)
    for pattern in (f".{final.name}.tmp-*", f".{final.name}.old-*"):   # left by an export that was killed
        for stale in final.parent.glob(pattern):
            shutil.rmtree(stale, ignore_errors=True)
    staging = final.with_name(f".{final.name}.tmp-{uuid.uuid4().hex[:12]}")
    staging.mkdir()
    try:
        stats = _write_exports(store, staging, minutes_per_turn, hourly_usd, query_texts, human_cost_source,
                               card_sections)
        replace_dir(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"export_dir": str(final), **stats}


_BAD_ID = re.compile(r"[\s\x00-\x1f\x7f]")


def check_export_ids(kind: str, ids) -> None:
    """Refuse ids that TSV and TREC files cannot hold (whitespace, control characters)."""
    for i in ids:
        if not isinstance(i, str) or not i or _BAD_ID.search(i):
            raise StoreError(f"cannot export: {kind} id {i!r} is empty or contains whitespace or a control "
                             "character (TSV and TREC files split on them)")


def replace_dir(new: Path, final: Path) -> None:
    """Put the finished folder ``new`` at ``final``, replacing a previous one as a whole: two
    renames in one directory, the old folder deleted only after the new one is in place."""
    if not final.exists():
        os.rename(new, final)
        return
    old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:12]}")
    os.rename(final, old)
    try:
        os.rename(new, final)
    except BaseException:
        os.rename(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write_exports(store: RunStore, out: Path, minutes_per_turn: float | None, hourly_usd: float | None,
                   query_texts: QueryTexts, human_cost_source: str | None = None,
                   card_sections: Sequence[str] = ()) -> dict[str, Any]:
    """Every export file under ``out`` (a fresh staging folder); returns the card's statistics."""
    bench = load_ours(store.path, with_corpus=False)   # the corpus is streamed from ``chunks`` below
    convs = {r["conv_id"]: r for r in store.read_table("conversations").to_pylist()}
    split = {t.sample_id: convs[t.conv_id]["split"] for t in bench.turns}
    qrels_rows = store.read_table("qrels").to_pylist()
    check_export_ids("corpus", (i for b in store.iter_batches("chunks", columns=["chunk_id"])
                                for i in b.column(0).to_pylist()))
    check_export_ids("query", (t.sample_id for t in bench.turns))
    check_export_ids("qrels query", (r["sample_id"] for r in qrels_rows))
    check_export_ids("qrels document", (r["doc_id"] for r in qrels_rows))

    # BEIR folders, one per query mode
    messages = {t.sample_id: t.messages() for t in bench.turns}
    rewrites = {t.sample_id: t.rewrite for t in bench.turns if t.rewrite}
    first_corpus: Path | None = None
    for mode in EXPORT_MODES:
        d = out / "beir" / mode
        if first_corpus is None:
            first_corpus = d / "corpus.jsonl"
            _jsonl(first_corpus, _corpus_rows(store))
        else:   # the same file in every mode folder: copied, not rebuilt
            d.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(first_corpus, d / "corpus.jsonl")
        queries = query_texts(mode, messages, rewrites)
        _jsonl(d / "queries.jsonl", ({"_id": q, "text": text, "split": split[q]} for q, text in queries.items()))
        for sp in ("train", "test"):
            (d / "qrels").mkdir(parents=True, exist_ok=True)
            with atomic_text_writer(d / "qrels" / f"{sp}.tsv") as f:
                f.write("query-id\tcorpus-id\tscore\n")
                for r in qrels_rows:
                    if split.get(r["sample_id"]) == sp:
                        f.write(f"{r['sample_id']}\t{r['doc_id']}\t{r['grade']}\n")
        _jsonl(d / "conversations.jsonl", ({"_id": t.sample_id, "history": [{"role": r, "text": x} for r, x in t.history],
                                            "answer": t.reference_answer} for t in bench.turns))
    # TREC qrels
    write_trec_qrels(bench.qrels, out / "qrels.trec")
    # MTRAG-style JSONL (one record per task)
    qprov: dict[str, list[dict]] = {}
    for r in qrels_rows:
        qprov.setdefault(r["sample_id"], []).append({"doc_id": r["doc_id"], "provenance": r["provenance"],
                                                     "reason": r["reason"]})
    _jsonl(out / "mtrag" / "conversations.jsonl", (
        {"task_id": t.sample_id, "conversation_id": t.conv_id, "turn": t.turn, "answerability": t.answerability,
         "split": split[t.sample_id],
         "history": [{"role": "agent" if r == "assistant" else "user", "text": x} for r, x in t.history]
         + [{"role": "user", "text": t.question}],
         "rewrite": t.rewrite, "reference_answer": t.reference_answer, "contexts": qprov.get(t.sample_id, []),
         "turns_since_switch": t.turns_since_switch} for t in bench.turns))
    # Parquet splits for `datasets`
    turns = store.read_table("turns").to_pylist()
    for sp in ("train", "test"):
        rows = [dict(r, split=sp, positives=[q["doc_id"] for q in qprov.get(r["sample_id"], [])])
                for r in turns if r["status"] == "ok" and convs[r["conv_id"]]["split"] == sp]
        (out / "hf").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table({"sample_id": pa.array([], pa.string())}),
                       out / "hf" / f"{sp}.parquet")
    _write_corpus_parquet(store, out / "hf" / "corpus.parquet")
    stats = card_stats(store, minutes_per_turn, hourly_usd)
    stats["human_cost_source"] = human_cost_source
    (out / "README.md").write_text(dataset_card(store.run_id, stats, card_sections), encoding="utf-8")
    return stats


def _corpus_rows(store: RunStore, batch_rows: int = 4096):
    """``{"_id", "title", "text"}`` per chunk, in table order, one batch of chunks in memory."""
    for b in store.iter_batches("chunks", columns=["chunk_id", "title", "text"], batch_size=batch_rows):
        for cid, title, text in zip(*(b.column(c).to_pylist() for c in ("chunk_id", "title", "text"))):
            yield {"_id": cid, "title": title or "", "text": text}


def _write_corpus_parquet(store: RunStore, path: Path, batch_rows: int = 4096) -> None:
    """``hf/corpus.parquet`` written batch by batch (columns _id, title, text)."""
    schema = pa.schema([("_id", pa.string()), ("title", pa.string()), ("text", pa.string())])
    writer = None
    try:
        for b in store.iter_batches("chunks", columns=["chunk_id", "title", "text"], batch_size=batch_rows):
            if writer is None:
                writer = pq.ParquetWriter(path, schema)
            title = pc.if_else(pc.is_null(b.column("title")), "", b.column("title"))
            writer.write_table(pa.table([b.column("chunk_id"), title, b.column("text")], schema=schema))
    finally:
        if writer is not None:
            writer.close()
    if writer is None:   # no chunks: the table the row-list writer produced (no columns)
        pq.write_table(pa.Table.from_pylist([]), path)


def card_stats(store: RunStore, minutes_per_turn: float | None, hourly_usd: float | None) -> dict[str, Any]:
    turns = store.read_table("turns").to_pylist()
    convs = store.read_table("conversations").to_pylist()
    qrels = store.read_table("qrels").to_pylist()
    ok = [t for t in turns if t["status"] == "ok"]
    alen = [len(t["answer"]) for t in ok if t["answerability"] == "ANSWERABLE"]
    llm_cost = 0.0
    tokens = 0
    backend = sorted({c["backend"] for c in convs if c["backend"]})
    if store.has_table("llm_calls"):
        calls = store.read_table("llm_calls", columns=["call_id", "cost_usd", "prompt_tokens", "completion_tokens"])
        seen = set()
        for r in calls.to_pylist():
            if r["call_id"] in seen:
                continue
            seen.add(r["call_id"])
            llm_cost += r["cost_usd"] or 0.0
            tokens += (r["prompt_tokens"] or 0) + (r["completion_tokens"] or 0)
    human = (len(ok) * minutes_per_turn / 60 * hourly_usd
             if minutes_per_turn is not None and hourly_usd is not None else None)
    return {
        "backend": ",".join(backend) or "none",
        "conversations": len(convs), "conversations_train": sum(c["split"] == "train" for c in convs),
        "conversations_test": sum(c["split"] == "test" for c in convs),
        "turns_ok": len(ok), "turns_failed": len(turns) - len(ok),
        "unanswerable_turns": sum(t["answerability"] == "UNANSWERABLE" for t in ok),
        "switch_positions": dict(sorted(Counter(c["switch_turn"] for c in convs if c["switch_turn"]).items())),
        "answer_chars_mean": round(mean(alen), 1) if alen else 0, "answer_chars_median": median(alen) if alen else 0,
        "qrels": len(qrels), "extra_positives": sum(q["provenance"] == "uniqueness" for q in qrels),
        "llm_tokens": tokens, "llm_cost_usd": round(llm_cost, 4),
        "human_cost_usd": round(human, 2) if human is not None else None, "minutes_per_turn_human": minutes_per_turn,
        "human_hourly_usd": hourly_usd,
        "cost_ratio_human_over_llm": (round(human / llm_cost, 1) if human is not None and llm_cost > 0 else None),
    }


def dataset_card(run_id: str, s: dict[str, Any], sections: Sequence[str] = ()) -> str:
    offline = "offline" in s["backend"]
    lines = [f"# MTR-Suite benchmark `{run_id}`", ""]
    if offline:
        lines += ["> **Generated with the offline backend** (deterministic extractive/heuristic agents, no LLM).",
                  "> Questions come from rules over parsed sentences (spaCy), not from an LLM, and stay lexically",
                  "> close to their passages: this is not LLM quality; use this release to exercise tooling,",
                  "> not to rank retrievers.", ""]
    lines += ["Multi-turn conversational retrieval benchmark synthesized by MTR-Suite (questioner, answerer, "
              "verifier, corpus-wide uniqueness checker, humanizer; hard topic switches).", "",
              "| statistic | value |", "|---|---|"]
    for k in ("backend", "conversations", "conversations_train", "conversations_test", "turns_ok", "turns_failed",
              "unanswerable_turns", "switch_positions", "answer_chars_mean", "answer_chars_median", "qrels",
              "extra_positives", "llm_tokens", "llm_cost_usd", "human_cost_usd", "cost_ratio_human_over_llm"):
        lines.append(f"| {k} | {s[k]} |")
    if s["human_cost_usd"] is None:
        lines += ["", "Human cost: not estimated (set synth.minutes_per_turn_human, synth.human_hourly_usd and "
                      "synth.human_cost_source; no default is assumed)."]
    else:
        src = (f"source: {s['human_cost_source']}" if s.get("human_cost_source")
               else "assumptions, no source given")
        lines += ["", f"Human cost estimate: {s['turns_ok']} turns x {s['minutes_per_turn_human']} min at "
                      f"${s['human_hourly_usd']}/h ({src})."]
    for sec in sections:
        lines += ["", sec.rstrip()]
    lines += ["", "## Files", "",
              "- `beir/<query_mode>/`: corpus.jsonl, queries.jsonl (with split), qrels/{train,test}.tsv, conversations.jsonl",
              "- `qrels.trec`: TREC qrels (multi-gold; provenance in `mtrag/conversations.jsonl` contexts)",
              "- `mtrag/conversations.jsonl`: one record per turn, MTRAG style",
              "- `hf/{train,test,corpus}.parquet`: `datasets.load_dataset('parquet', data_files=...)`",
              "", "Splits are by conversation (seeded); no conversation is in both."]
    return "\n".join(lines) + "\n"
