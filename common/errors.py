"""User-facing errors: one clear sentence, no traceback.

This is the ground-floor errors module: every package (storage, corpus, agents, evaluation,
flows) raises :class:`UserError` subclasses from here; the CLI turns them into one line
and exit code 2.
"""
from __future__ import annotations


class UserError(Exception):
    """An expected failure caused by input or configuration; shown as one sentence."""


def format_error(exc: BaseException) -> str:
    msg = str(exc).strip() or type(exc).__name__
    return msg.splitlines()[0] if len(msg) > 400 else msg
