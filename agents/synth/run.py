"""Synthesis as plain functions: plan conversations (:mod:`agents.synth.plan`), synthesize batches through the
graph, assemble tables.

The Prefect flow (``flows/synthesis.py``) only orchestrates these. Resume: graph state is
checkpointed per node in ``<run>/cache/synth_checkpoints.sqlite`` (LangGraph
AsyncSqliteSaver) and every LLM call is content-addressed in the LLM cache, so re-running a
killed run continues each conversation at the node it was on and repeats no LLM call;
finished conversations are read back from their final checkpoints.

A checkpoint thread is keyed on everything that shapes its conversation
(:func:`thread_id`): the conversation's plan, the synthesis settings, the prompt versions,
each agent's resolved backend / model / sampling and a hash of the corpus. A rerun with the
same settings resumes; a rerun with other settings (``--turns 8`` after 6, another model, an
edited prompt, a changed corpus) starts fresh threads and never mixes old turns into the
new plan's conversations.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import numpy as np
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.errors import BudgetExceeded
from agents.session import LLMSession
from agents.synth import answerer, humanizer, questioner, uniqueness, verifier
from agents.synth.checkpoint import GroupCommitSqliteSaver
from agents.synth.config import SynthConfig
from agents.synth.dedup import duplicate_turns
from agents.synth.graph import GRAPH_VERSION, GraphContext, build_graph
from agents.synth.plan import ConvPlan, plan_conversations, unit  # noqa: F401 (plan_conversations: its callers import it here)
from agents.synth.turn import once_per_corpus, page_index, word_idf
from common.aio import run as aio_run
from embedding.encoder import model_id
from embedding.vectors import read_embeddings, vectors_of
from retrieval.corpus_index import persisted_retriever
from storage.records import content_hash
from agents.synth.gate import gate_rejection_rows
from storage.schemas import CONVERSATIONS, FAILURES, GATE_REJECTIONS, QRELS, TURNS, table_from_rows
from storage.store import RunStore


def load_plan_inputs(store: RunStore) -> tuple[list[dict], dict[int, np.ndarray], dict[str, dict]]:
    clusters = store.read_table("clusters").to_pylist()
    ids, vecs = read_embeddings(store)
    index = {cid: i for i, cid in enumerate(ids)}
    members: dict[int, list[int]] = {}
    for r in clusters:
        members.setdefault(int(r["cluster_id"]), []).append(index[r["chunk_id"]])
    cvecs = {}
    for c, m in members.items():
        v = vecs[m].mean(axis=0)
        cvecs[c] = v / (np.linalg.norm(v) or 1.0)
    return clusters, cvecs, load_corpus(store)


_CORPORA: dict[tuple, dict[str, dict]] = {}


def load_corpus(store: RunStore) -> dict[str, dict]:
    """``chunk_id -> {chunk_id, doc_id, title, text}`` of the run's chunks, read once per process
    while the chunks table's files are unchanged (the synthesis batches of a run share it; the
    process keeps the latest run's corpus only). Callers must not modify it."""
    ident = (store.path, tuple((i.path, i.size, i.mtime_ns) for i in store.fs.get_file_info(store.table_files("chunks"))))
    corpus = _CORPORA.get(ident)
    if corpus is None:
        rows = store.read_table("chunks", columns=["chunk_id", "doc_id", "title", "text"]).to_pylist()
        corpus = {r["chunk_id"]: r for r in rows}
        _CORPORA.clear()                      # one corpus in memory: the run being synthesized
        _CORPORA[ident] = corpus
    return corpus


def corpus_hash(corpus: dict[str, dict]) -> str:
    """sha256 over every chunk id and text (the corpus part of :func:`synthesis_key` and of the
    uniqueness index's key)."""
    h = hashlib.sha256()
    for cid in sorted(corpus):
        h.update(f"{cid}\x00{corpus[cid].get('text', '')}\x00".encode())
    return h.hexdigest()


