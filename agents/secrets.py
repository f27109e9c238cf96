"""Secret handling: API keys are read from the environment at the last moment and scrubbed
from every string the LLM layer produces (exception messages, failure objects, log records,
``llm_calls`` rows, manifests).

Config objects only ever hold the *name* of an environment variable, so they are safe to
print, hash and save. The values read through :func:`read_secret` are remembered in a
process-wide registry and :func:`scrub` replaces each occurrence with ``***``.
"""
from __future__ import annotations

import logging
import os
import re
import threading

MASK = "***"
_MIN_LEN = 6
_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None

# Shapes of well-known keys, scrubbed even if never registered (e.g. echoed by a server).
_KEY_SHAPES = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9_\-\.=]{8,}")


def register_secret(value: str | None) -> None:
    """Remember ``value`` so that :func:`scrub` masks it everywhere."""
    global _pattern
    if not value or len(value) < _MIN_LEN:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        # longest first, so a key that contains another is masked whole
        alts = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in alts))


def read_secret(env_var: str) -> str | None:
    """The value of ``env_var`` (registered for scrubbing), or None when unset/empty."""
    value = os.environ.get(env_var) or None
    register_secret(value)
    return value


def scrub(text: object) -> str:
    """``text`` as a string with every registered secret and key-shaped token masked."""
    s = text if isinstance(text, str) else str(text)
    pat = _pattern
    if pat is not None:
        s = pat.sub(MASK, s)
    return _KEY_SHAPES.sub(MASK, s)


class ScrubFilter(logging.Filter):
    """A logging filter that masks secrets in the formatted message of each record."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003
        try:
            msg = record.getMessage()
        except Exception:  # pragma: no cover - a broken record is not ours to fix
            return True
        clean = scrub(msg)
        if clean != msg or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            # tracebacks are formatted later from exc_info; keep only a scrubbed text
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


_FILTER = ScrubFilter()
_installed = False


def install_log_scrubbing() -> None:
    """Attach the scrub filter to the loggers the LLM layer and its HTTP stack write to."""
    global _installed
    if _installed:
        return
    for name in ("mtr.agents", "openai", "httpx2", "httpx", "httpcore"):
        logging.getLogger(name).addFilter(_FILTER)
    _installed = True
