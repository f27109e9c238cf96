"""Fixtures for the LLM layer: configs pointing at the fake OpenAI-compatible server (the
``fake_llm`` fixture of ``tests/conftest.py``) with millisecond backoffs so the whole suite
stays fast, and a small structured step."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from agents.config import EndpointConfig, LLMConfig, ModelPrice, RetryConfig
from agents.testing.fake_server import FakeLLMServer
from agents.steps import LLMStep

SECRET = "sk-test-SECRETKEY-0123456789abcdefXYZ"
KEY_ENV = "MTR_TEST_LLM_KEY"


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def _make_config(server: FakeLLMServer, *, endpoint: dict | None = None, **kw) -> LLMConfig:
    """Config with one endpoint ``fake`` pointing at ``server``; tiny backoffs."""
    ep = {"base_url": server.base_url, "model": "fake-model", "timeout_s": 5.0, "max_concurrency": 8,
          **(endpoint or {})}
    retry = {"backoff_base_s": 0.002, "backoff_max_s": 0.02, **kw.pop("retry", {})}
    return LLMConfig(endpoints={"fake": EndpointConfig(**ep)}, retry=RetryConfig(**retry),
                     prices=kw.pop("prices", {"fake-model": ModelPrice(input_per_1m=1.0, output_per_1m=2.0)}),
                     **kw)


class Answer(BaseModel):
    answer: str
    confidence: int


def _qa_step(**kw) -> LLMStep:
    """A small structured step; inputs are strings."""
    attrs = dict(name="qa", prompt_version="qa-v1", output_model=Answer,
                 build_messages=lambda x: [{"role": "system", "content": "Answer briefly."},
                                           {"role": "user", "content": f"Question: {x}"}],
                 offline=lambda x: Answer(answer=f"offline {x}", confidence=1))
    attrs.update(kw)
    return LLMStep(**attrs)


@pytest.fixture
def make_config():
    """``make_config(server, endpoint={...}, **LLMConfig fields)``."""
    return _make_config


@pytest.fixture
def qa_step():
    """``qa_step(**step attrs)``: a structured step (output ``answer``/``confidence``)."""
    return _qa_step
