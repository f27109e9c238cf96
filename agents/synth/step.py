"""What the synthesis agents share: :class:`SynthStep`, the base of their LLM steps (the step's attributes
given as class keywords), and :meth:`SynthStep.turn_update`, a graph node's call of its step for the turn
(run it, add its usage to the turn's, record a failed call as the turn's error)."""
from __future__ import annotations

from typing import Any, Callable

from pydantic import BaseModel

from agents.config import RoleKind
from agents.results import StepResult
from agents.steps import LLMStep
from agents.synth.state import ConvState, GraphContext, error_record, item_id, usage_add


class SynthStep(LLMStep):
    """An LLM step of the synthesis graph; its attributes (:class:`~agents.steps.LLMStep`) are class keywords::

        class Answerer(SynthStep, name="answerer", kind="generation", prompt_version="answerer-v3",
                       output_model=AnswerOut, expected_output_tokens=400):

    A keyword left out keeps the inherited value.
    """

    def __init_subclass__(cls, *, name: str | None = None, kind: RoleKind | None = None,
                          prompt_version: str | None = None, output_model: type[BaseModel] | None = None,
                          expected_output_tokens: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        given = {"name": name, "kind": kind, "prompt_version": prompt_version, "output_model": output_model,
                 "expected_output_tokens": expected_output_tokens}
        for attr, value in given.items():
            if value is not None:
                setattr(cls, attr, value)

    async def turn_update(self, ctx: GraphContext, state: ConvState, x: dict, tag: str,
                          ok: Callable[[Any], dict],
                          failed: Callable[[StepResult], dict | None] | None = None) -> dict:
        """Run this step on ``x`` as the turn's call ``tag`` (item id :func:`~agents.synth.state.item_id`) and
        return the state update: the turn's usage with this call's added, plus ``ok(output)``; for a failed
        call, ``failed(result)`` when that gives an update, else the failure as the turn's ``turn_error``."""
        res = await ctx.llm.run(self, x, item_id=item_id(state, tag))
        upd: dict = {"turn_usage": usage_add(state, res)}
        if res.ok:
            return {**upd, **ok(res.output)}
        other = failed(res) if failed is not None else None
        return {**upd, **(other if other is not None else {"turn_error": error_record(self.name, res)})}
