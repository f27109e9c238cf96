"""Retrieval evaluation with trec_eval semantics.

One algorithm per module: :mod:`evaluation.ranking` (trec_eval ordering), :mod:`.recall`,
:mod:`.ndcg`, :mod:`.precision`, :mod:`.reciprocal_rank`; :mod:`.metrics` (``evaluate``);
:mod:`.breakdown` (per turn / topic-switch position); :mod:`.significance` (paired tests);
:mod:`.bootstrap` (CIs); :mod:`.discrimination`; :mod:`.report` (tables, plots, HTML);
:mod:`.score` (score TREC run files).
"""
