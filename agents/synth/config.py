"""Synthesis settings (reference defaults: 5 shown passages, T=12 turns, switch ratio 0.5)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class OfflineConfig(BaseModel):
    """The offline backend's discourse shares and ranking weights (``[synth.offline]``). The measured reason for
    each default is tabled in ``docs/experiments/offline-realism.md``."""
    model_config = ConfigDict(extra="forbid")
    pronoun_share: float = Field(0.3, ge=0, le=1, description="share of follow-ups on the conversation's concept "
                                 "asked with a pronoun (How much does it cost?)")
    ellipsis_share: float = Field(0.3, ge=0, le=1, description="share asked elliptically, leaving the concept to "
                                  "the conversation (What about the risks?)")
    short_share: float = Field(0.25, ge=0, le=1, description="share asked by a shorter name (the fee for the annual "
                               "fee)")
    shift_share: float = Field(0.8, ge=0, le=1, description="share of follow-ups that keep the previous intent for a "
                               "new concept asked as a shift (What about the late fee?)")
    intent_weight: float = Field(1.0, ge=0, description="ranking points per unit of the intent's prior (lexicon)")
    salience_weight: float = Field(1.0, ge=0, description="ranking points for the concept's salience in its passage "
                                   "(1 for the passage's most salient concept)")
    unused_passage_weight: float = Field(1.0, ge=0, description="ranking points for a passage not used as gold "
                                         "before")
    same_passage_weight: float = Field(0.0, ge=0, description="ranking points for a follow-up on the previous "
                                       "turn's passage (people's next question is mostly answered by another one)")
    lead_weight: float = Field(2.0, ge=0, description="ranking points for a concept the passage names in its lead "
                               "(its title or first ``LEAD_WORDS`` words): what a long page is about, not a detail "
                               "deep in it")
    thread_weight: float = Field(2.5, ge=0, description="ranking points for a follow-up on the conversation's "
                                 "concept")
    leans_weight: float = Field(1.5, ge=0, description="ranking points for a follow-up asked in a form that needs "
                                "the conversation (pronoun, ellipsis, shorter name, shift)")
    rare_word_weight: float = Field(0.25, ge=0, description="ranking points a question loses per idf unit above 4 of "
                                    "each word rare in the corpus that the conversation has not said")
    history_need_weight: float = Field(3.0, ge=0, description=(
        "ranking points a leaning follow-up gains for how much the corpus search (``history_need_retriever``) needs "
        "the conversation to find its passage: the gain in 1/log2(1 + rank) of the gold passage from the question as "
        "asked to its standalone form, top 10. 0 = off"))
    history_need_retriever: Literal["bm25", "dense", "hybrid"] = Field("bm25", description=(
        "the whole-corpus search that measures the history need"))


GATE_CHECKS = ("question_form", "question_language", "consistency", "answer_present", "answer_not_passage",
               "answer_grounded", "answer_fit", "no_giveaway", "qrels", "not_copy")
"""The quality gate's checks (:mod:`agents.synth.gate`), in the order they run."""

# the thresholds of each gate mode, key: (default, strict); a value set in [synth.gate] overrides its mode's
_GATE_THRESHOLDS: dict[str, tuple[float | int | bool, float | int | bool]] = {
    "min_question_words": (2, 3), "max_question_words": (40, 25), "require_question_mark": (False, True),
    "language_min_words": (3, 2), "language_margin": (3.0, 2.0), "min_script_share": (0.5, 0.8),
    "max_added_words": (3, 2), "min_kept_share": (0.5, 0.6),
    "whole_passage_min_sentences": (4, 3), "max_passage_share": (0.8, 0.7),
    "min_support": (0.6, 0.75), "min_fit": (0.25, 0.3),
    "max_giveaway_share": (0.85, 0.8), "max_copy_overlap": (0.8, 0.6),
}
GATE_PRESETS: dict[str, dict[str, float | int | bool]] = {
    mode: {k: v[i] for k, v in _GATE_THRESHOLDS.items()} for i, mode in enumerate(("default", "strict"))}


