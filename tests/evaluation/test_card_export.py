"""The dataset card written by the export: sections from the evaluation layer, human cost only
with stated figures (never an invented default)."""
from pathlib import Path

from agents.synth.config import SynthConfig
from storage.exports import export_benchmark
from storage.schemas import SCHEMAS, table_from_rows
from tests.reliability.test_exports_atomic import _query_texts, tiny_run  # noqa: F401  (fixture)


def _calls(store):
    rows = [{"call_id": f"k{i}", "run_id": "r", "role": "questioner" if i < 3 else "verifier", "backend": "offline",
             "prompt_tokens": 10, "completion_tokens": 2, "cache_hit": i == 0, "cost_usd": 0.0} for i in range(5)]
    store.write_table("llm_calls", table_from_rows(rows, SCHEMAS["llm_calls"]))


def test_card_states_no_human_default_and_takes_sections(tiny_run):  # noqa: F811
    from flows.synthesis import card_sections
    _calls(tiny_run)
    cfg = SynthConfig()
    assert cfg.minutes_per_turn_human is None and cfg.human_hourly_usd is None
    secs = card_sections(tiny_run, cfg)
    exp = export_benchmark(tiny_run, query_texts=_query_texts, card_sections=secs)
    card = (Path(exp["export_dir"]) / "README.md").read_text()
    assert exp["human_cost_usd"] is None and exp["cost_ratio_human_over_llm"] is None
    assert "Human cost: not estimated" in card and "no default is assumed" in card
    assert "## Realism statistics" in card and "## Example conversations" in card and "**c1**" in card
    assert "| questioner | 3 | 1 | 36 | 0.0000 |" in card and "| verifier | 2 | 0 | 24 | 0.0000 |" in card
    # 4 ok turns x 6 min at $30/h = $12.00, with the stated source
    cfg = SynthConfig(minutes_per_turn_human=6, human_hourly_usd=30, human_cost_source="our annotation pilot, 2025")
    exp = export_benchmark(tiny_run, query_texts=_query_texts, minutes_per_turn=6, hourly_usd=30,
                           human_cost_source=cfg.human_cost_source, card_sections=card_sections(tiny_run, cfg))
    card = (Path(exp["export_dir"]) / "README.md").read_text()
    assert exp["human_cost_usd"] == 12.0 and "(source: our annotation pilot, 2025)" in card
    assert "$12.00 (source: our annotation pilot, 2025)" in card
