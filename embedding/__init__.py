"""Embeddings: the floor between ``storage/`` and ``corpus/``.

* :mod:`embedding.encoder` - sentence-transformers loading (offline, once per process), device
  and batch-size defaults, normalised encoding. Importing it is cheap: torch and
  sentence-transformers load on the first encode.
* :mod:`embedding.store` - :class:`~embedding.store.EmbeddingCache`, the append-only cache of
  vectors keyed by ``(model id, content hash)``, and :func:`~embedding.store.embed_with_cache`.
* :mod:`embedding.vectors` - reading vectors back: fixed-size-list columns as ``[N, dim]``
  arrays, a run's ``embeddings`` table.
* :mod:`embedding.stage` - the spine's embed stage (``chunks`` -> ``embeddings``, through the
  shared cache) and its batched form for parallel workers.

Imported by ``corpus/`` (token-length chunking), ``clustering/``, ``retrieval/``, ``agents/``,
``evaluation/`` and ``flows/``; it imports only ``storage/`` and ``common/``.
"""
