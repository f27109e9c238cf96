"""Explicit pyarrow schemas for every artifact table of a run.

Each stage writes exactly one table (``documents``, ``rejected``, ``chunks`` ...). The
schemas are the contract between stages and with DuckDB / external readers; a table is
always validated against its schema before it is written.
"""
from __future__ import annotations

import pyarrow as pa

DOCUMENTS = pa.schema([
    ("doc_id", pa.string()),
    ("title", pa.string()),
    ("text", pa.string()),
    ("source", pa.string()),          # file path (and line / row) the doc came from
    ("content_hash", pa.string()),    # sha256 of the cleaned text
    ("n_chars", pa.int64()),
])

REJECTED = pa.schema([
    ("source", pa.string()),
    ("doc_id", pa.string()),          # null when no id could be derived
    ("stage", pa.string()),           # load | clean | dedup | chunk
    ("reason", pa.string()),          # machine-readable code, e.g. empty, binary, duplicate
    ("detail", pa.string()),          # one human sentence
    ("duplicate_of", pa.string()),    # kept doc/chunk id for dedup rejections
])

CHUNKS = pa.schema([
    ("chunk_id", pa.string()),        # doc_id#n
    ("doc_id", pa.string()),
    ("chunk_index", pa.int32()),
    ("title", pa.string()),
    ("text", pa.string()),
    ("start_char", pa.int64()),       # offsets into documents.text: text == doc[start:end]
    ("end_char", pa.int64()),
    ("content_hash", pa.string()),
])

def embeddings_schema(dim: int | None = None) -> pa.Schema:
    vec = pa.list_(pa.float32(), dim) if dim else pa.list_(pa.float32())
    return pa.schema([("chunk_id", pa.string()), ("content_hash", pa.string()),
                      ("model_id", pa.string()), ("vector", vec)])

CLUSTERS = pa.schema([
    ("cluster_id", pa.int32()),
    ("position", pa.int32()),         # order in the nearest-neighbour chain
    ("chunk_id", pa.string()),
    ("topic_id", pa.int32()),         # topic of the cluster (majority of its chunks)
])

CHUNK_TOPICS = pa.schema([
    ("chunk_id", pa.string()),
    ("topic_id", pa.int32()),         # -1 = HDBSCAN noise
    ("probability", pa.float32()),
])

TOPICS = pa.schema([
    ("topic_id", pa.int32()),
    ("size", pa.int64()),
    ("label", pa.string()),           # top c-TF-IDF keywords, comma separated
    ("keywords", pa.list_(pa.string())),
])

LLM_CALLS = pa.schema([
    ("call_id", pa.string()),
    ("run_id", pa.string()),
    ("role", pa.string()),
    ("endpoint", pa.string()),
    ("model", pa.string()),
    ("backend", pa.string()),
    ("prompt_version", pa.string()),
    ("cache_key", pa.string()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("latency_s", pa.float64()),
    ("cache_hit", pa.bool_()),
    ("retries", pa.int32()),
    ("error_class", pa.string()),
    ("cost_usd", pa.float64()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("step", pa.string()),            # step (task) name; role is the config role it runs as
    ("item_id", pa.string()),         # caller's id of the item the call was made for
    ("purpose", pa.string()),         # primary | repair | offline
    ("outcome", pa.string()),         # ok | invalid_output | refusal | error | ...
])

SCHEMAS: dict[str, pa.Schema] = {
    "documents": DOCUMENTS,
    "rejected": REJECTED,
    "chunks": CHUNKS,
    "clusters": CLUSTERS,
    "chunk_topics": CHUNK_TOPICS,
    "topics": TOPICS,
    "llm_calls": LLM_CALLS,
}


def table_from_rows(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """Build a table from row dicts, refusing unknown or missing columns."""
    names = set(schema.names)
    for i, row in enumerate(rows):
        extra = set(row) - names
        if extra:
            raise ValueError(f"row {i} has columns not in the schema: {sorted(extra)}")
    cols = {n: [r.get(n) for r in rows] for n in schema.names}
    return pa.table(cols, schema=schema)


# -- synthesized benchmark ("ours" format) ---------------------------------------------------
CONVERSATIONS = pa.schema([
    ("conv_id", pa.string()),
    ("cluster_id", pa.int32()),
    ("topic_id", pa.int32()),
    ("switch_turn", pa.int32()),            # first turn of the second topic; null = no switch
    ("switch_cluster_id", pa.int32()),
    ("switch_topic_id", pa.int32()),
    ("n_turns", pa.int32()),                # turns attempted
    ("n_ok", pa.int32()),
    ("n_failed", pa.int32()),
    ("split", pa.string()),                 # train | test
    ("backend", pa.string()),
    ("seed", pa.int64()),
])

TURNS = pa.schema([
    ("sample_id", pa.string()),             # conv_id:turn
    ("conv_id", pa.string()),
    ("turn", pa.int32()),                   # 1-based
    ("status", pa.string()),                # ok | failed | duplicate (an earlier item's question and gold: history only)
    ("question", pa.string()),              # what the user says (humanized when humanized)
    ("question_original", pa.string()),     # the questioner's question before humanizing
    ("standalone_question", pa.string()),   # self-contained form (used for uniqueness / rewrite mode)
    ("answer", pa.string()),
    ("gold_doc_ids", pa.list_(pa.string())),
    ("answerability", pa.string()),         # ANSWERABLE | UNANSWERABLE
    ("is_switch", pa.bool_()),              # first turn after a hard topic switch
    ("turns_since_switch", pa.int32()),     # 0 at the switch turn, null before any switch
    ("cluster_id", pa.int32()),
    ("topic_id", pa.int32()),
    ("backend", pa.string()),               # offline | openai
    ("model", pa.string()),
    ("prompt_versions", pa.string()),       # JSON {step: version}
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("verifier_attempts", pa.int32()),
    ("failure_reason", pa.string()),
    ("uniqueness_judged", pa.int32()),      # other passages judged by the uniqueness check (null: not reached)
    ("uniqueness_failed", pa.int32()),      # of those, judgements that failed (each also a failures row)
    ("flags", pa.string()),                 # uniqueness_incomplete: kept although some judgements failed
])

QRELS = pa.schema([
    ("sample_id", pa.string()),
    ("doc_id", pa.string()),
    ("grade", pa.int32()),
    ("provenance", pa.string()),            # gold | uniqueness
    ("reason", pa.string()),                # judge's reason for extra positives
])

FAILURES = pa.schema([
    ("sample_id", pa.string()),
    ("conv_id", pa.string()),
    ("turn", pa.int32()),
    ("step", pa.string()),
    ("kind", pa.string()),
    ("message", pa.string()),
    ("raw_output", pa.string()),
])

GATE_REJECTIONS = pa.schema([              # one row per quality-gate rejection (agents.synth.gate), retried or final
    ("sample_id", pa.string()),
    ("conv_id", pa.string()),
    ("turn", pa.int32()),
    ("attempt", pa.int32()),
    ("check", pa.string()),                 # the gate check (question_form, answer_grounded ...)
    ("role", pa.string()),                  # the agent whose output failed it: questioner | answerer | humanizer
    ("model", pa.string()),                 # that role's model (offline:<step> for the offline backend)
    ("backend", pa.string()),
    ("reason", pa.string()),
    ("question", pa.string()),
    ("answer", pa.string()),
    ("final", pa.bool_()),                  # the turn failed on this attempt's rejection (its failures row)
])

SCHEMAS.update({"conversations": CONVERSATIONS, "turns": TURNS, "qrels": QRELS, "failures": FAILURES,
                "gate_rejections": GATE_REJECTIONS})
