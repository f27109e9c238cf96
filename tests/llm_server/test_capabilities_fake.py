"""Capability probing and the client's use of it, against the project's fake server (fast,
default suite; the same paths against llama.cpp are in test_llama_server.py)."""
from __future__ import annotations

import asyncio

import pytest

try:
    from agents.testing.fake_server import FakeLLMServer, Reply
except ImportError:  # pragma: no cover - before the move to agents/testing/
    from agents.fake_server import FakeLLMServer, Reply

from agents.capabilities import (Capabilities, EndpointUnreachable, context_length_from_error, probe_endpoint,
                                 public_url, server_root)
from agents.config import EndpointConfig, LLMConfig
from agents.errors import LogprobsUnsupported
from agents.parsing import TextOutput
from agents.session import LLMSession
from agents.steps import LLMStep
from pydantic import BaseModel


class Pick(BaseModel):
    answer: str


def _ep(url: str, **kw) -> EndpointConfig:
    return EndpointConfig(base_url=url, model="fake-model", **kw)


def test_helpers():
    assert server_root("http://h:8/v1") == "http://h:8" and server_root("http://h:8/api/v1/") == "http://h:8/api"
    assert public_url("http://user:pw@h:8/v1?k=1") == "http://h:8/v1"
    assert context_length_from_error("This model's maximum context length is 2048 tokens. However, ...") == 2048
    assert context_length_from_error("Requested tokens (3000) exceed context window of 4096") == 4096
    assert context_length_from_error("bad request") is None
    c = Capabilities("e", "m", "u", json_schema="rejected", json_object="yes", json_object_schema="yes")
    assert c.structured_mode == "json_object_schema"
    assert Capabilities("e", "m", "u", json_object="yes").structured_mode == "json_object"
    assert Capabilities("e", "m", "u").structured_mode == "text"


@pytest.mark.parametrize("js,lp", [("honour", "honour"), ("reject", "reject"), ("ignore", "ignore")])
def test_probe_detects_what_the_server_does(js, lp):
    with FakeLLMServer(json_schema=js, logprobs=lp) as srv:
        caps = asyncio.run(probe_endpoint("fake", _ep(srv.base_url)))
        probes = list(srv.requests)
    assert caps.models == ("fake-model",) and caps.model_listed and caps.usage and caps.latency_s is not None
    assert caps.json_schema == {"honour": "yes", "reject": "rejected", "ignore": "ignored"}[js]
    assert caps.logprobs == {"honour": "yes", "reject": "rejected", "ignore": "ignored"}[lp]
    assert caps.structured_mode == ("json_schema" if js == "honour" else "json_object")
    assert caps.seed == "yes" and caps.context_length is None
    assert probes and all(r.headers.get("x-mtr-probe") == "1" for r in probes)
    assert all((r.body.get("max_tokens") or 0) <= 24 for r in probes)
    if js == "reject":
        assert any("json_schema" in n and "HTTP 400" in n for n in caps.notes)


def test_probe_unreachable_is_one_clear_error():
    from tests.llm_server.conftest import free_port
    port = free_port()
    with pytest.raises(EndpointUnreachable, match=r"unreachable"):
        asyncio.run(probe_endpoint("gone", _ep(f"http://127.0.0.1:{port}/v1", timeout_s=5, connect_timeout_s=5)))


def test_config_context_length_wins():
    with FakeLLMServer() as srv:
        caps = asyncio.run(probe_endpoint("fake", _ep(srv.base_url, context_length=4096)))
    assert caps.context_length == 4096 and caps.context_source.startswith("config")


def _run(cfg: LLMConfig, step: LLMStep, inputs: list, tmp_path, concurrency: int | None = None):
    async def main():
        async with LLMSession(cfg, store=tmp_path / "run") as llm:
            batch = await llm.map(step, inputs, concurrency=concurrency)
            return batch, llm.client
    return asyncio.run(main())


def test_client_probes_once_and_uses_the_detected_mode(tmp_path):
    step = LLMStep(name="pick", prompt_version="p1", output_model=Pick,
                   build_messages=lambda x: [{"role": "user", "content": f"Say {x}"}])
    with FakeLLMServer(json_schema="reject") as srv:
        cfg = LLMConfig(endpoints={"fake": _ep(srv.base_url, probe=True)}, retry={"max_attempts": 1})
        batch, client = _run(cfg, step, ["a", "b", "c"], tmp_path)
        real = [r for r in srv.requests if r.headers.get("x-mtr-probe") != "1"]
    assert client.probes_sent == 1 and client.endpoint_mode("fake") == "json_object"
    assert len(real) == 3 and all(r.body["response_format"] == {"type": "json_object"} for r in real)
    assert all(r.ok for r in batch.items)
    # a rerun is answered by the cache: no probe, no request
    with FakeLLMServer(json_schema="reject") as srv2:
        cfg = LLMConfig(endpoints={"fake": _ep(srv2.base_url, probe=True)})
        batch, client = _run(cfg, step, ["a", "b", "c"], tmp_path)
        assert srv2.count == 0 and (client is None or client.probes_sent == 0)
    assert all(r.ok and r.cache_hit for r in batch.items)


def test_logprobs_refused_after_probe(tmp_path):
    step = LLMStep(name="lp", prompt_version="p1", output_model=TextOutput, logprobs=True, top_logprobs=3,
                   build_messages=lambda x: [{"role": "user", "content": x}])
    with FakeLLMServer(logprobs="ignore") as srv:
        cfg = LLMConfig(endpoints={"fake": _ep(srv.base_url, probe=True)})
        with pytest.raises(LogprobsUnsupported, match="probe found logprobs ignored"):
            _run(cfg, step, ["hello"], tmp_path)
        assert not [r for r in srv.requests if r.headers.get("x-mtr-probe") != "1"]


def test_prompt_longer_than_context_is_refused_before_sending(tmp_path):
    step = LLMStep(name="long", prompt_version="p1", output_model=TextOutput,
                   build_messages=lambda x: [{"role": "user", "content": x}])
    with FakeLLMServer() as srv:
        cfg = LLMConfig(endpoints={"fake": _ep(srv.base_url, context_length=256)})
        batch, _ = _run(cfg, step, ["word " * 400, "short question"], tmp_path)
        sent = [r.text for r in srv.requests]
    long, short = batch.items
    assert long.failure is not None and long.failure.kind == "api_error"
    assert long.failure.error_class == "ContextLengthExceeded" and "context length 256" in long.failure.message
    assert short.ok and len(sent) == 1 and "short question" in sent[0]


def test_server_context_error_is_learned_no_400_loop(tmp_path):
    step = LLMStep(name="long", prompt_version="p1", output_model=TextOutput,
                   build_messages=lambda x: [{"role": "user", "content": x}])
    with FakeLLMServer() as srv:
        srv.on("word word", Reply.status(400, "This model's maximum context length is 300 tokens. However, you "
                                              "requested 2000 tokens"))
        cfg = LLMConfig(endpoints={"fake": _ep(srv.base_url)}, retry={"max_attempts": 3})
        batch, _ = _run(cfg, step, ["word " * 400, "word " * 500], tmp_path, concurrency=1)
        n = srv.count
    a, b = batch.items
    assert a.failure.error_class == "ContextLengthExceeded" and a.failure.status_code == 400
    assert b.failure.error_class == "ContextLengthExceeded" and "not sent" in b.failure.message
    assert n == 1      # one 400, no retries, the second prompt never sent
