"""Fixtures for synthesis tests: the example corpus spine (built once, plain functions, no
Prefect), tiny hand-made corpora for graph behaviour, and the role-scripted fake server."""
from __future__ import annotations

import shutil

import pytest

from agents.testing.fake_roles import RoleScriptedServer


@pytest.fixture(scope="session")
def example_spine(tmp_path_factory, shared_emb_cache):
    """A run dir with documents/chunks/embeddings/clusters of examples/wiki (built once)."""
    from tests.spine import build_example_spine
    path, cfg = build_example_spine(tmp_path_factory.mktemp("spine"), shared_emb_cache)
    return {"path": path, "cfg": cfg}


@pytest.fixture
def spine_copy(example_spine, tmp_path):
    """A private copy of the example spine run (tests write synthesis tables into it)."""
    dst = tmp_path / "run"
    shutil.copytree(example_spine["path"], dst, ignore=shutil.ignore_patterns("cache"))
    return dst


@pytest.fixture
def role_server():
    """A started :class:`RoleScriptedServer` (stopped after the test)."""
    with RoleScriptedServer() as srv:
        yield srv