def run_vectors(store: RunStore, ids: list[str], corpus: dict[str, dict], model: str | None = None) -> np.ndarray | None:
    """The run's chunk embeddings in ``ids`` order when they are ``model``'s vectors of exactly
    these texts (model id and content hash of every chunk match), else None (then the dense
    index encodes through the embedding cache, as before)."""
    if not store.has_table("embeddings"):
        return None
    t = store.read_table("embeddings", columns=["chunk_id", "content_hash", "model_id", "vector"])
    if len(t) == 0 or set(t.column("model_id").unique().to_pylist()) != {model_id(model)}:
        return None
    row = {cid: i for i, cid in enumerate(t.column("chunk_id").to_pylist())}
    hashes = t.column("content_hash").to_pylist()
    try:
        order = np.fromiter((row[c] for c in ids), dtype=np.int64, count=len(ids))
    except KeyError:
        return None
    if any(hashes[i] != content_hash(corpus[c]["text"]) for i, c in zip(order.tolist(), ids)):
        return None
    return np.ascontiguousarray(vectors_of(t.column("vector"))[order], dtype=np.float32)


def uniqueness_retriever(store: RunStore, corpus: dict[str, dict], kind: str, cache_dir: str | None,
                         corpus_sha: str | None = None):
    """The uniqueness check's whole-corpus retriever: built once per run and corpus, persisted
    under ``<run>/cache/uniqueness`` and opened memory-mapped by every batch
    (:mod:`retrieval.corpus_index`); the dense part indexes the run's own chunk embeddings when
    they are the dense model's."""
    ids = list(corpus)
    texts = [corpus[c]["text"] for c in ids]
    return persisted_retriever(kind, store.local_dir("cache", "uniqueness"), corpus_sha or corpus_hash(corpus),
                               ids, texts, vectors=lambda: run_vectors(store, ids, corpus), cache_dir=cache_dir)


def corpus_searcher(store: RunStore, corpus: dict[str, dict], kind: str, cache_dir: str | None,
                    corpus_sha: str | None = None) -> Callable[[str, int], list[str]]:
    """``search(query, k) -> top-k chunk ids`` of the uniqueness check (see :func:`uniqueness_retriever`)."""
    retriever = uniqueness_retriever(store, corpus, kind, cache_dir, corpus_sha)
    lock = threading.Lock()     # one search at a time: the uniqueness check's worker thread and the offline
                                # questioner (event loop) share the retriever

    def search(query: str, k: int) -> list[str]:
        with lock:
            run = retriever.search({"q": query}, k=k).get("q", {})
        return [d for d, _ in sorted(run.items(), key=lambda p: (-p[1], p[0]))][:k]
    return search


# settings that do not shape a conversation: scheduling, the split, the dataset card, and the
# number of conversations (each conversation's own plan is part of its key)
_NOT_SHAPING = frozenset({"conversations", "concurrency", "batch_size", "test_share", "minutes_per_turn_human",
                          "human_hourly_usd", "human_cost_source", "min_turns_kept", "max_replaced_share"})


@once_per_corpus
def _corpus_sha(corpus: dict[str, dict]) -> str:
    """:func:`corpus_hash`, once per corpus object (every batch of a process opens the need search)."""
    return corpus_hash(corpus)


def need_searcher(store: RunStore, corpus: dict[str, dict], llm_cfg, cfg: SynthConfig,
                  search: Callable[[str, int], list[str]]) -> Callable[[str, int], list[str]] | None:
    """The offline questioner's history-need search (``synth.offline.history_need_retriever``, bm25 by default):
    the uniqueness check's ``search`` when it is of the same kind, else its own whole-corpus retriever (the bm25
    part of a hybrid uniqueness index is the same persisted component); None when the need is off or the questioner
    is no offline one."""
    if cfg.offline.history_need_weight <= 0 or not _offline_questioner(llm_cfg):
        return None
    if cfg.offline.history_need_retriever == cfg.uniqueness_retriever:
        return search
    return corpus_searcher(store, corpus, cfg.offline.history_need_retriever, None, _corpus_sha(corpus))


