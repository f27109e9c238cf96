"""The offline synthesis backend (no LLM, no network): information-seeking conversations from a rule pipeline.

Stages, each a module of small registered rules (:mod:`.lexicon`: ``rule``/``rules``; word lists and question
templates are data in ``lexicon.toml``):

1. :mod:`.concepts` - the salient noun phrases of a passage, weighted against the corpus;
2. :mod:`.intents` - what each sentence offers about a concept (definition, procedure, cost, risk, ...);
3. :mod:`.forms` - the questions a person with that need asks, in common words, full or leaning on the conversation;
4. :mod:`.discourse` - which form a follow-up takes, from the segment's concept and the previous turn;
5. :mod:`.checks` - the answerer, the verifier's checks and the uniqueness judge.

:mod:`.questioning` ranks the candidates; :mod:`.nlp` (spaCy ``en_core_web_sm`` 3.8.0, loaded from its installed
package) and :mod:`.semantic` (the bundled MiniLM) are the shared language machinery.
"""
