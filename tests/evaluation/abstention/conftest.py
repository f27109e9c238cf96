"""Fixtures for the abstention tests (pattern of ``tests/agents/conftest.py``): the MTRAG
benchmarks, the model-routed fake server and LLM configs pointing at it."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.config import CacheConfig, EndpointConfig, LLMConfig, RetryConfig
from agents.testing.fake_server import FakeLLMServer
from storage.benchmark import Benchmark, load_benchmark
from tests.evaluation.abstention.helpers import MTRAG, ModelRoutedServer


@pytest.fixture
def routed_llm():
    """A started :class:`ModelRoutedServer` (stopped after the test)."""
    srv = ModelRoutedServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def llm_config_for():
    """``llm_config_for(server, cache_dir=None, **endpoint)``: one endpoint on the fake server."""
    def make(server: FakeLLMServer, cache_dir: Path | None = None, **endpoint) -> LLMConfig:
        ep = {"base_url": server.base_url, "model": "fake-model", "timeout_s": 10.0, "max_concurrency": 8, **endpoint}
        return LLMConfig(endpoints={"fake": EndpointConfig(**ep)},
                         retry=RetryConfig(backoff_base_s=0.002, backoff_max_s=0.02),
                         cache=CacheConfig(enabled=cache_dir is not None, dir=str(cache_dir) if cache_dir else None,
                                           fsync=False),
                         accounting_flush_every=500)
    return make


@pytest.fixture(scope="session")
def mtrag_clapnq() -> Benchmark:
    return load_benchmark(MTRAG, "mtrag", "clapnq")


@pytest.fixture(scope="session")
def mtrag_cloud() -> Benchmark:
    return load_benchmark(MTRAG, "mtrag", "cloud")
