"""Dry run: calls, tokens, cost, cached calls, budget verdict; no request is made."""
from __future__ import annotations

from agents.cache import CallCache
from agents.config import BudgetConfig
from agents.dryrun import count_tokens, dry_run
from agents.session import run_batch


def test_dry_run_estimates_and_sees_the_cache(fake_llm, make_config, qa_step, tmp_path):
    cfg = make_config(fake_llm)
    step = qa_step(expected_output_tokens=50)
    xs = [f"question number {i}" for i in range(10)]
    rep = dry_run(cfg, [(step, xs), (qa_step(name="judge", kind="judge"), xs[:4])])
    assert fake_llm.count == 0
    assert rep.calls == 14 and rep.cached == 0
    qa = rep.by_role["qa"]
    assert qa.completion_tokens == 500 and qa.prompt_tokens > 10 * count_tokens("Question: question number 1")
    assert rep.cost_usd == sum(r.cost_usd for r in rep.by_role.values()) > 0
    assert "qa" in rep.format() and rep.within_budget
    run_batch(cfg, step, xs[:3], store=tmp_path / "run")
    rep2 = dry_run(cfg, [(step, xs)], cache=CallCache(tmp_path / "run" / "cache" / "llm"))
    assert rep2.by_role["qa"].cached == 3 and rep2.by_role["qa"].completion_tokens == 350
    capped = make_config(fake_llm, budget=BudgetConfig(max_tokens=100))
    assert not dry_run(capped, [(step, xs)]).within_budget
    assert "WOULD BE EXCEEDED" in dry_run(capped, [(step, xs)]).format()


def test_dry_run_unpriced_model_and_repair_rate(fake_llm, make_config, qa_step):
    cfg = make_config(fake_llm, prices={})
    rep = dry_run(cfg, [(qa_step(), ["a", "b"])], repair_rate=0.5)
    assert rep.cost_usd is None and "n/a" in rep.format()
    base = dry_run(cfg, [(qa_step(), ["a", "b"])])
    assert rep.total_tokens > base.total_tokens
