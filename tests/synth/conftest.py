"""Fixtures for synthesis tests: the example corpus spine (built once, plain functions, no
Prefect), tiny hand-made corpora for graph behaviour, and the role-scripted fake server."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agents.testing.fake_roles import RoleScriptedServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="session")
def example_spine(tmp_path_factory, shared_emb_cache):
    """A run dir with documents/chunks/embeddings/clusters of examples/wiki (built once)."""
    from clustering import stages as cst
    from corpus import stages as st
    from flows.config import load_config
    from storage.store import RunStore
    root = tmp_path_factory.mktemp("spine")
    cfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(root), "embed.cache_dir": str(shared_emb_cache)})
    store = RunStore(str(root / "base")).ensure()
    st.curate(store, str(EXAMPLES / "wiki"), cfg)
    st.chunk(store, cfg)
    cst.embed(store, cfg)
    cst.cluster(store, cfg)
    return {"path": Path(store.path), "cfg": cfg}


@pytest.fixture
def spine_copy(example_spine, tmp_path):
    """A private copy of the example spine run (tests write synthesis tables into it)."""
    dst = tmp_path / "run"
    shutil.copytree(example_spine["path"], dst, ignore=shutil.ignore_patterns("cache"))
    return dst


@pytest.fixture
def role_server():
    srv = RoleScriptedServer()
    srv.start()
    yield srv
    srv.stop()
