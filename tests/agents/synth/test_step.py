"""The synthesis steps' base (agents/synth/step.py): attributes as class keywords, and the node's call of
a step for the turn (usage added, a failed call recorded as the turn's error or handled by the node)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from pydantic import BaseModel

from agents.results import LLMFailure, StepResult, Usage
from agents.synth.answerer import Answerer
from agents.synth.step import SynthStep


class Out(BaseModel):
    text: str


class Echo(SynthStep, name="echo", kind="judge", prompt_version="echo-v1", output_model=Out,
           expected_output_tokens=7):
    def build_messages(self, x: dict) -> list[dict]:
        return [{"role": "user", "content": x["text"]}]


class Louder(Echo, prompt_version="echo-v2"):
    """A subclass keeps what it does not give again."""


def test_class_keywords_are_the_step_attributes_and_are_inherited():
    e, lo = Echo(), Louder()
    assert (e.name, e.role, e.kind, e.prompt_version, e.output_model, e.expected_output_tokens) == (
        "echo", "echo", "judge", "echo-v1", Out, 7)
    assert (lo.name, lo.kind, lo.prompt_version, lo.output_model) == ("echo", "judge", "echo-v2", Out)
    a = Answerer()
    assert (a.name, a.kind, a.prompt_version, a.expected_output_tokens) == ("answerer", "generation", "answerer-v4", 400)


def _result(ok: bool) -> StepResult:
    return StepResult(step="echo", role="echo", backend="offline", prompt_version="echo-v1", model="m", endpoint=None,
                      raw_prompt=(), raw_output="raw", output=Out(text="hi") if ok else None,
                      failure=None if ok else LLMFailure("invalid_output", "bad json"),
                      usage=Usage(prompt_tokens=3, completion_tokens=2))


def _update(ok: bool, failed=None) -> tuple[dict, list]:
    seen: list = []

    async def run(step, x, item_id=None):
        seen.append((step.name, x, item_id))
        return _result(ok)
    ctx = SimpleNamespace(llm=SimpleNamespace(run=run))
    state = {"conv_id": "c1", "turn": 2, "attempt": 1, "turn_usage": {"prompt_tokens": 10, "completion_tokens": 1}}
    upd = asyncio.run(Echo().turn_update(ctx, state, {"text": "x"}, "e", lambda out: {"said": out.text}, failed))
    return upd, seen


def test_turn_update_adds_the_usage_and_the_output_update():
    upd, seen = _update(True)
    assert seen == [("echo", {"text": "x"}, "c1:2:e1")]
    assert upd["said"] == "hi"
    assert (upd["turn_usage"]["prompt_tokens"], upd["turn_usage"]["completion_tokens"]) == (13, 3)
    assert "turn_error" not in upd


def test_a_failed_call_is_the_turn_error_unless_the_node_handles_it():
    upd, _ = _update(False)
    assert upd["turn_error"] == {"step": "echo", "kind": "invalid_output", "message": "bad json", "raw_output": "raw"}
    assert upd["turn_usage"]["prompt_tokens"] == 13
    upd, _ = _update(False, failed=lambda res: {"feedback": res.failure.message})
    assert upd == {"turn_usage": upd["turn_usage"], "feedback": "bad json"}
    upd, _ = _update(False, failed=lambda res: None)      # None: not handled, the turn's error after all
    assert "turn_error" in upd
