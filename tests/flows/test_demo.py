"""``mtr demo``, the README's main command on the embedded default: spine, offline synthesis, evaluation of the
three retrievers, and the dataset card with their difficulty, in a runs root of its own."""
from __future__ import annotations

from typer.testing import CliRunner

from storage.store import RunStore


def test_the_demo_builds_a_benchmark_evaluates_it_and_says_it_is_offline(tmp_path, prefect_harness, monkeypatch):
    from flows.cli import app
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["demo", "--runs-root", str(tmp_path / "runs")])
    assert res.exit_code == 0, res.output
    run = tmp_path / "runs" / "demo"
    store = RunStore(str(run))
    assert {"chunks", "embeddings", "clusters", "conversations", "turns", "qrels"} <= set(store.tables())
    turns = store.read_table("turns", columns=["status", "backend"]).to_pylist()
    assert sum(t["status"] == "ok" for t in turns) >= len(turns) * 0.75
    assert {t["backend"] for t in turns} == {"offline"}
    card = (run / "export" / "README.md").read_text()
    assert "offline" in card.lower() and "dataset card: " in res.output
    assert "## Difficulty of the evaluated retrievers" in card        # the evaluation's figures in the card
    assert "Offline backend" in res.output                            # it says it is the offline backend
    assert store.read_manifest()["stages"]["synthesize"]["summary"]["backend"] == "offline"
    assert list((run / "eval").glob("*")), "the evaluation wrote its report"
