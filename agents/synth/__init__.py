"""The synthesis agents (one module per agent: questioner, answerer, verifier, uniqueness judge,
humanizer), their conversation graph (``graph``, checkpointed by ``checkpoint``) and the batch
runner (``run``); ``offline/`` implements every role without an LLM.

A regular package (not a namespace one) so that the import contracts of ``.importlinter`` see its
modules. Importing it imports nothing.
"""
