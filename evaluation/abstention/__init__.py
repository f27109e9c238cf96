"""Content-based abstention evaluation (``mtr abstention``).

Label every (turn, retriever) top-k context by what its passages say, not by whether a
qrels passage made it in, and measure how wrong the "no gold in the top-k" rule is, per
retriever, along a ladder from weak to strong retrievers. The ten steps of the method, one
module each:

====================  =========================================================
step                  module
====================  =========================================================
1 ladder, nDCG@10     :mod:`.ladder` (+ :mod:`.expansions` for LLM expansions)
2 contexts, labels    :mod:`.contexts` (rule), :mod:`.judges` (content),
                      :mod:`.agreement` (kappa)
3 negative control    :mod:`.negative_control`
4 near-dup floor      :mod:`.near_duplicates`
5 rule metrics        :mod:`.rule_metrics`
6 detectors, AUROC    :mod:`.detectors`, :mod:`.auroc`
7 answer check        :mod:`.answer_check`
8 provenance          :mod:`.provenance` (+ :mod:`.sources`)
9 comparison flips    :mod:`.flips`
10 relabel            :mod:`.relabel`
recipe step 1         :mod:`.review` (human-review export)
statistics 2-10       :mod:`.steps` (one typed function per step, no I/O)
outputs               :mod:`.result` (the result type), :mod:`.tables`
                      (Parquet), :mod:`.report` (CSV, plot, Markdown, HTML),
                      :mod:`.schemas`
====================  =========================================================

The verb is :func:`run_abstention` (:mod:`.run`); settings: :class:`AbstentionConfig`.
See ``docs/concepts/abstention.md``.

References:
    "Better Retrievers, Worse Labels: How Incomplete Relevance Judgments Distort Abstention
    Evaluation in Conversational RAG".
"""
from evaluation.abstention.config import AbstentionConfig, AbstentionError
from evaluation.abstention.result import AbstentionResult
from evaluation.abstention.run import load_for_abstention, run_abstention, select_turns

__all__ = ["AbstentionConfig", "AbstentionError", "AbstentionResult", "load_for_abstention", "run_abstention",
           "select_turns"]
