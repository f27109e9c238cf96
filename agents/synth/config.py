"""Synthesis settings (reference defaults: 5 shown passages, T=12 turns, switch ratio 0.5)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SynthConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
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
        "pages that name the previous gold's page in their text, found by the corpus search: a conversation "
        "moves on to a related article without leaving its subject, as people's do; 0 = none"))
    switch_ratio: float = Field(0.5, ge=0, le=1, description="share of conversations with a hard topic switch")
    unanswerable_ratio: float = Field(0.0, ge=0, le=1, description="share of turns asked to be unanswerable")
    max_attempts: int = Field(3, ge=1, description="questioner attempts per turn before the turn is recorded as failed")
    empty_attempts_extra: int = Field(3, ge=0, description=(
        "attempts beyond max_attempts for a turn whose shown passages had nothing to ask (no candidate written, so "
        "nothing was rejected); each shows other passages of the pool"))
    min_answer_chars: int = Field(0, ge=0, description="verbosity floor for answers")
    uniqueness_k: int = Field(10, ge=1, description="top-k of the whole corpus checked for other answering passages")
    uniqueness_retriever: Literal["bm25", "dense", "hybrid"] = "hybrid"
    uniqueness_policy: Literal["add_positives", "regenerate"] = "add_positives"
    max_extra_positives: int = Field(2, ge=0, description="M: more passages answering than this => regenerate")
    uniqueness_partial_failure: Literal["flag", "retry", "fail"] = Field(
        "flag", description="some (not all) uniqueness judgements of a turn failed, so its qrels may miss positives: "
                            "flag = keep the turn, flagged (turns.flags, counts, a failures row per failed judgement); "
                            "retry = send the turn back to the questioner (a new attempt); fail = record the turn failed")
    humanize_first_turn: bool = False
    offline_pronoun_share: float = Field(0.5, ge=0, le=1, description="offline backend: share of follow-ups on the "
                                         "segment's focus asked with a pronoun or possessive")
    offline_short_share: float = Field(0.35, ge=0, le=1, description="offline backend: share asked with a shorter "
                                       "description of the focus (the wall, Cummings)")
    offline_ellipsis_share: float = Field(0.1, ge=0, le=1, description="offline backend: share asked elliptically "
                                          "(What about X? / And its N?)")
    offline_request_share: float = Field(0.35, ge=0, le=1, description="offline backend: share of follow-ups about "
                                         "something new inside the conversation's context that may be asked as an "
                                         "elliptical request (What about the halftime show? / And the halftime show?)")
    offline_yesno_share: float = Field(0.7, ge=0, le=1, description="offline backend: share of follow-ups that "
                                       "may ask a yes/no question (Does it replicate data across zones?); the ranking "
                                       "picks one where it needs the conversation to be found or where nothing better "
                                       "leans on it (questioning.YESNO_ALONE_COST)")
    offline_rare_word_weight: float = Field(0.25, ge=0, description="offline backend: ranking points a question "
                                            "loses per idf unit above 4 of each word that is rare in the corpus and "
                                            "new to the conversation, an opening question's subject name aside (people "
                                            "ask in the words they have)")
    offline_history_need_weight: float = Field(3.0, ge=0, description=(
        "offline backend: ranking points a follow-up that leans on the conversation gains for how much the corpus "
        "search (``offline_history_need_retriever``) needs the conversation to find its passage: the gain in "
        "1/log2(1 + rank) of the gold passage from the question as asked to its standalone form, top 10; a follow-up "
        "whose own words find its passage tests nothing conversational. 0 = off"))
    offline_history_need_retriever: Literal["bm25", "dense", "hybrid"] = Field("bm25", description=(
        "offline backend: the whole-corpus search that measures the history need. bm25 (default): whether the words "
        "asked find the passage; a dense or hybrid search also rewards a follow-up whose own rare words give its "
        "passage away, as long as their meaning alone does not"))
    concurrency: int = Field(8, ge=1, description="conversations in flight per batch")
    batch_size: int = Field(16, ge=1, description="conversations per Prefect task")
    test_share: float = Field(0.2, ge=0, le=1, description="share of conversations in the test split")
    seed: int = 0
    minutes_per_turn_human: float | None = Field(None, gt=0, description="human writing minutes per turn, for the "
                                                 "dataset card's cost comparison (unset: no estimate)")
    human_hourly_usd: float | None = Field(None, gt=0, description="human hourly rate in USD (unset: no estimate)")
    human_cost_source: str | None = Field(None, description="where the two figures come from (stated on the card; "
                                          "without it they are marked as assumptions)")
