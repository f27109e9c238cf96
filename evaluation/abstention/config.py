"""Configuration of ``mtr abstention`` (one Pydantic model, unknown keys forbidden).

Every knob of the analysis is declared and documented here and the resolved config is
saved in the run manifest, so a result always states how it was produced.

Examples:
    >>> AbstentionConfig(retrievers=["bm25-turn", "fusion"], judges=["heuristic-support"]).context_k
    5
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from common.configfile import read_config_file
from common.errors import UserError

#: Offline judges (deterministic heuristics that stand in for judge LLMs).
OFFLINE_JUDGES = ("heuristic-support", "heuristic-overlap")
#: Offline answer model (a heuristic that stands in for the answering LLM).
OFFLINE_ANSWERERS = ("heuristic-answerer",)
#: Offline query expansion (RM3 pseudo-relevance feedback instead of LLM expansions).
OFFLINE_EXPANDERS = ("prf",)
#: The default retriever ladder (weakest first).
DEFAULT_LADDER = ("bm25-turn", "bm25-history", "fusion", "hybrid")


class AbstentionConfig(BaseModel):
    """Every setting of the content-based abstention analysis.

    Attributes:
        retrievers: ladder rungs, weakest first (see :mod:`evaluation.abstention.ladder`).
        judges: content judges; the first is primary, the second (another model family) is
            compared with it. ``heuristic-support`` / ``heuristic-overlap`` are offline stand-ins;
            any other name is an LLM role of the LLM config, or a model on its default endpoint.
        answer_models: answer models scored as unanswerability detectors through their
            first-token probability of "ANSWERABLE" (``heuristic-answerer`` offline).
        expander: ``prf`` (offline pseudo-relevance feedback) or an LLM role / model writing
            the fusion rung's query expansions.
        n_expansions: expansions per query for ``fusion`` / ``hybrid`` (the first a
            hypothetical answer passage when an LLM writes them).
        prf_query: query the offline PRF expansions start from (``rewrite`` falls back to
            ``history`` for turns without a rewrite).
        dense_query: query of the dense list (``history`` is left-truncated to the encoder).
        dense_model: sentence-transformers model (None: the bundled MiniLM).
        embedding_cache: embedding cache folder (None: ``<out>/cache/embeddings``).
        context_k: passages in a context (the rule's cut-off: "no qrels passage in top-k").
        eval_k: cut-off of the ladder's nDCG.
        depth: list depth of every component list before fusion.
        include_unanswerable_turns: also analyse turns the benchmark marks unanswerable (no
            qrels); their content label is ``no`` by the benchmark's own judgment (no judge).
        limit: analyse only the first N turns (benchmark order).
        negative_control_ceiling: a judge whose yes-rate on other conversations' contexts
            exceeds this is flagged unfit.
        negative_control_retriever: rung whose contexts are swapped (default: the last).
        near_dup_threshold: character n-gram Jaccard at or above which a retrieved passage is
            a near-verbatim copy of a qrels passage.
        near_dup_ngram: n of the character n-grams.
        neighbour_window: positions apart (in a page's passage order) still "neighbouring".
        partial: how ``partial`` content labels enter AUROCs and comparisons: ``exclude``
            them or count them as ``answerable`` (precision and J report both always).
        abstain_threshold: an answer model abstains when P(answerable) is below this.
        alpha: significance level of the comparisons.
        n_resamples: bootstrap / permutation resamples of the comparisons.
        review_n: rule-unanswerable contexts sampled for human review (100-200 recommended).
        answer_check: run the optional answer check (step 7).
        answer_check_n: contexts per answer-check group at most.
        max_passage_chars: passages are cut to this many characters in prompts.
        seed: seed of every sample and resample.
    """

    model_config = ConfigDict(extra="forbid")

    retrievers: list[str] = Field(default_factory=lambda: list(DEFAULT_LADDER), min_length=1)
    judges: list[str] = Field(default_factory=lambda: list(OFFLINE_JUDGES), min_length=1)
    answer_models: list[str] = Field(default_factory=lambda: list(OFFLINE_ANSWERERS))
    expander: str = "prf"
    n_expansions: int = Field(3, ge=1, le=10)
    prf_query: Literal["rewrite", "history", "last_turn"] = "rewrite"
    dense_query: Literal["rewrite", "history", "last_turn"] = "history"
    dense_model: str | None = None
    embedding_cache: str | None = None
    context_k: int = Field(5, ge=1, le=50)
    eval_k: int = Field(10, ge=1)
    depth: int = Field(100, ge=1)
    include_unanswerable_turns: bool = False
    limit: int | None = Field(None, ge=1)
    negative_control_ceiling: float = Field(0.10, ge=0, le=1)
    negative_control_retriever: str | None = None
    near_dup_threshold: float = Field(0.8, gt=0, le=1)
    near_dup_ngram: int = Field(5, ge=1)
    neighbour_window: int = Field(1, ge=1)
    partial: Literal["exclude", "answerable"] = "exclude"
    abstain_threshold: float = Field(0.5, gt=0, lt=1)
    alpha: float = Field(0.05, gt=0, lt=1)
    n_resamples: int = Field(1000, ge=100)
    review_n: int = Field(150, ge=1)
    answer_check: bool = False
    answer_check_n: int = Field(50, ge=1)
    max_passage_chars: int = Field(2000, ge=100)
    seed: int = 0

    @field_validator("retrievers", "judges", "answer_models")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        v = [x.strip() for x in v]
        if any(not x for x in v):
            raise ValueError("names must not be empty")
        dup = sorted({x for x in v if v.count(x) > 1})
        if dup:
            raise ValueError(f"listed twice: {', '.join(dup)}")
        return v

    @model_validator(mode="after")
    def _check(self) -> "AbstentionConfig":
        if self.eval_k < self.context_k:
            raise ValueError(f"eval_k ({self.eval_k}) must be >= context_k ({self.context_k})")
        if self.negative_control_retriever is not None and self.negative_control_retriever not in self.retrievers:
            raise ValueError(f"negative_control_retriever {self.negative_control_retriever!r} is not among "
                             f"the retrievers ({', '.join(self.retrievers)})")
        return self

    @property
    def primary_judge(self) -> str:
        return self.judges[0]

    @property
    def nc_retriever(self) -> str:
        return self.negative_control_retriever or self.retrievers[-1]

    @classmethod
    def from_file(cls, path: str | Path) -> "AbstentionConfig":
        """Load YAML/JSON/TOML (an ``abstention:`` top-level key is accepted)."""
        return cls.model_validate(read_config_file(path, what="abstention config", section="abstention",
                                                   error=AbstentionError))


def is_offline_judge(name: str) -> bool:
    return name in OFFLINE_JUDGES


def is_offline_answerer(name: str) -> bool:
    return name in OFFLINE_ANSWERERS


def is_offline_expander(name: str) -> bool:
    return name in OFFLINE_EXPANDERS


__all__ = ["AbstentionConfig", "DEFAULT_LADDER", "OFFLINE_ANSWERERS", "OFFLINE_EXPANDERS", "OFFLINE_JUDGES",
           "is_offline_answerer", "is_offline_expander", "is_offline_judge"]


class AbstentionError(UserError, ValueError):
    """An input or setting of the abstention analysis is unusable (shown as one sentence)."""


__all__ += ["AbstentionError"]
