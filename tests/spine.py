"""The example corpus spine for tests: documents/chunks/embeddings/clusters of examples/wiki,
built with the plain stage functions (no Prefect)."""
from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def build_example_spine(root: Path, emb_cache: Path):
    """Build the spine under ``root / "base"``; returns ``(run_path, config)``."""
    from clustering import stages as cst
    from corpus import stages as st
    from embedding import stage as est
    from flows.config import load_config
    from storage.store import RunStore
    cfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(root), "embed.cache_dir": str(emb_cache)})
    store = RunStore(str(root / "base")).ensure()
    st.curate(store, str(EXAMPLES / "wiki"), cfg)
    st.chunk(store, cfg)
    est.embed(store, cfg)
    cst.cluster(store, cfg)
    return Path(store.path), cfg
