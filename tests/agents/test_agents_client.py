"""Behaviour against the fake server: structured outputs, repair, retries, timeouts,
refusals, logprobs, usage, fatal errors, downgrade to text."""
from __future__ import annotations

import asyncio
import time

import pytest

from agents.errors import LLMCallFailed, LLMFatalError, LogprobsUnsupported
from agents.testing.fake_server import Reply
from agents.session import LLMSession
from agents.accounting import read_calls
from storage.store import RunStore


def run1(cfg, step, x, store=None, **kw):
    async def main():
        async with LLMSession(cfg, store=store, **kw) as llm:
            return await llm.run(step, x)
    return asyncio.run(main())


def test_json_schema_answer_with_provenance(fake_llm, make_config, qa_step, tmp_path):
    step = qa_step()
    res = run1(make_config(fake_llm), step, "what is BM25?", store=tmp_path / "run")
    assert res.ok and res.backend == "openai" and res.model == "fake-model"
    assert res.output.answer.startswith("fake answer") and res.output.confidence == 1
    assert res.raw_prompt[-1]["content"] == "Question: what is BM25?"
    assert res.raw_output == res.output.model_dump_json().replace(",", ", ").replace(":", ": ")
    assert res.prompt_version == "qa-v1" and res.usage.prompt_tokens > 0 and res.usage.completion_tokens > 0
    body = fake_llm.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == step.schema
    assert body["temperature"] == 0.8 and body["top_p"] == 0.95   # generation defaults
    rows = read_calls(RunStore(str(tmp_path / "run"))).to_pylist()
    assert len(rows) == 1 and rows[0]["outcome"] == "ok" and rows[0]["cache_hit"] is False
    assert rows[0]["prompt_tokens"] == res.usage.prompt_tokens
    assert rows[0]["cost_usd"] == pytest.approx((res.usage.prompt_tokens + 2 * res.usage.completion_tokens) / 1e6)


def test_judge_sends_temperature_zero(fake_llm, make_config, qa_step):
    assert run1(make_config(fake_llm), qa_step(kind="judge"), "x").ok
    assert fake_llm.requests[0].body["temperature"] == 0.0 and "top_p" not in fake_llm.requests[0].body


def test_usage_counts_from_server(fake_llm, make_config, qa_step):
    fake_llm.script(Reply.json({"answer": "a", "confidence": 3}, usage=(1234, 56)))
    res = run1(make_config(fake_llm), qa_step(), "x")
    assert (res.usage.prompt_tokens, res.usage.completion_tokens, res.usage.estimated) == (1234, 56, False)
    fake_llm.script(Reply.json({"answer": "a", "confidence": 3}, omit_usage=True))
    res = run1(make_config(fake_llm), qa_step(), "y")
    assert res.usage.estimated and res.usage.prompt_tokens > 0


