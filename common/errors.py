"""User-facing errors: one clear sentence, no traceback.

This is the ground-floor errors module: every package (storage, corpus, agents, evaluation,
flows) raises :class:`UserError` subclasses from here; the CLI turns them into one line
and exit code 2.
"""
from __future__ import annotations

import os
import stat

from common.text import visible


class UserError(Exception):
    """An expected failure caused by input or configuration; shown as one sentence."""


def format_error(exc: BaseException) -> str:
    msg = str(exc).strip() or type(exc).__name__
    return msg.splitlines()[0] if len(msg) > 400 else msg


def path_problem(path, want: str = "file") -> str | None:
    """Why ``path`` cannot be used as a ``want`` ("file" or "directory"), as the end of a sentence
    ("does not exist", "is a directory, not a file" ...), or None when it can."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "is a symbolic link to a missing file" if os.path.islink(path) else "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if want == "file":
        if stat.S_ISREG(st.st_mode):
            return None
        return "is a directory, not a file" if stat.S_ISDIR(st.st_mode) else "is not a regular file"
    if stat.S_ISDIR(st.st_mode):
        return None
    return "is a file, not a directory" if stat.S_ISREG(st.st_mode) else "is not a directory"


def require_file(path, what: str, error: type[Exception] = UserError) -> None:
    """Raise ``error("<what> <path> <problem>")`` unless ``path`` is an existing regular file."""
    problem = path_problem(path, "file")
    if problem is not None:
        raise error(f"{what} {path} {problem}")


def require_visible(name: str, what: str) -> None:
    """Raise ``UserError`` when ``name`` shows nothing once its invisible characters (zero-width
    spaces, format characters, white space) are removed."""
    if not visible(name):
        raise UserError(f"{what} {name!r} is empty once invisible characters (zero-width spaces, format "
                        f"characters) are removed; give a visible {what}")
