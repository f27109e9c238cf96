"""Concurrency limits hold, and a sleeping retry does not hold a slot."""
from __future__ import annotations

import asyncio

from agents.testing.fake_server import Reply
from agents.session import LLMSession


def run_map(cfg, step, xs, **kw):
    async def main():
        async with LLMSession(cfg, cache=None) as llm:
            batch = await llm.map(step, xs, **kw)
            return batch, llm.client
    return asyncio.run(main())


def test_global_limit_is_never_exceeded(fake_llm, make_config, qa_step):
    fake_llm.latency = 0.03
    cfg = make_config(fake_llm, endpoint={"max_concurrency": 10}, max_concurrency=3)
    batch, client = run_map(cfg, qa_step(), [f"q{i}" for i in range(15)], concurrency=12)
    assert batch.n_ok == 15
    assert fake_llm.max_in_flight == 3 and client.max_in_flight == 3


def test_endpoint_limit_is_never_exceeded(fake_llm, make_config, qa_step):
    fake_llm.latency = 0.03
    cfg = make_config(fake_llm, endpoint={"max_concurrency": 2}, max_concurrency=16)
    batch, client = run_map(cfg, qa_step(), [f"q{i}" for i in range(10)])
    assert batch.n_ok == 10 and fake_llm.max_in_flight == 2


def test_slot_released_while_sleeping_on_retry_after(fake_llm, make_config, qa_step):
    fake_llm.on("item-A", Reply.status(429, retry_after=0.3))
    cfg = make_config(fake_llm, endpoint={"max_concurrency": 1}, max_concurrency=1)
    batch, _ = run_map(cfg, qa_step(), ["item-A", "item-B"], concurrency=2)
    assert batch.n_ok == 2
    order = ["A" if "item-A" in r.text else "B" for r in fake_llm.requests]
    assert order == ["A", "B", "A"]   # B went through while A slept


def test_results_keep_input_order(fake_llm, make_config, qa_step):
    fake_llm.on("q0", Reply.json({"answer": "zero", "confidence": 0}, delay=0.1))
    batch, _ = run_map(make_config(fake_llm), qa_step(), ["q0", "q1", "q2"], item_ids=["a", "b", "c"])
    assert [r.item_id for r in batch.items] == ["a", "b", "c"] and batch.items[0].output.answer == "zero"


def test_fatal_error_cancels_the_batch(fake_llm, make_config, qa_step):
    import pytest
    from agents.errors import LLMFatalError
    fake_llm.latency = 0.02
    fake_llm.on("q3", Reply.status(401, "bad key"))
    with pytest.raises(LLMFatalError):
        run_map(make_config(fake_llm, max_concurrency=2), qa_step(), [f"q{i}" for i in range(40)])
    assert fake_llm.count < 40
