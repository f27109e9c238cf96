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


# -- the mechanism of issue #52 item 1: taint at the source, refuse misplaced keys, one
# -- serialization, one log filter (the end-to-end property: tests/reliability/test_secrets_taint.py)
MODEL_IDS = ["qwen2.5-7b-instruct", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "gpt-4o-mini-2024-07-18",
             "ft:gpt-4o-mini-2024-07-18:my-org::9abcDEFg", "claude-3-5-sonnet-20241022", "Qwen2.5-72B-Instruct-AWQ",
             "llama3.1:8b-instruct-q4_K_M", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "OPENAI_API_KEY",
             "AZURE_OPENAI_API_KEY_PROD_EASTUS2", "question_generator", "sentence-transformers/all-MiniLM-L6-v2",
             "/root/.cache/huggingface/hub/models--x/snapshots/7dbbc90392e2f80f3d3c277d6e90027e55de9125",
             "http://127.0.0.1:8000/v1", "anthropic.claude-3-5-sonnet-20240620-v1:0"]
KEYS = ["gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3", "xai-Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3Qp", "sk-proj-Zq8Lm2Vx9Tb4Nc7Rw1Ys5",
        "AKIAZ7Q2M4X9T1B6C3D8", "ghp_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3Qp0Hj2", "hf_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3Qp0Hj",
        "AIzaSyZq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3Qp0Hj2", "Bearer Zq8Lm2Vx9Tb4Nc7", "Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3Qp",
        "3f9a1c7e5b2d4f8a0c6e9b1d3f5a7c9e"]


@pytest.mark.parametrize("value", KEYS)
def test_key_shapes_by_prefix_or_entropy(value):
    from agents.secrets import key_shape
    assert key_shape(value) in ("a known key prefix", "a high-entropy token")


@pytest.mark.parametrize("value", MODEL_IDS)
def test_model_ids_names_and_paths_are_not_keys(value):
    from agents.secrets import key_shape
    assert key_shape(value) is None


def test_headers_and_url_credentials_are_secrets_in_every_dump():
    from agents.secrets import Secret, SecretURL, public
    ep = EndpointConfig(base_url="http://al:pw-Zx81Hunter@127.0.0.1:1/v1?key=gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3&v=2",
                        model="m", headers={"X-Auth": "s3ss10n-Zq8Lm2Vx", "X-Team": "retrieval"})
    assert isinstance(ep.base_url, SecretURL) and all(isinstance(v, Secret) for v in ep.headers.values())
    dumps = [repr(ep), str(ep), ep.model_dump_json(), str(ep.model_dump(mode="json")), str(public(ep))]
    for text in dumps:
        for secret in ("pw-Zx81Hunter", "gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3", "s3ss10n-Zq8Lm2Vx", "retrieval"):
            assert secret not in text
    assert public(ep)["base_url"] == "http://***@127.0.0.1:1/v1?key=***&v=***"
    assert public(ep)["headers"] == {"X-Auth": "***", "X-Team": "***"}
    # revealed for the HTTP client only; a python dump keeps the objects, so a config round-trips
    assert ep.base_url.connect_url() == "http://al:pw-Zx81Hunter@127.0.0.1:1/v1"
    assert ep.base_url.query() == {"key": "gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3", "v": "2"}
    assert EndpointConfig.model_validate(ep.model_dump()) == ep
    # registered for masking: by slot (userinfo, secret names) or by shape; a plain value is only kept out of dumps
    assert scrub("pw-Zx81Hunter s3ss10n-Zq8Lm2Vx gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3") == "*** *** ***"
    assert scrub("retrieval") == "retrieval"


def test_a_query_in_base_url_becomes_request_parameters(fake_llm, make_config, qa_step, tmp_path):
    cfg = make_config(fake_llm, endpoint={"base_url": fake_llm.base_url + "?key=gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3"})

    async def main():
        async with LLMSession(cfg, store=tmp_path / "run") as llm:
            return await llm.run(qa_step(), "q")
    assert asyncio.run(main()).ok
    assert fake_llm.paths == ["/v1/chat/completions?key=gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3"]


@pytest.mark.parametrize("endpoint,field", [
    ({"api_key_env": "gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3"}, "api_key_env"),
    ({"header_envs": {"X-Org": "xai-Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3Qp"}}, "header_envs"),
    ({"model": "Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3Qp"}, "model"),
])
def test_a_key_in_a_name_field_is_refused_unechoed(endpoint, field, tmp_path):
    import json
    from agents.errors import LLMConfigError
    p = tmp_path / "llm.yaml"
    p.write_text(json.dumps({"endpoints": {"a": {"base_url": "http://h/v1", "model": "m", **endpoint}}}))
    with pytest.raises(LLMConfigError) as ei:
        LLMConfig.from_file(p)
    value = next(iter(endpoint[field].values())) if isinstance(endpoint[field], dict) else endpoint[field]
    assert field in str(ei.value) and value not in str(ei.value) and "\n" not in str(ei.value)
    assert scrub(f"echo {value}") == "echo ***"      # registered as it was read


def test_public_is_the_one_serialization_and_its_digest_ignores_nothing_public():
    from agents.secrets import public, public_digest
    a = LLMConfig(endpoints={"a": EndpointConfig(base_url="http://h/v1", model="m", headers={"X-Auth": "one-Zq8Lm2"})})
    b = LLMConfig(endpoints={"a": EndpointConfig(base_url="http://h/v1", model="m2", headers={"X-Auth": "one-Zq8Lm2"})})
    assert a.public_dict() == public(a) and a.digest() == public_digest(a) and a.digest() != b.digest()
    assert public({"password": "x1234567", "nested": [{"token": "y1234567"}], "url": "https://u:p12345@h/x?sig=abc"}) \
        == {"password": "***", "nested": [{"token": "***"}], "url": "https://***@h/x?sig=***"}


def test_one_filter_masks_every_record_of_root_prefect_and_rich(caplog):
    from agents.secrets import MASKED_LOGGERS, SecretMaskingFilter, install_secret_masking, register_secret
    install_secret_masking()
    for name in MASKED_LOGGERS:
        assert any(isinstance(f, SecretMaskingFilter) for f in logging.getLogger(name).filters)
    register_secret("masked-in-logs-9Qz")
    caplog.set_level(logging.INFO)
    b64 = "bWFza2VkLWluLWxvZ3MtOVF6"
    for name in ("prefect.mtr_test", "rich", "some.library"):
        logging.getLogger(name).info("value %s, encoded %s, url %s", "masked-in-logs-9Qz", b64,
                                     "http://h/v1?key=masked-in-logs-9Qz")
    assert "masked-in-logs-9Qz" not in caplog.text and b64 not in caplog.text
    assert caplog.text.count("***") == 9
