"""Fixtures for the audit tests: a second fake OpenAI-compatible server (the first,
``fake_llm``, is in ``tests/conftest.py``), LLM configs pointing at them, and small
synthetic benchmarks."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.config import EndpointConfig, LLMConfig, RetryConfig
from agents.testing.fake_server import FakeLLMServer
from storage.benchmark import Benchmark, BenchTurn
from storage.records import Document

ROOT = Path(__file__).resolve().parents[3]
MTRAG = ROOT / "tests" / "data" / "mtrag"

TOPICS = ["volcano", "glacier", "orchid", "falcon", "copper", "violin", "tundra", "saffron", "comet", "harbor",
          "quartz", "cactus", "lantern", "meadow", "walrus", "bamboo", "nebula", "canyon", "pepper", "mosaic"]


@pytest.fixture
def fake_llm2():
    """A second, independent fake server (a second judge)."""
    srv = FakeLLMServer()
    srv.start()
    yield srv
    srv.stop()


def llm_config(*servers: tuple[str, FakeLLMServer, str], **kw) -> LLMConfig:
    """Config with one endpoint per ``(name, server, model)``; millisecond backoffs; no cache."""
    eps = {name: EndpointConfig(base_url=srv.base_url, model=model, timeout_s=5.0, max_concurrency=8)
           for name, srv, model in servers}
    return LLMConfig(endpoints=eps, default_endpoint=next(iter(eps)),
                     retry=RetryConfig(backoff_base_s=0.002, backoff_max_s=0.02), cache={"enabled": False}, **kw)


def synthetic_benchmark(n_turns: int = 12, n_docs_per_topic: int = 3, generator: dict[int, str] | None = None,
                        name: str = "synthetic") -> Benchmark:
    """``n_turns`` one-turn conversations about distinct topics; each topic has several
    passages sharing its word (hard negatives for each other); the gold is the first one."""
    corpus: dict[str, Document] = {}
    turns: list[BenchTurn] = []
    generator = generator or {}
    for i in range(n_turns):
        topic = TOPICS[i % len(TOPICS)] + (str(i // len(TOPICS)) if i >= len(TOPICS) else "")
        for k in range(n_docs_per_topic):
            did = f"{topic}-{k}"
            text = (f"The {topic} fact number {k}: the {topic} is described here with detail {k}."
                    if k else f"The {topic} measures {i + 10} units and the {topic} answer is {i + 10}.")
            corpus[did] = Document(did, topic.title(), text, "syn")
        turns.append(BenchTurn(sample_id=f"c{i}:1", conv_id=f"c{i}", turn=1,
                               question=f"Question {i}: how big is the {topic}?",
                               reference_answer=f"The {topic} measures {i + 10} units.",
                               gold={f"{topic}-0": 1}, generator=generator.get(i)))
    return Benchmark(name=name, format="ours", corpus=corpus, turns=turns)


@pytest.fixture
def synthetic():
    return synthetic_benchmark
