"""Flow tests use the session fixtures of tests/conftest.py (prefect_harness, shared_emb_cache)."""