def synthesis_key(corpus: dict[str, dict], llm_cfg, cfg: SynthConfig, corpus_sha: str | None = None) -> str:
    """A hash of what shapes every conversation besides its plan: the synthesis settings, each
    agent's prompt version and resolved backend / model / sampling, the corpus texts
    (the uniqueness check searches the whole corpus) and the graph's node layout."""
    agents: dict[str, Any] = {}
    modules = (questioner, answerer, verifier, uniqueness, humanizer)
    for step in (m.STEP for m in modules):
        try:
            resolved = llm_cfg.resolve(step.role or step.name, kind=step.kind, step_sampling=step.sampling)
            agents[step.name] = [step.prompt_version, resolved.model_dump(mode="json")]
            if resolved.backend == "offline":  # no prompt version covers offline rules: key on their code
                agents[step.name].append(offline_code_hash())
        except Exception as exc:  # noqa: BLE001 - an unresolvable role fails later, with its own message
            agents[step.name] = [step.prompt_version, f"unresolved: {type(exc).__name__}"]
    shaping = {k: v for k, v in cfg.model_dump(mode="json").items() if k not in _NOT_SHAPING}
    blob = json.dumps({"synth": shaping, "agents": agents, "corpus": corpus_sha or corpus_hash(corpus),
                       "graph": GRAPH_VERSION, "gate": gate_code_hash()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _source_hash(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\x00" + f.read_bytes())
    return h.hexdigest()[:16]


def offline_code_hash() -> str:
    """A hash of the offline backend's source (agents/synth/offline/: its rules and its lexicon, and the agent
    modules that hold the offline implementations): a change of the offline rules starts fresh checkpoints."""
    root = Path(__file__).parent
    return _source_hash(sorted(root.glob("offline/*.py")) + sorted(root.glob("offline/*.toml"))
                        + [root / f"{n}.py" for n in ("questioner", "answerer", "verifier", "uniqueness", "humanizer")])


def gate_code_hash() -> str:
    """A hash of the quality gate's source (``gate.py``, ``gate_text.py``): a change of its checks starts fresh
    checkpoints (its thresholds are in the settings)."""
    return _source_hash([Path(__file__).parent / f for f in ("gate.py", "gate_text.py")])


def checkpoint_db(store: RunStore) -> Path:
    """The run's checkpoint database: on this machine's disk (an object-store run syncs it with the store at
    batch boundaries, :mod:`storage.sqlite_sync`)."""
    return store.local_dir("cache") / "synth_checkpoints.sqlite"


def thread_id(plan: ConvPlan, key: str) -> str:
    """The checkpoint thread of a conversation: its id, a hash of its plan and the run's
    :func:`synthesis_key` (see module docstring)."""
    ph = hashlib.sha256(json.dumps(asdict(plan), sort_keys=True, default=list).encode()).hexdigest()[:12]
    return f"{plan.conv_id}@{ph}-{key}"


async def _synthesize_batch_async(store: RunStore, plans: list[ConvPlan], corpus: dict[str, dict], llm_cfg, cfg: SynthConfig,
                           search, progress: Callable[[int], None] | None = None,
                           key: str | None = None, seed_budget: bool = True) -> dict[str, Any]:
    db = checkpoint_db(store)
    key = key or synthesis_key(corpus, llm_cfg, cfg)
    stopped: str | None = None
    async with GroupCommitSqliteSaver.from_conn_string(str(db)) as saver, LLMSession(llm_cfg, store=store, seed_budget=seed_budget) as llm:
        pages = page_index(corpus) if cfg.focus_page and cfg.focus_passages > 1 else {}
        idf = word_idf(corpus) if _offline_questioner(llm_cfg) else {}     # concept salience and the rare-word cost
        need = need_searcher(store, corpus, llm_cfg, cfg, search)
        graph = build_graph(GraphContext(corpus=corpus, llm=llm, search=search, cfg=cfg, pages=pages, idf=idf,
                                         need_search=need),
                            checkpointer=saver)
        sem = asyncio.Semaphore(cfg.concurrency)
        stop = asyncio.Event()
        # every conversation's checkpoint before any runs (a later read would queue behind the writes)
        snaps = {p.conv_id: await graph.aget_state({"configurable": {"thread_id": thread_id(p, key)}}) for p in plans}

        async def one(plan: ConvPlan) -> None:
            nonlocal stopped
            conf = {"configurable": {"thread_id": thread_id(plan, key)}, "recursion_limit": 100000}
            async with sem:
                if stop.is_set():
                    return
                snap = snaps[plan.conv_id]
                try:
                    if snap.values and snap.values.get("done"):
                        pass
                    elif snap.values and snap.next:
                        await graph.ainvoke(None, conf)
                    else:
                        await graph.ainvoke(plan.initial_state(), conf)
                except BudgetExceeded as exc:
                    stopped = exc.reason
                    stop.set()
                    return
                if progress:
                    progress(1)

        await asyncio.gather(*(one(p) for p in plans))
        states = {}
        for p in plans:
            snap = await graph.aget_state({"configurable": {"thread_id": thread_id(p, key)}})
            if snap.values:
                states[p.conv_id] = snap.values
        totals = llm.totals_by_role()
    return {"states": states, "stopped": stopped, "llm_totals": totals}


def _offline_questioner(llm_cfg) -> bool:
    """The questioner role runs on the offline backend (the one user of the corpus idf)."""
    step = questioner.STEP
    try:
        return llm_cfg.resolve(step.role or step.name, kind=step.kind, step_sampling=step.sampling).backend == "offline"
    except Exception:  # noqa: BLE001 - an unresolvable role fails in the session, with its own message
        return False


def offline_language_note(corpus: dict[str, dict], llm_cfg) -> str | None:
    """A warning when the questioner runs offline on a corpus that is mostly not English: the offline rules read
    English only, so its passages in other languages offer no question (the run would end with few turns and no
    word of why). None otherwise."""
    if not corpus or not _offline_questioner(llm_cfg):
        return None
    from agents.synth.gate_text import corpus_language
    lang, _ = corpus_language([corpus[k]["text"] for k in sorted(corpus)])
    if lang == "en":
        return None
    return (f"the offline backend reads English only and this corpus is mostly {lang!r}: its passages in other "
            f"languages offer no question; give an LLM endpoint (--llm-config) to synthesize on it")


def synthesize_batch(store: RunStore, plans: list[ConvPlan], corpus: dict[str, dict], llm_cfg, cfg: SynthConfig,
                     search, progress: Callable[[int], None] | None = None, key: str | None = None,
                     seed_budget: bool = True) -> dict[str, Any]:
    """Run ``plans`` through the conversation graph (resuming checkpointed ones); returns the
    conversations' states, the budget stop reason (or None) and the LLM totals per role.
    ``key``: the run's :func:`synthesis_key` when the caller computed it once for all batches.
    ``seed_budget`` False: ``llm_cfg.budget`` is this batch's own allowance (parallel batches,
    :func:`agents.budget.batch_allowance`), not the run's caps."""
    return aio_run(_synthesize_batch_async(store, plans, corpus, llm_cfg, cfg, search, progress, key, seed_budget))


def read_states(store: RunStore, plans: list[ConvPlan], key: str) -> dict[str, dict]:
    """Final (or latest) checkpointed state of each planned conversation under the run's
    :func:`synthesis_key` ``key`` (checkpoints of other settings are not read)."""
    db = checkpoint_db(store)

    async def main() -> dict[str, dict]:
        out: dict[str, dict] = {}
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            graph = build_graph(GraphContext(corpus={}, llm=None, search=lambda q, k: [], cfg=SynthConfig()),
                                checkpointer=saver)
            for p in plans:
                snap = await graph.aget_state({"configurable": {"thread_id": thread_id(p, key)}})
                if snap.values:
                    out[p.conv_id] = snap.values
        return out
    return aio_run(main())


def split_of(seed: int, conv_id: str, test_share: float) -> str:
    return "test" if unit(seed, "split", conv_id) < test_share else "train"


def assemble(store: RunStore, plans: list[ConvPlan], states: dict[str, dict], cfg: SynthConfig,
             completion: dict | None = None) -> dict[str, Any]:
    """Write conversations, turns, qrels and failures from the conversations' states (joined on ids).
    A turn that repeats an earlier item of the run gets the status ``duplicate`` (:mod:`agents.synth.dedup`).
    ``completion``: the replaced and still-short conversations of :func:`agents.synth.replace.complete_conversations`
    (counted in the summary)."""
    conv_rows, turn_rows, qrel_rows, fail_rows, gate_rows = [], [], [], [], []
    dups = duplicate_turns(states[p.conv_id].get("turns", []) for p in plans if states.get(p.conv_id))
    for p in plans:
        st = states.get(p.conv_id)
        if not st:
            continue
        turns = [dict(t, status="duplicate", failure_reason=f"the same question with the same gold as "
                      f"{dups[t['sample_id']]}") if t.get("sample_id") in dups else t for t in st.get("turns", [])]
        backend = next((t["backend"] for t in turns if t.get("backend")), None)
        conv_rows.append({"conv_id": p.conv_id, "cluster_id": p.cluster_id, "topic_id": p.topic_id,
                          "switch_turn": p.switch_turn, "switch_cluster_id": p.switch_cluster_id,
                          "switch_topic_id": p.switch_topic_id, "n_turns": len(turns),
                          "n_ok": sum(t["status"] == "ok" for t in turns),
                          "n_failed": sum(t["status"] == "failed" for t in turns),
                          "split": split_of(cfg.seed, p.conv_id, cfg.test_share), "backend": backend, "seed": p.seed})
        for t in turns:
            row = {k: t.get(k) for k in TURNS.names}
            turn_rows.append(row)
            if t["status"] != "ok":
                continue
            for g in t["gold_doc_ids"]:
                qrel_rows.append({"sample_id": t["sample_id"], "doc_id": g, "grade": 1, "provenance": "gold",
                                  "reason": "the questioner's evidence passage, confirmed by the verifier"})
            for e in t.get("extra_positives") or []:
                qrel_rows.append({"sample_id": t["sample_id"], "doc_id": e["doc_id"], "grade": 1,
                                  "provenance": "uniqueness", "reason": e["reason"]})
        fail_rows.extend({k: f.get(k) for k in FAILURES.names} for f in st.get("failures", []))
        gate_rows.extend(gate_rejection_rows(st))
    store.write_table("conversations", table_from_rows(conv_rows, CONVERSATIONS))
    store.write_table("turns", table_from_rows(turn_rows, TURNS))
    store.write_table("qrels", table_from_rows(qrel_rows, QRELS))
    store.write_table("failures", table_from_rows(fail_rows, FAILURES))
    store.write_table("gate_rejections", table_from_rows(gate_rows, GATE_REJECTIONS))
    ok = [t for t in turn_rows if t["status"] == "ok"]
    return {"conversations": len(conv_rows), "turns_ok": len(ok),
            "turns_failed": sum(t["status"] == "failed" for t in turn_rows),
            "qrels": len(qrel_rows), "extra_positives": sum(r["provenance"] == "uniqueness" for r in qrel_rows),
            "switches": sum(r["switch_turn"] is not None for r in conv_rows),
            "unanswerable": sum(t["answerability"] == "UNANSWERABLE" for t in ok),
            "turns_flagged": sum(bool(t.get("flags")) for t in ok),
            "gate_rejections": len(gate_rows), "turns_failed_by_gate": len({r["sample_id"] for r in gate_rows
                                                                            if r["final"]}),
            "duplicates": len(dups), "conversations_replaced": len((completion or {}).get("replaced") or []),
            "conversations_short": len((completion or {}).get("short_kept") or []),
            "backend": ",".join(sorted({r["backend"] for r in conv_rows if r["backend"]})) or "none"}