def test_malformed_json_then_repair_succeeds(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.script(Reply.text('{"answer": "x", "confidence": "high"'), Reply.json({"answer": "ok", "confidence": 2}))
    res = run1(make_config(fake_llm), qa_step(), "q", store=tmp_path / "run")
    assert res.ok and res.output.confidence == 2 and len(res.call_ids) == 2
    repair = fake_llm.requests[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"answer": "x", "confidence": "high"'}
    assert "could not be used" in repair[-1]["content"] and "no JSON object" in repair[-1]["content"]
    rows = read_calls(RunStore(str(tmp_path / "run"))).to_pylist()
    assert [(r["purpose"], r["outcome"]) for r in rows] == [("primary", "invalid_output"), ("repair", "ok")]


def test_invalid_twice_is_an_explicit_failure_with_raw_outputs(fake_llm, make_config, qa_step):
    fake_llm.script(Reply.text("I think the answer is 42."), Reply.json({"answer": "x", "confidence": "high"}))
    res = run1(make_config(fake_llm), qa_step(), "q")
    assert not res.ok and res.output is None
    f = res.failure
    assert f.kind == "invalid_output" and "confidence" in f.message
    assert f.raw_outputs == ("I think the answer is 42.", '{"answer": "x", "confidence": "high"}')
    assert res.raw_output == '{"answer": "x", "confidence": "high"}'   # kept, not a placeholder
    with pytest.raises(LLMCallFailed, match="invalid_output"):
        res.unwrap()


def test_429_with_retry_after_then_success(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.script(Reply.status(429, retry_after=0.15))
    t0 = time.perf_counter()
    res = run1(make_config(fake_llm), qa_step(), "q", store=tmp_path / "run")
    assert res.ok and time.perf_counter() - t0 >= 0.15
    assert fake_llm.count == 2
    row = read_calls(RunStore(str(tmp_path / "run"))).to_pylist()[0]
    assert row["retries"] == 1 and row["outcome"] == "ok"


def test_500s_exhaust_retries_with_backoff(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.script(*[Reply.status(500)] * 3)
    cfg = make_config(fake_llm, retry={"max_attempts": 3})
    res = run1(cfg, qa_step(), "q", store=tmp_path / "run")
    assert not res.ok and res.failure.kind == "retries_exhausted"
    assert res.failure.error_class == "InternalServerError" and res.failure.status_code == 500
    assert fake_llm.count == 3
    row = read_calls(RunStore(str(tmp_path / "run"))).to_pylist()[0]
    assert (row["retries"], row["outcome"], row["error_class"]) == (2, "error", "InternalServerError")
    # failed calls are not cached: the next run asks again and succeeds
    res = run1(cfg, qa_step(), "q", store=tmp_path / "run")
    assert res.ok and not res.cache_hit and fake_llm.count == 4


@pytest.mark.parametrize("status", [408, 409, 502, 503])
def test_other_transient_statuses_are_retried(fake_llm, make_config, qa_step, status):
    fake_llm.script(Reply.status(status))
    assert run1(make_config(fake_llm, cache={"enabled": False}), qa_step(), "q").ok
    assert fake_llm.count == 2


def test_hang_past_timeout_is_retried(fake_llm, make_config, qa_step):
    fake_llm.script(Reply.hang(5))
    cfg = make_config(fake_llm, endpoint={"timeout_s": 0.3})
    t0 = time.perf_counter()
    res = run1(cfg, qa_step(), "q")
    assert res.ok and 0.3 <= time.perf_counter() - t0 < 2.5 and fake_llm.count == 2
    fake_llm.script(Reply.hang(5), Reply.hang(5))
    res = run1(make_config(fake_llm, endpoint={"timeout_s": 0.2}, retry={"max_attempts": 2}), qa_step(), "q2")
    assert res.failure.kind == "retries_exhausted" and "Timeout" in res.failure.error_class


def test_non_retryable_4xx_is_a_failure_not_a_retry(fake_llm, make_config, qa_step):
    fake_llm.script(Reply.status(400, "maximum context length exceeded"))
    res = run1(make_config(fake_llm), qa_step(), "q")
    assert res.failure.kind == "api_error" and res.failure.status_code == 400
    assert "context length" in res.failure.message and fake_llm.count == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_fatal_statuses_raise(fake_llm, make_config, qa_step, status):
    fake_llm.script(Reply.status(status, "nope"))
    with pytest.raises(LLMFatalError, match=str(status)):
        run1(make_config(fake_llm), qa_step(), "q")
    assert fake_llm.count == 1


def test_refusal_is_an_explicit_failure(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.script(Reply.refusal("I can't help with that."))
    res = run1(make_config(fake_llm), qa_step(), "q", store=tmp_path / "run")
    assert res.failure.kind == "refusal" and res.failure.raw_outputs == ("I can't help with that.",)
    assert fake_llm.count == 1   # no repair for a refusal
    assert read_calls(RunStore(str(tmp_path / "run"))).to_pylist()[0]["outcome"] == "refusal"


def test_logprobs_when_asked(fake_llm, make_config, qa_step):
    fake_llm.script(Reply.text('{"answer": "yes", "confidence": 1}',
                               logprobs=[("{", -0.01, [("{", -0.01)]), ("yes", -0.2, [("yes", -0.2), ("no", -1.8)])]))
    res = run1(make_config(fake_llm), qa_step(logprobs=True, top_logprobs=2), "q")
    assert res.ok and res.logprobs[1].token == "yes" and res.logprobs[1].top == (("yes", -0.2), ("no", -1.8))
    body = fake_llm.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 2


@pytest.mark.parametrize("how", ["config", "reject", "ignore"])
def test_logprobs_unsupported_is_typed(fake_llm, make_config, qa_step, how):
    ep = {"supports_logprobs": False} if how == "config" else {}
    if how != "config":
        fake_llm.logprobs_mode = how
    with pytest.raises(LogprobsUnsupported, match="does not support logprobs"):
        run1(make_config(fake_llm, endpoint=ep), qa_step(logprobs=True), "q")
    assert fake_llm.count == (0 if how == "config" else 1)


def test_server_without_json_schema_falls_back_to_text_extraction(fake_llm, make_config, qa_step):
    fake_llm.json_schema = "reject"
    res = run1(make_config(fake_llm), qa_step(), "q")
    assert res.ok and res.output.confidence == 1
    assert fake_llm.count == 2 and "response_format" not in fake_llm.requests[1].body
    assert "JSON schema" in fake_llm.requests[1].body["messages"][-1]["content"]
    assert res.raw_output.startswith("Sure! Here is the JSON")


def test_text_mode_endpoint_and_free_text_steps(fake_llm, make_config, qa_step):
    from agents.parsing import TextOutput
    res = run1(make_config(fake_llm, endpoint={"structured_output": "text"}), qa_step(), "q")
    assert res.ok and "response_format" not in fake_llm.requests[0].body
    step = qa_step(name="rewrite", output_model=TextOutput)
    res = run1(make_config(fake_llm), step, "q")
    assert res.ok and res.output.text.startswith("fake answer")
    assert "response_format" not in fake_llm.requests[-1].body


def test_connection_refused_is_retried_then_fails(make_config, qa_step):
    from agents.testing.fake_server import FakeLLMServer
    srv = FakeLLMServer().start()
    srv.stop()   # nothing listens on that port any more
    res = run1(make_config(srv, retry={"max_attempts": 2}), qa_step(), "q")
    assert res.failure.kind == "retries_exhausted" and res.failure.error_class == "APIConnectionError"


def test_retry_after_parsing_and_capped_backoff():
    import email.utils
    from agents.transport import backoff_delay, retry_after_seconds
    from agents.config import RetryConfig
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": date}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds({}) is None
    cfg = RetryConfig(backoff_base_s=1, backoff_max_s=8, max_retry_after_s=10)
    delays = [backoff_delay(a, cfg) for a in range(6)]
    assert all(0.5 * min(8, 2 ** a) <= d <= min(8, 2 ** a) for a, d in enumerate(delays))
    assert backoff_delay(0, cfg, retry_after=60) == 10          # server asks too much: capped
    assert backoff_delay(3, RetryConfig(backoff_base_s=1, jitter=False)) == 8


def test_parts_are_compacted_at_close(fake_llm, make_config, qa_step, tmp_path):
    from agents.session import run_batch
    run_batch(make_config(fake_llm), qa_step(), [f"q{i}" for i in range(5)], store=tmp_path / "run")
    store = RunStore(str(tmp_path / "run"))
    assert len(store.table_files("llm_calls")) == 1 and read_calls(store).num_rows == 5
    man = store.read_manifest()
    assert man["llm"]["totals"]["calls"] == 5 and man["tables"]["llm_calls"]["rows"] == 5
