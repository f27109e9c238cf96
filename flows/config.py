"""The one typed configuration of a run (TOML or YAML; unknown keys are rejected).

Each package owns the model of its own stage; this module composes them. The resolved
config is saved in every run's manifest (its public form, :func:`agents.secrets.public`) and
sent to Prefect as flow parameters, so it never holds a secret: a value that looks like a key or
a URL with credentials is refused when the config is read (:func:`agents.secrets.refuse_key_like`);
keys live in the LLM config's environment variables.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents.secrets import refuse_key_like
from agents.synth.config import SynthConfig
from clustering.greedy import ClusterConfig
from clustering.topics import TopicConfig
from corpus.chunk import ChunkConfig
from corpus.clean import CleanConfig
from corpus.dedup import DedupConfig
from common.configfile import read_config_file
from common.errors import UserError
from corpus.load import LoadConfig


class EmbedConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(None, description="sentence-transformers model dir; default: bundled MiniLM")
    batch_size: int | None = Field(None, ge=1, description="default by device: 64 on CPU, 256 on CUDA")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: CUDA when torch sees a GPU")
    cache_dir: str | None = Field(None, description="shared embedding cache (a path, or s3://bucket/prefix: "
                                     "mirrored on this machine, new parts pushed after each stage); default "
                                     "<runs_root>/.cache/embeddings")


class ScaleConfig(BaseModel):
    """Where the CPU-heavy spine stages and the synthesis batches run, and the global LLM guard for
    multi-worker runs.

    Execution settings only: they never change an artifact (the Dask and Ray runners write the same
    tables and conversations as the default one), so no stage cache key or synthesis key depends on them.
    """
    model_config = ConfigDict(extra="forbid")
    runner: Literal["default", "dask", "ray"] = Field("default", description="default: one process; dask: "
                                                      "prefect-dask DaskTaskRunner; ray: prefect-ray RayTaskRunner "
                                                      "(embedding batches and synthesis batches in parallel)")
    dask_address: str | None = Field(None, description="scheduler of a running Dask cluster (tcp://host:8786); "
                                                       "default: a temporary LocalCluster")
    dask_workers: int = Field(2, ge=1, description="LocalCluster worker processes; synthesis batches in flight on "
                                                   "the Dask runner")
    dask_threads_per_worker: int = Field(1, ge=1, description="threads per LocalCluster worker")
    ray_address: str | None = Field(None, description="address of a running Ray cluster (ray://host:10001 or "
                                                      "host:6379); default: a local Ray instance for the run")
    ray_workers: int = Field(2, ge=1, description="num_cpus of the local Ray instance; synthesis batches in "
                                                  "flight on the Ray runner")
    embed_batch_chunks: int = Field(512, ge=1, description="chunks per parallel embedding task; a multiple of "
                                                           "8 x embed.batch_size gives bit-identical vectors")
    llm_concurrency_limit: str | None = Field(None, description="Prefect global concurrency limit held (1 slot) by "
                                                                "each synthesis batch; create it first with "
                                                                "`prefect gcl create NAME --limit N`")

    @property
    def workers(self) -> int:
        """Batches in flight on this runner's workers (``ray_workers`` on Ray, else ``dask_workers``)."""
        return self.ray_workers if self.runner == "ray" else self.dask_workers


class SelfAuditConfig(BaseModel):
    """The ``[self_audit]`` section: MTR-Eval on every benchmark ``mtr synthesize`` writes
    (:mod:`evaluation.audit.self_audit`; ``--no-audit`` turns it off). The heuristic judges always run; with an LLM
    config each of its endpoints is an LLM judge too, never on turns its own model wrote."""
    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(True, description="audit the benchmark at the end of every synthesis run")
    judges: list[str] | None = Field(None, description="judge names as `mtr audit --judge` (default: the heuristic "
                                     "judges, plus one LLM judge per endpoint of the LLM config)")
    llm_judges: bool = Field(True, description="with the default judges, add the LLM config's endpoints as judges")
    sample: int | None = Field(None, ge=1, description="audit a seeded sample of this many turns (default: all)")
    reverse_pass: bool = Field(False, description="judge every candidate list a second time, reversed")


class MTRConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    runs_root: str = Field("mtr-runs", description="where run directories are created")
    load: LoadConfig = Field(default_factory=LoadConfig)
    clean: CleanConfig = Field(default_factory=CleanConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    chunk: ChunkConfig = Field(default_factory=ChunkConfig)
    chunk_dedup: bool = Field(True, description="also MinHash-dedup chunks (the reference dedups chunks)")
    embed: EmbedConfig = Field(default_factory=EmbedConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    topics: TopicConfig = Field(default_factory=TopicConfig)
    synth: SynthConfig = Field(default_factory=SynthConfig)
    llm_config: str | None = Field(None, description="LLM layer YAML (endpoints, roles, budget); none = offline backend")
    llm_cache_dir: str | None = Field(None, description="override the LLM call cache directory (regeneration shares "
                                                        "one across benchmark versions)")
    eval: "EvalConfig" = Field(default_factory=lambda: EvalConfig())
    scale: ScaleConfig = Field(default_factory=ScaleConfig)
    self_audit: SelfAuditConfig = Field(default_factory=SelfAuditConfig)

    @model_validator(mode="before")
    @classmethod
    def _no_secrets(cls, data: Any) -> Any:
        # the run config goes to manifests and Prefect: a key (or user:pass@) in it is refused,
        # unechoed (the value is registered for masking first)
        refuse_key_like(data)
        return data

    def stage_hash(self, *sections: str) -> str:
        data = {s: getattr(self, s).model_dump(mode="json") if hasattr(getattr(self, s), "model_dump")
                else getattr(self, s) for s in sections}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _set(d: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = value


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> MTRConfig:
    """Config from a file (optional) plus dotted overrides such as ``{"chunk.max_size": 512}``."""
    data: dict[str, Any] = read_config_file(path) if path else {}
    for key, value in (overrides or {}).items():
        if value is not None:
            _set(data, key, value)
    try:
        return MTRConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        msg = first["msg"]
        if first["type"] == "extra_forbidden":
            msg = "unknown key (check the spelling; see the README's configuration section or docs/reference/configuration.md)"
        elif first["type"] == "value_error":   # a model validator's own sentence, without pydantic's prefix
            msg = msg.removeprefix("Value error, ")
        if not loc and first["type"] == "value_error":     # the whole config's validator names its own field
            raise UserError(f"invalid config: {msg}") from exc
        raise UserError(f"invalid config at {loc or '(top level)'}: {msg}") from exc


class EvalConfig(BaseModel):
    """The ``[eval]`` section: retrieval evaluation of a synthesized benchmark, run by ``mtr demo``
    and by the scheduled regeneration flow (``mtr evaluate --benchmark`` takes flags instead).

    Attributes:
        retrievers: retrievers to evaluate (``bm25``, ``dense``, ``hybrid``, ``rrf``).
        query_modes: conversational query modes (``last_turn``, ``all_user_turns``,
            ``full_history``, ``rewrite``).
        depth: retrieval depth, documents retrieved per query (as ``mtr evaluate --depth``).
    """
    model_config = ConfigDict(extra="forbid")
    retrievers: list[str] = Field(default_factory=lambda: ["bm25", "dense", "hybrid"])
    query_modes: list[str] = Field(default_factory=lambda: ["last_turn", "full_history", "rewrite"])
    depth: int = Field(20, ge=1)


MTRConfig.model_rebuild()
