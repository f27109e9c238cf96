"""Integration: the spine flow on the bundled example corpus, then the quick CLI commands."""
from pathlib import Path

import pyarrow.compute as pc
from typer.testing import CliRunner

from flows.cli import app
from flows.config import load_config
from flows.pipeline import run_spine
from storage.store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_demo_spine_then_cached_rerun(tmp_path, prefect_harness, shared_emb_cache):
    cfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(tmp_path),
                                               "embed.cache_dir": str(shared_emb_cache)})
    run_dir = tmp_path / "demo"
    stages = ["curate", "chunk", "embed", "cluster"]
    first = run_spine(str(run_dir), cfg, stages, str(EXAMPLES / "wiki"))
    assert not any(r["cached"] for r in first.values())
    store = RunStore(str(run_dir))
    docs = store.read_table("documents")
    chunks = store.read_table("chunks")
    clusters = store.read_table("clusters")
    assert docs.num_rows == 12
    assert not any("List of related articles" in t for t in docs.column("text").to_pylist())  # boilerplate cut
    assert set(clusters.column("chunk_id").to_pylist()) == set(chunks.column("chunk_id").to_pylist())
    assert clusters.num_rows == chunks.num_rows                                       # no chunk lost
    sizes = pc.value_counts(clusters.column("cluster_id")).field("counts").to_pylist()
    assert max(sizes) <= 16
    assert first["cluster"]["summary"]["topics"] >= 6
    man = store.read_manifest()
    assert man["config"]["chunk"]["max_size"] == 2048 and "prefect" in man["packages"]
    assert man["tables"]["chunks"]["rows"] == chunks.num_rows

    second = run_spine(str(run_dir), cfg, stages, str(EXAMPLES / "wiki"))
    assert {s: r["cached"] for s, r in second.items()} == {s: True for s in stages}
    assert second["embed"]["summary"] == first["embed"]["summary"]

    # a different run over the same corpus embeds nothing new (shared content-hash cache)
    third = run_spine(str(tmp_path / "other"), cfg, ["curate", "chunk", "embed"], str(EXAMPLES / "wiki"))
    assert third["embed"]["summary"]["newly_embedded"] == 0

    # the synthesis flow on top of the spine (offline backend), then the benchmark evaluation command
    from flows.synthesis import run_synthesis
    scfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(tmp_path), "embed.cache_dir": str(shared_emb_cache),
                                                "synth.conversations": 3, "synth.turns": 4})
    res = run_synthesis(str(run_dir), scfg)
    assert res["summary"]["conversations"] == 3 and res["summary"]["backend"] == "offline"
    assert store.read_table("turns").num_rows == 12
    assert (run_dir / "export" / "beir" / "rewrite" / "queries.jsonl").exists()
    assert store.read_manifest()["stages"]["synthesize"]["summary"]["turns_ok"] >= 9

    runner = CliRunner()
    res = runner.invoke(app, ["evaluate", "--benchmark", str(run_dir), "--format", "ours", "--retriever", "bm25",
                              "--query-mode", "last_turn", "--query-mode", "rewrite"])
    assert res.exit_code == 0, res.output
    assert "bm25" in res.output and (run_dir / "eval" / "report.html").exists()
    res = runner.invoke(app, ["runs", "list", "--root", str(tmp_path)])
    assert res.exit_code == 0 and "demo" in res.output
    res = runner.invoke(app, ["query", str(run_dir), "SELECT count(*) AS n FROM chunks"])
    assert res.exit_code == 0 and str(chunks.num_rows) in res.output
    res = runner.invoke(app, ["query", str(run_dir), "DROP VIEW chunks"])
    assert res.exit_code != 0
