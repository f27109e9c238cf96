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


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """Mask secrets in a log record's message (and pre-format a scrubbed traceback)."""
    try:
        msg = record.getMessage()
    except Exception:  # pragma: no cover - a broken record is not ours to fix
        return record
    clean = scrub(msg)
    if clean != msg:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
    return record


def scrub_known(text: str | None) -> str | None:
    """Mask registered secrets only (for model outputs: key-shaped text may be legitimate)."""
    pat = _pattern
    if text is None or pat is None:
        return text
    return pat.sub(MASK, text)


class ScrubFilter(logging.Filter):
    """A logging filter that masks secrets (for handlers configured elsewhere)."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003
        scrub_record(record)
        return True


_installed = False


def install_log_scrubbing() -> None:
    """Scrub every log record of the process (any logger, any handler) from now on.

    Implemented as a wrapper of the log-record factory: logger-level filters would miss
    child loggers (``mtr.agents.client``, ``httpcore2.http11`` ...) and handlers added later.
    Records below a logger's level are never created, so the cost is paid only by records
    that are emitted.
    """
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        return scrub_record(previous(*args, **kwargs))

    logging.setLogRecordFactory(factory)
    _installed = True
