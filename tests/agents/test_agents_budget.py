"""Budget caps: in-flight calls finish, no new call starts, everything saved, reason given."""
from __future__ import annotations

import asyncio

import pytest

from agents.accounting import read_calls
from agents.errors import BudgetExceeded, LLMConfigError
from agents.testing.fake_server import Reply
from agents.session import LLMSession
from storage.store import RunStore


def run_map(cfg, step, xs, store, **kw):
    async def main():
        async with LLMSession(cfg, store=store) as llm:
            return await llm.map(step, xs, **kw)
    return asyncio.run(main())


def test_token_cap_stops_cleanly(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.latency = 0.02
    fake_llm.script(*[Reply.json({"answer": "a", "confidence": 1}, usage=(40, 10))] * 50)
    cfg = make_config(fake_llm, budget={"max_tokens": 200}, max_concurrency=2)
    with pytest.raises(BudgetExceeded, match="token cap reached") as ei:
        run_map(cfg, qa_step(), [f"q{i}" for i in range(20)], tmp_path / "run")
    batch = ei.value.partial
    done = [r for r in batch.items if r.ok]
    skipped = [r for r in batch.items if r.failure and r.failure.kind == "not_started"]
    # 4 calls reach the cap; at most one more per concurrent worker was already in flight
    assert 4 <= len(done) <= 5 and len(done) + len(skipped) == 20
    assert fake_llm.count == len(done)                    # no call started after the cap
    assert "token cap reached" in skipped[0].failure.message
    store = RunStore(str(tmp_path / "run"))
    assert read_calls(store).num_rows == len(done)        # every finished call saved
    man = store.read_manifest()["llm"]
    assert "token cap reached" in man["stopped_reason"] and man["totals"]["calls"] == len(done)
    # a rerun of the same run starts from what was spent: nothing new starts
    with pytest.raises(BudgetExceeded):
        run_map(cfg, qa_step(), [f"q{i}" for i in range(20)], tmp_path / "run")
    assert fake_llm.count == len(done)


def test_usd_cap_and_return_mode(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.script(*[Reply.json({"answer": "a", "confidence": 1}, usage=(1000, 0))] * 10)
    cfg = make_config(fake_llm, budget={"max_usd": 0.0025}, max_concurrency=1)   # $0.001 per call
    batch = run_map(cfg, qa_step(), [f"q{i}" for i in range(6)], tmp_path / "run", on_budget="return")
    assert batch.n_ok == 3 and "cost cap reached" in batch.stopped_reason
    with pytest.raises(BudgetExceeded):
        batch.raise_if_stopped()


def test_usd_cap_needs_prices(fake_llm, make_config, qa_step):
    cfg = make_config(fake_llm, budget={"max_usd": 1.0}, prices={})
    with pytest.raises(LLMConfigError, match="has no price"):
        run_map(cfg, qa_step(), ["q"], None)


def test_cache_hits_cost_nothing(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.script(*[Reply.json({"answer": "a", "confidence": 1}, usage=(100, 0))] * 3)
    run_map(make_config(fake_llm), qa_step(), ["a", "b", "c"], tmp_path / "run")
    cfg = make_config(fake_llm, budget={"max_tokens": 1000})
    batch = run_map(cfg, qa_step(), ["a", "b", "c"], tmp_path / "other", on_budget="return")
    assert batch.n_ok == 3


def test_parallel_batches_share_what_the_caps_leave():
    from agents.budget import batch_allowance
    from agents.config import BudgetConfig
    caps = BudgetConfig(max_tokens=10_000, max_usd=1.0)
    # nothing spent, nothing running, 4 batches start together: a quarter each
    assert batch_allowance(caps, 0, 0.0, [], 4) == BudgetConfig(max_tokens=2_500, max_usd=0.25)
    # 2,000 tokens / $0.40 recorded, one batch still running with its 2,500 / $0.25: the two free slots share
    # 10,000 - 2,000 - 2,500 = 5,500 tokens and 1.0 - 0.4 - 0.25 = $0.35
    share = batch_allowance(caps, 2_000, 0.4, [BudgetConfig(max_tokens=2_500, max_usd=0.25)], 2)
    assert share.max_tokens == 2_750 and share.max_usd == pytest.approx(0.175)
    # spent beyond the cap: nothing left (never negative); an unset cap stays unset
    assert batch_allowance(BudgetConfig(max_tokens=100), 150, 0.0, [], 2) == BudgetConfig(max_tokens=0)
    # the shares handed out together never add up to more than the caps
    running: list[BudgetConfig] = []
    for free in (3, 2, 1):
        running.append(batch_allowance(caps, 1_000, 0.1, running, free))
    assert sum(r.max_tokens for r in running) <= 9_000 and sum(r.max_usd for r in running) <= 0.9 + 1e-9


def test_a_session_without_the_runs_prior_spend_caps_its_own(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.script(*[Reply.json({"answer": "a", "confidence": 1}, usage=(40, 10))] * 20)
    run_map(make_config(fake_llm), qa_step(), ["a", "b", "c", "d"], tmp_path / "run")     # 200 tokens recorded
    cfg = make_config(fake_llm, budget={"max_tokens": 150}, max_concurrency=1)

    async def main(seed):
        async with LLMSession(cfg, store=tmp_path / "run", seed_budget=seed) as llm:
            return await llm.map(qa_step(), [f"q{i}" for i in range(6)], on_budget="return")
    assert asyncio.run(main(True)).n_ok == 0               # the run's 200 tokens are over its cap of 150
    assert asyncio.run(main(False)).n_ok == 3              # an allowance of 150 for this session: 3 calls of 50
