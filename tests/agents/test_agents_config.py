"""Config: defaults, precedence, validation, secrets never accepted or echoed."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents.config import EndpointConfig, LLMConfig, RoleConfig, Sampling
from agents.errors import LLMConfigError

EP = {"base_url": "http://127.0.0.1:1/v1", "model": "m"}


def test_reference_sampling_defaults_and_precedence():
    cfg = LLMConfig(endpoints={"a": EndpointConfig(**EP)},
                    roles={"judge": RoleConfig(kind="judge"),
                           "writer": RoleConfig(sampling=Sampling(temperature=0.3), model="big")})
    gen = cfg.resolve("question_generator")
    assert (gen.sampling.temperature, gen.sampling.top_p) == (0.8, 0.95)
    assert gen.model == "m" and gen.endpoint_name == "a" and gen.backend == "openai"
    judge = cfg.resolve("judge")
    assert judge.sampling.temperature == 0.0 and judge.sampling.top_p is None
    assert cfg.resolve("other", kind="judge").sampling.temperature == 0.0
    # step sampling overrides kind defaults; the role config overrides the step
    w = cfg.resolve("writer", step_sampling=Sampling(temperature=0.5, max_tokens=7))
    assert (w.sampling.temperature, w.sampling.top_p, w.sampling.max_tokens, w.model) == (0.3, 0.95, 7, "big")


def test_unknown_keys_forbidden_and_refs_checked():
    with pytest.raises(ValidationError):
        LLMConfig.model_validate({"endpoints": {"a": {**EP, "temprature": 1}}})
    with pytest.raises(ValidationError):
        LLMConfig.model_validate({"endpoints": {"a": EP}, "roles": {"r": {"endpoint": "nope"}}})
    with pytest.raises(ValidationError):
        LLMConfig.model_validate({"endpoints": {"a": EP}, "default_endpoint": "b"})


def test_api_key_env_must_be_a_name_and_is_not_echoed():
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
    with pytest.raises(ValidationError) as ei:
        EndpointConfig(**EP, api_key_env=key)
    assert key not in str(ei.value).split("input_value")[0]
    with pytest.raises(ValidationError):
        EndpointConfig(**EP, headers={"Authorization": "Bearer x"})
    ok = EndpointConfig(**EP, api_key_env="OPENAI_API_KEY", header_envs={"X-Org": "MY_ORG"})
    assert ok.api_key_env == "OPENAI_API_KEY"


def test_no_endpoint_is_an_explicit_error_and_offline_needs_none():
    cfg = LLMConfig()
    with pytest.raises(LLMConfigError, match="no LLM endpoint"):
        cfg.resolve("x")
    assert cfg.resolve("x", backend="offline").backend == "offline"
    assert LLMConfig(backend="offline").resolve("x").backend == "offline"
    assert LLMConfig(endpoints={"a": EndpointConfig(**EP)},
                     roles={"x": RoleConfig(backend="offline")}).resolve("x").backend == "offline"


def test_from_file_yaml(tmp_path):
    p = tmp_path / "llm.yaml"
    p.write_text("llm:\n  endpoints:\n    local: {base_url: 'http://127.0.0.1:8000/v1', model: q, "
                 "api_key_env: VLLM_KEY}\n  roles:\n    judge: {kind: judge}\n  budget: {max_tokens: 1000}\n"
                 "  cache: {scope: shared, dir: " + str(tmp_path / "c") + "}\n")
    cfg = LLMConfig.from_file(p)
    assert cfg.endpoints["local"].api_key_env == "VLLM_KEY" and cfg.budget.max_tokens == 1000
    assert cfg.cache.resolve_dir(None) == tmp_path / "c"
    p.write_text("endpoints: {local: {base_url: x, model: q, extra: 1}}\n")
    with pytest.raises(LLMConfigError, match="invalid LLM config"):
        LLMConfig.from_file(p)
