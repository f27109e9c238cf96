"""Secret handling: API keys are read from the environment at the last moment and scrubbed
from every string the LLM layer produces (exception messages, failure objects, log records,
``llm_calls`` rows, manifests).

Config objects only ever hold the *name* of an environment variable, so they are safe to
print, hash and save. The values read through :func:`read_secret` are remembered in a
process-wide registry and :func:`scrub` replaces each occurrence with ``***``.

A secret put where it does not belong is caught too: :func:`register_config_secrets` (run on
every LLM config before validation) registers every value under a key that looks like a
secret (:func:`is_secret_key`: key, token, secret, password, authorization, cookie,
credential) and the credentials of any ``user:pass@`` URL; :func:`redact` returns a copy of
a config / manifest dict with those values masked and URL credentials removed. Each
registered secret is also masked in its base64 and URL-encoded forms (a server that echoes a
Basic ``Authorization`` header echoes base64), and :func:`scrub` removes URL userinfo
wherever it appears.
"""
from __future__ import annotations

import base64
import logging
import os
import re
import threading
from typing import Any
from urllib.parse import quote, unquote, urlsplit

MASK = "***"
_MIN_LEN = 6
_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None

# Shapes of well-known keys, scrubbed even if never registered (e.g. echoed by a server).
_KEY_SHAPES = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9_\-\.=]{8,}")


# keys whose values are secrets; ``*_env`` / ``*_envs`` keys hold the NAMES of variables
# ("tokens", plural, is a count: max_tokens, prompt_tokens)
_SECRET_KEY = re.compile(r"key(?!word)|token(?!s)|secret|passw|pwd|authori[sz]|cookie|credential", re.I)
_NAME_KEY = re.compile(r"_envs?$", re.I)
# scheme://user[:password]@host
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/@\s'\"<>]+)@")


def is_secret_key(key: object) -> bool:
    """True for a mapping key whose value must be treated as a secret (see module docstring)."""
    k = str(key)
    return bool(_SECRET_KEY.search(k)) and not _NAME_KEY.search(k)


def _forms(value: str) -> set[str]:
    """``value`` and the encodings it may be echoed in (URL-encoded, base64)."""
    out = {value, quote(value, safe=""), unquote(value)}
    b64 = base64.b64encode(value.encode()).decode()
    out |= {b64, b64.rstrip("="), base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")}
    return {v for v in out if len(v) >= _MIN_LEN}


def register_secret(value: str | None) -> None:
    """Remember ``value`` (and its URL-encoded and base64 forms) so that :func:`scrub` masks it everywhere."""
    global _pattern
    if not value or len(value) < _MIN_LEN:
        return
    with _lock:
        new = _forms(value) - _secrets
        if not new:
            return
        _secrets.update(new)
        # longest first, so a key that contains another is masked whole
        alts = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in alts))


def register_url_credentials(url: str) -> None:
    """Register the ``user:password`` of a URL (also as the Basic-auth base64 of it)."""
    for m in _URL_USERINFO.finditer(url or ""):
        info = m.group("userinfo")
        user, _, password = info.partition(":")
        register_secret(info)
        register_secret(unquote(info))
        register_secret(f"{unquote(user)}:{unquote(password)}")
        register_secret(password)
        register_secret(unquote(password))


def register_config_secrets(data: Any) -> None:
    """Register every value under a secret-looking key and every URL credential in ``data``
    (any nesting of dicts, lists and strings), e.g. a raw config before it is validated."""
    if isinstance(data, dict):
        for k, v in data.items():
            if is_secret_key(k) and isinstance(v, str):
                register_secret(v)
            register_config_secrets(v)
            register_config_secrets(k)
    elif isinstance(data, (list, tuple, set)):
        for v in data:
            register_config_secrets(v)
    elif isinstance(data, str) and "@" in data:
        register_url_credentials(data)


def strip_url_credentials(text: str) -> str:
    """``text`` with the userinfo of every URL replaced by ``***``."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)


def redact(data: Any) -> Any:
    """A copy of ``data`` (dicts, lists, strings) for manifests and messages: values under
    secret-looking keys masked, URL credentials and registered secrets removed."""
    if isinstance(data, dict):
        return {k: MASK if is_secret_key(k) and isinstance(v, str) and v else redact(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact(v) for v in data]
    if isinstance(data, str):
        return scrub_known(strip_url_credentials(data))
    return data


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
    return strip_url_credentials(_KEY_SHAPES.sub(MASK, s))


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
