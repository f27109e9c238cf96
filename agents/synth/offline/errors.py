"""The offline questioner's selection misses: not broken calls, but shown passages without material.

:func:`agents.synth.questioner.node` counts them apart (``_SELECTION_MISSES``), so the next attempt is shown other
passages of the pool (:func:`agents.synth.turn.select`) without using up the turn's attempts.
"""
from __future__ import annotations

from agents.synth.state import THREAD_LOOKS

__all__ = ["NothingToAsk", "NoThread", "THREAD_LOOKS"]


class NothingToAsk(ValueError):
    """Nothing left to ask of the shown passages: every candidate repeats an earlier turn or was rejected. The
    next attempt's selection shows other passages of the pool; after ``max_attempts`` the turn is recorded failed
    with the reason."""


class NoThread(NothingToAsk):
    """No follow-up in the shown passages leans on the conversation: the questioner looks at other passages before
    it asks one in full (people's follow-ups stay on the thread). Counted in ``thread_looks``, which uses up none of
    the turn's attempts; raised at most ``THREAD_LOOKS`` times a turn."""
