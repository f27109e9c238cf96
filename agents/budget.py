"""Token / money caps for one run.

Spend is counted on cache misses after each call returns (usage from the server, or a
chars/4 estimate when the server sends none). Before a new item starts, :meth:`Budget.check`
raises :class:`BudgetExceeded` once a cap is reached; calls already in flight (including
their retries and the repair retry) finish and are accounted, so the overshoot is bounded
by the concurrency. On a rerun of the same run, the session seeds the budget with what the
run's ``llm_calls`` already recorded, so a cap is a cap per run, not per process.
"""
from __future__ import annotations

import threading

from agents.config import BudgetConfig
from agents.errors import BudgetExceeded


class Budget:
    def __init__(self, config: BudgetConfig | None = None, *, spent_tokens: int = 0,
                 spent_usd: float = 0.0) -> None:
        cfg = config or BudgetConfig()
        self.max_tokens = cfg.max_tokens
        self.max_usd = cfg.max_usd
        self.spent_tokens = spent_tokens
        self.spent_usd = spent_usd
        self._lock = threading.Lock()
        self._reason: str | None = None

    def __repr__(self) -> str:
        return (f"Budget(tokens={self.spent_tokens}/{self.max_tokens}, "
                f"usd={self.spent_usd:.4f}/{self.max_usd})")

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_usd is not None

    def record(self, tokens: int, usd: float | None) -> None:
        with self._lock:
            self.spent_tokens += int(tokens)
            if usd:
                self.spent_usd += float(usd)

    def exceeded_reason(self) -> str | None:
        """Why the budget is spent, or None while calls may still start."""
        if self._reason:
            return self._reason
        if self.max_tokens is not None and self.spent_tokens >= self.max_tokens:
            self._reason = (f"token cap reached: {self.spent_tokens} tokens spent, "
                            f"cap {self.max_tokens}")
        elif self.max_usd is not None and self.spent_usd >= self.max_usd:
            self._reason = f"cost cap reached: ${self.spent_usd:.4f} spent, cap ${self.max_usd:.4f}"
        return self._reason

    def check(self) -> None:
        """Raise :class:`BudgetExceeded` when no new call may start."""
        reason = self.exceeded_reason()
        if reason:
            raise BudgetExceeded(reason)


def batch_allowance(config: BudgetConfig, spent_tokens: int, spent_usd: float, reserved: list[BudgetConfig],
                    free_slots: int) -> BudgetConfig:
    """What one of ``free_slots`` batches about to start at once may spend, when batches run in parallel
    processes that cannot see each other's spend: an equal share of what the run's caps leave after the
    spend recorded so far and the allowances of the batches still running (``reserved``). The shares never
    add up to more than the caps, so parallel batches cannot overshoot the run's budget together (a batch
    that needs more than its share stops early; a rerun resumes it). A cap that is not set stays unset."""
    n = max(1, int(free_slots))

    def left(cap, spent, taken):
        if cap is None:
            return None
        return max(0.0, cap - spent - sum(t for t in taken if t is not None)) / n
    tokens = left(config.max_tokens, spent_tokens, [r.max_tokens for r in reserved])
    usd = left(config.max_usd, spent_usd, [r.max_usd for r in reserved])
    return BudgetConfig(max_tokens=None if tokens is None else int(tokens), max_usd=usd)
