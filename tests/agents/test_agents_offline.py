"""The step abstraction and the explicit offline backend hook."""
from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from agents.accounting import read_calls
from agents.config import LLMConfig, RoleConfig
from agents.errors import LLMConfigError, OfflineBackendMissing
from agents.session import LLMSession, run_batch
from agents.steps import LLMStep, StepDefinitionError
from storage.store import RunStore


class Verdict(BaseModel):
    faithful: bool
    reason: str


class JudgeFaithfulness(LLMStep):
    name = "judge_faithfulness"
    kind = "judge"
    prompt_version = "faithfulness-v1"
    output_model = Verdict

    def build_messages(self, x):
        return [{"role": "system", "content": "You are a strict judge."},
                {"role": "user", "content": f"Passage: {x['passage']}\nAnswer: {x['answer']}"}]

    def offline(self, x):
        return Verdict(faithful=x["answer"] in x["passage"], reason="substring check")


PAIRS = [{"passage": "BM25 is a ranking function", "answer": "ranking function"},
         {"passage": "BM25 is a ranking function", "answer": "a neural model"}]


def test_offline_subclass_selected_by_session(tmp_path, fake_llm):
    batch = run_batch(LLMConfig(), JudgeFaithfulness(), PAIRS, store=tmp_path / "run", backend="offline",
                      item_ids=["p1", "p2"])
    assert [r.output.faithful for r in batch.items] == [True, False]
    r = batch.items[0]
    assert r.backend == "offline" and r.model.startswith("offline:judge_faithfulness")
    assert r.raw_prompt[1]["content"].startswith("Passage: BM25") and r.prompt_version == "faithfulness-v1"
    assert r.raw_output == r.output.model_dump_json() and r.usage.total_tokens == 0
    rows = read_calls(RunStore(str(tmp_path / "run"))).to_pylist()
    assert [(x["backend"], x["purpose"], x["item_id"], x["cost_usd"]) for x in rows] == \
        [("offline", "offline", "p1", 0.0), ("offline", "offline", "p2", 0.0)]
    assert fake_llm.count == 0


def test_offline_selected_per_role_in_config(fake_llm, make_config, qa_step):
    cfg = make_config(fake_llm, roles={"qa": RoleConfig(backend="offline")})
    batch = run_batch(cfg, qa_step(), ["x"])
    assert batch.items[0].backend == "offline" and batch.items[0].output.answer == "offline x"
    batch = run_batch(cfg, qa_step(name="other", role="other"), ["x"])   # other roles stay online
    assert batch.items[0].backend == "openai" and fake_llm.count == 1


def test_offline_without_implementation_is_an_explicit_error():
    step = LLMStep(name="s", output_model=Verdict, build_messages=lambda x: [{"role": "user", "content": x}])
    assert not step.has_offline and JudgeFaithfulness().has_offline
    with pytest.raises(OfflineBackendMissing, match="no offline implementation"):
        run_batch(LLMConfig(backend="offline"), step, ["x"])
    with pytest.raises(LLMConfigError, match="no LLM endpoint"):
        run_batch(LLMConfig(), step, ["x"])        # openai selected, nothing configured: no fallback


def test_offline_errors_are_failures_not_placeholders():
    step = LLMStep(name="s", output_model=Verdict, build_messages=lambda x: [{"role": "user", "content": x}],
                   offline=lambda x: {"faithful": "maybe?"})
    r = run_batch(LLMConfig(), step, ["x"], backend="offline").items[0]
    assert not r.ok and r.failure.kind == "offline_error" and r.raw_output is None
    assert r.failure.error_class == "ValidationError"


def test_step_definition_checks():
    with pytest.raises(StepDefinitionError, match="no output_model"):
        LLMStep(name="s")
    with pytest.raises(StepDefinitionError, match="unknown step attribute"):
        LLMStep(name="s", output_model=Verdict, temprature=1)
    bad = LLMStep(name="s", output_model=Verdict, build_messages=lambda x: [{"role": "robot", "content": x}],
                  offline=lambda x: Verdict(faithful=True, reason=""))
    with pytest.raises(StepDefinitionError, match="malformed message"):
        run_batch(LLMConfig(), bad, ["x"], backend="offline")


def test_custom_parser_and_result_row(fake_llm, make_config):
    from agents.testing.fake_server import Reply
    fake_llm.script(Reply.text("YES because it says so"))
    step = LLMStep(name="yn", kind="judge", output_model=Verdict,
                   build_messages=lambda x: [{"role": "user", "content": x}],
                   parse=lambda text, x: Verdict(faithful=text.startswith("YES"), reason=text))

    async def main():
        async with LLMSession(make_config(fake_llm)) as llm:
            return await llm.run(step, "q", item_id="i1")
    r = asyncio.run(main())
    assert r.ok and r.output.faithful and r.unwrap() is r.output
    row = r.to_row()
    assert row["ok"] and row["item_id"] == "i1" and row["backend"] == "openai" and '"faithful":true' in row["output_json"]