class GateConfig(BaseModel):
    """The quality gate after the verifier, whatever the backend (``[synth.gate]``, :mod:`agents.synth.gate`): named
    checks of the question, its standalone form, the answer and the qrels; a candidate that fails one goes back to
    the questioner with the check's reason, like a verifier rejection. ``mode`` picks the thresholds (``default``,
    ``strict``; ``off`` runs no check); each threshold set here overrides the mode's (``GATE_PRESETS``). The
    measured reason for each default is in ``docs/concepts/gate.md``."""
    model_config = ConfigDict(extra="forbid")
    mode: Literal["default", "strict", "off"] = Field("default", description="the thresholds' preset; off = no gate")
    skip: list[Literal[GATE_CHECKS]] = Field(  # type: ignore[valid-type]
        default_factory=list, description="checks not run")
    min_question_words: int | None = Field(None, ge=1, description="fewest words of a question")
    max_question_words: int | None = Field(None, ge=1, description="most words of a question")
    require_question_mark: bool | None = Field(None, description="a question must end with '?' (else a question's "
                                               "first word also counts: what, is, can, tell me ...)")
    language_min_words: int | None = Field(None, ge=1, description="shortest question whose language is tested "
                                           "(shorter ones: the script only)")
    language_margin: float | None = Field(None, gt=0, description=(
        "nats per word by which py3langid may prefer another language to the gold passage's (or the corpus's)"))
    min_script_share: float | None = Field(None, ge=0, le=1, description="least share of a question's letters in "
                                           "the passage's script")
    max_added_words: int | None = Field(None, ge=0, description=(
        "content words the standalone form may add that are neither in the question as asked nor in the history"))
    min_kept_share: float | None = Field(None, ge=0, le=1, description=(
        "least share of the asked question's content words (2 or more) that its standalone form keeps"))
    whole_passage_min_sentences: int | None = Field(None, ge=1, description=(
        "a passage this long or longer (sentences) may not be answered by the whole of it"))
    max_passage_share: float | None = Field(None, gt=0, le=1, description=(
        "share of a passage's sentences an answer may repeat"))
    min_support: float | None = Field(None, ge=0, le=1, description=(
        "least share of the answer's content words and numbers found in its gold passage(s)"))
    min_fit: float | None = Field(None, ge=-1, le=1, description=(
        "least MiniLM cosine of the standalone question and the answer's first sentences"))
    max_giveaway_share: float | None = Field(None, gt=0, le=1, description=(
        "share of the answer's first sentence's content words above which the question contains its answer"))
    max_copy_overlap: float | None = Field(None, gt=0, le=1, description=(
        "word Jaccard of the question and a sentence of its passage above which the question is a copy"))

    def resolved(self) -> dict[str, float | int | bool]:
        """The thresholds in force: the mode's preset, overridden by the values set here (empty for ``off``)."""
        if self.mode == "off":
            return {}
        own = {k: v for k, v in self.model_dump().items() if k not in ("mode", "skip") and v is not None}
        return {**GATE_PRESETS[self.mode], **own}


_LEGACY_OFFLINE = {"offline_pronoun_share": "pronoun_share", "offline_short_share": "short_share",
                   "offline_ellipsis_share": "ellipsis_share", "offline_rare_word_weight": "rare_word_weight",
                   "offline_history_need_weight": "history_need_weight",
                   "offline_history_need_retriever": "history_need_retriever"}
_REMOVED_OFFLINE = ("offline_request_share", "offline_yesno_share")


class SynthConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _legacy_offline_keys(cls, data):
        """``synth.offline_<key>`` (before 0.2) is ``synth.offline.<key>``; a removed key gets a clear error."""
        if not isinstance(data, dict) or not any(k.startswith("offline_") for k in data):
            return data
        data = dict(data)
        section = dict(data.get("offline") or {})
        for old, new in _LEGACY_OFFLINE.items():
            if old in data:
                section.setdefault(new, data.pop(old))
        for old in _REMOVED_OFFLINE:
            if old in data:
                raise ValueError(f"synth.{old} was removed with the sentence-based offline generator; the offline "
                                 "discourse shares are in [synth.offline]")
        data["offline"] = section
        return data

    conversations: int | None = Field(None, ge=1, description="conversations to generate (default: one per cluster)")
    turns: int = Field(12, ge=1, description="T: user turns per conversation")
    shown_passages: int = Field(5, ge=1, description="passages the questioner sees per turn")
    focus_passages: int = Field(2, ge=0, description=(
        "of the shown passages on a follow-up turn, how many are the previous turn's gold passage and the pool "
        "passages closest to it (same title, then shared words), so that a conversation can stay on its subject "
        "as people's do; the rest are a seeded random sample of the pool. 0 = a uniform sample every turn "
        "(the reference pipeline); first and switch turns are always uniform"))
    focus_page: bool = Field(True, description=(
        "a follow-up's focus passages may come from the previous gold's page (same title, or the chunks of one "
        "document) outside the cluster too, so a conversation can stay on an article the cluster holds one passage "
        "of: people ask several questions of one article; False = the cluster pool only"))
    focus_related: int = Field(1, ge=0, description=(
        "of the shown passages on a follow-up turn, how many (after the focus passages) are passages of other "
        "pages that name the previous gold's page in their text (its title's name; for an untitled passage its "
        "most salient concept), found by the corpus search: a conversation moves on to a related article without "
        "leaving its subject, as people's do; 0 = none"))
    thread_passages: int = Field(2, ge=0, description=(
        "of the shown passages on a look after a follow-up found nothing that leans on the conversation (the "
        "offline questioner's NoThread), how many (after the focus and related passages) the corpus search finds "
        "for the segment's last question: the passages that say more of what was just asked; 0 = none"))
    switch_ratio: float = Field(0.5, ge=0, le=1, description="share of conversations with a hard topic switch")
    unanswerable_ratio: float = Field(0.06, ge=0, le=1, description=(
        "share of turns asked to be unanswerable (people's conversational benchmarks hold about 6%)"))
    max_attempts: int = Field(3, ge=1, description="questioner attempts per turn before the turn is recorded as failed")
    min_turns_kept: float = Field(0.75, ge=0, le=1, description=(
        "a finished conversation that keeps fewer than this share of its turns is replaced by a spare one (a "
        "cluster that was not picked), round after round; 0 = never replace (agents.synth.replace)"))
    max_replaced_share: float = Field(0.25, ge=0, le=1, description=(
        "most conversations replaced, as a share of the planned ones (bounds the extra LLM calls when an "
        "endpoint fails every turn); a short conversation left when none may be replaced is kept and counted"))
    empty_attempts_extra: int = Field(3, ge=0, description=(
        "attempts beyond max_attempts for a turn whose shown passages had nothing to ask (no candidate written, so "
        "nothing was rejected); each shows other passages of the pool"))
    min_answer_chars: int = Field(0, ge=0, description="verbosity floor for answers")
    uniqueness_k: int = Field(10, ge=1, description="top-k of the whole corpus checked for other answering passages")
    uniqueness_retriever: Literal["bm25", "dense", "hybrid"] = "hybrid"
    uniqueness_policy: Literal["add_positives", "regenerate"] = "add_positives"
    max_extra_positives: int = Field(8, ge=0, description=(
        "M: more passages answering than this => regenerate. 8: versioned documentation repeats its passages (19% of "
        "the MTRAG Cloud passages share a 400-character window with another, in groups of up to 9), and a passage "
        "that repeats the gold one is a positive, not a sign of an ambiguous question"))
    uniqueness_partial_failure: Literal["flag", "retry", "fail"] = Field(
        "flag", description="some (not all) uniqueness judgements of a turn failed, so its qrels may miss positives: "
                            "flag = keep the turn, flagged (turns.flags, counts, a failures row per failed judgement); "
                            "retry = send the turn back to the questioner (a new attempt); fail = record the turn failed")
    humanize_first_turn: bool = False
    offline: OfflineConfig = Field(default_factory=lambda: OfflineConfig(), description=(
        "the offline backend's discourse shares and ranking weights (``[synth.offline]``)"))
    gate: GateConfig = Field(default_factory=lambda: GateConfig(), description=(
        "the quality gate after the verifier, for every backend (``[synth.gate]``)"))
    concurrency: int = Field(8, ge=1, description="conversations in flight per batch")
    batch_size: int = Field(16, ge=1, description="conversations per Prefect task")
    test_share: float = Field(0.2, ge=0, le=1, description="share of conversations in the test split")
    seed: int = 0
    minutes_per_turn_human: float | None = Field(None, gt=0, description="human writing minutes per turn, for the "
                                                 "dataset card's cost comparison (unset: no estimate)")
    human_hourly_usd: float | None = Field(None, gt=0, description="human hourly rate in USD (unset: no estimate)")
    human_cost_source: str | None = Field(None, description="where the two figures come from (stated on the card; "
                                          "without it they are marked as assumptions)")
