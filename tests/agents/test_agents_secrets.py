"""The API key never leaves the process except in the Authorization header: not in any file
the run wrote (cache, llm_calls, manifest), logs, exceptions, failures or reprs."""
from __future__ import annotations

import asyncio
import logging

import pyarrow.parquet as pq
import pytest

from agents.config import EndpointConfig, LLMConfig
from agents.errors import LLMFatalError
from agents.testing.fake_server import Reply
from agents.secrets import scrub
from agents.session import LLMSession

WRONG = "sk-wrong-KEY-zyxwvutsrqponmlkjih987"


def all_text_written(root) -> str:
    chunks = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        data = p.read_bytes()
        chunks.append(data.decode("utf-8", "replace"))
        if p.suffix == ".parquet":    # compressed: check the decoded values too
            chunks.append(str(pq.read_table(p).to_pylist()))
    return "\n".join(chunks)


def test_secret_grep_over_everything_the_run_wrote(fake_llm, make_config, qa_step, api_key, tmp_path,
                                                   monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MTR_TEST_WRONG_KEY", WRONG)
    monkeypatch.setenv("MTR_TEST_ORG", "org-secret-header-value-123")
    fake_llm.api_key = api_key
    cfg = make_config(fake_llm, endpoint={"api_key_env": "MTR_TEST_LLM_KEY",
                                          "header_envs": {"X-Org": "MTR_TEST_ORG"}})
    # failures of every kind, so error paths write too
    fake_llm.script(Reply.status(429, retry_after=0.01), Reply.text("not json"),
                    Reply.status(500), Reply.refusal(f"refusing; your key is {api_key}"))
    reprs = []

    async def main():
        async with LLMSession(cfg, store=tmp_path / "run") as llm:
            batch = await llm.map(qa_step(), [f"q{i}" for i in range(6)])
            reprs.extend([repr(llm), repr(llm.client), repr(cfg), str(cfg.public_dict()), llm.summary()])
            return batch
    batch = asyncio.run(main())
    assert fake_llm.requests[0].headers["authorization"] == f"Bearer {api_key}"   # it was used
    assert fake_llm.requests[0].headers["x-org"] == "org-secret-header-value-123"
    refused = [r for r in batch.items if r.failure and r.failure.kind == "refusal"]
    assert refused and "***" in refused[0].failure.message

    # a server that echoes a wrong key in its 401 error (as real APIs do)
    bad = LLMConfig(endpoints={"bad": EndpointConfig(base_url=fake_llm.base_url, model="fake-model",
                                                     api_key_env="MTR_TEST_WRONG_KEY")})
    with pytest.raises(LLMFatalError) as ei:
        async def fail():
            async with LLMSession(bad, store=tmp_path / "run2") as llm:
                await llm.run(qa_step(), "q")
        asyncio.run(fail())
    assert "Incorrect API key provided: ***" in str(ei.value)
    logging.getLogger("mtr.agents.test").warning("leak attempt %s", api_key)

    texts = {"files": all_text_written(tmp_path), "logs": caplog.text, "exception": str(ei.value) + repr(ei.value),
             "reprs": "\n".join(reprs), "rows": str([r.to_row() for r in batch.items]),
             "failures": str([r.failure for r in batch.items])}
    assert "leak attempt ***" in caplog.text
    for secret in (api_key, WRONG, "org-secret-header-value-123"):
        for where, text in texts.items():
            assert secret not in text, f"secret found in {where}"
    assert (tmp_path / "run" / "manifest.json").exists() and list((tmp_path / "run" / "cache").rglob("*.json"))


def test_scrub_masks_registered_and_key_shaped_values():
    from agents.secrets import register_secret
    register_secret("plain-secret-value")
    assert scrub("a plain-secret-value b") == "a *** b"
    assert scrub("key sk-abcdefghijklmnopqrstu in text") == "key *** in text"
    assert scrub("Authorization: Bearer abc.def-ghijkl") == "Authorization: ***"
