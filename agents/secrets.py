"""Secret handling: every credential is tainted at the source and masked everywhere it could go.

One mechanism, four parts:

1. **Taint at the source.** A credential becomes a :class:`Secret` (a pydantic ``SecretStr``
   that shows ``***``) the moment it is read: API keys and secret header values read from the
   environment (:func:`read_secret`), every header value of an LLM endpoint, and the userinfo
   and query values of its ``base_url`` (:class:`SecretURL`). Creating a secret registers its
   value, with its URL-encoded and base64 forms, in a process-wide registry.
2. **Refusal of misplaced keys.** A value that looks like a key (:func:`key_shape`: a known key
   prefix such as ``sk-``, ``gsk_``, ``xai-``, ``AKIA``, ``ghp_``, ``hf_``, ``AIza``, ``Bearer``,
   or a long random-looking token by its Shannon entropy) in a field that holds a name, a model
   id, a path or an environment variable NAME is refused when the config is read
   (:func:`refuse_key_like`), before any stage runs, and never echoed (it is registered first).
3. **One serialization.** :func:`public` is the only way a config reaches a file, a Prefect
   parameter, a log or a message: secrets as ``***``, URL credentials and query values masked,
   values under secret-looking keys (:func:`is_secret_key`) masked, registered secrets removed.
   :func:`public_digest` is its hash (what a flow run carries instead of an LLM config).
4. **One log filter.** :func:`install_secret_masking` puts :class:`SecretMaskingFilter` on the
   root, ``prefect`` and ``rich`` loggers and wraps the log-record factory with it, so that every
   record of any logger is masked when it is created (:func:`scrub`): registered secrets in all
   their forms, key-shaped tokens, URL userinfo and secret query parameters.
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from pydantic import BaseModel, SecretStr
from pydantic_core import SchemaSerializer, core_schema, to_jsonable_python

from agents.key_shapes import PREFIX_SHAPES, key_shape, looks_like_key

MASK = "***"
_MIN_LEN = 6
_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None

# keys whose values are secrets; ``*_env`` / ``*_envs`` keys hold the NAMES of variables
# ("tokens", plural, is a count: max_tokens, prompt_tokens; "author" is no auth)
_SECRET_KEY = re.compile(r"key(?!word)|token(?!s)|secret|passw|pwd|auth(?!or)|cookie|credential|session|"
                         r"signature|(?:^|[-_])sig(?:$|[-_])|^code$|private|cert", re.I)
_NAME_KEY = re.compile(r"_envs?$", re.I)
# scheme://user[:password]@host
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/@\s'\"<>]+)@")
# ?key=... / &access_token=... in any URL of a text
_URL_SECRET_PARAM = re.compile(r"(?P<name>[?&](?:[A-Za-z0-9_.\-]*(?:key|token|secret|passw|auth|sig|signature|"
                               r"credential|session)[A-Za-z0-9_.\-]*|code)=)[^&#\s'\"<>]+", re.I)


def is_secret_key(key: object) -> bool:
    """True for a mapping key (a field, header or query parameter name) whose value must be
    treated as a secret: key, token, secret, password, auth, cookie, credential, session,
    signature ... but not ``*_env(s)`` (those hold variable NAMES)."""
    k = str(key)
    return bool(_SECRET_KEY.search(k)) and not _NAME_KEY.search(k)


# -- the registry --------------------------------------------------------------------------------
def _forms(value: str) -> set[str]:
    """``value`` and the encodings it may be echoed in (URL-encoded, base64)."""
    out = {value, quote(value, safe=""), quote(value), unquote(value)}
    for v in list(out):
        b = v.encode()
        out |= {base64.b64encode(b).decode(), base64.b64encode(b).decode().rstrip("="),
                base64.urlsafe_b64encode(b).decode().rstrip("=")}
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
    """Register every value under a secret-looking key, every key-shaped value and every URL
    credential in ``data`` (any nesting of dicts, lists and strings), e.g. a raw config before
    it is validated: whatever the validation then says, none of these is echoed."""
    if isinstance(data, dict):
        for k, v in data.items():
            if is_secret_key(k) and isinstance(v, str):
                register_secret(v)
            register_config_secrets(v)
            register_config_secrets(k)
    elif isinstance(data, (list, tuple, set)):
        for v in data:
            register_config_secrets(v)
    elif isinstance(data, str):
        if "@" in data:
            register_url_credentials(data)
        if "?" in data and "://" in data:
            for k, v in parse_qsl(urlsplit(data).query, keep_blank_values=True):
                register_secret(v)
        if looks_like_key(data):
            register_secret(data)


class KeyInPlainField(ValueError):
    """A value that looks like a key in a field that must not hold one (never echoes the value)."""


def refuse_key_like(data: Any, where: str = "", *, skip: tuple[str, ...] = (), depth: int | None = None) -> None:
    """Raise :class:`KeyInPlainField` for the first string in ``data`` (keys of mappings included)
    that looks like a key (:func:`key_shape`) or holds URL credentials. ``skip`` names the
    top-level fields that are credential slots; ``depth`` (e.g. 2 for a model whose nested
    models check themselves) stops the walk at that nesting. The value is registered first, so
    no error, log or traceback can echo it; the message names the field, never the value."""
    def fail(path: str, why: str, value: str) -> None:
        register_config_secrets(value)
        register_secret(value)
        raise KeyInPlainField(f"{path or 'a value'} holds what looks like a secret ({why}); a config never holds "
                              "a key: keep it in an environment variable and name that variable (api_key_env / "
                              "header_envs)")

    def walk(x: Any, path: str, level: int) -> None:
        if isinstance(x, str):
            why = key_shape(x)
            if why:
                fail(path, why, x)
            if _URL_USERINFO.search(x):
                fail(path, "a URL with credentials, user:password@", x)
            return
        if depth is not None and level >= depth:
            return
        if isinstance(x, dict):
            for k, v in x.items():
                if level == 0 and k in skip:
                    continue
                why = key_shape(k)
                if why:
                    fail(f"a name in {path}" if path else "a name", why, str(k))
                walk(v, f"{path}.{k}" if path else str(k), level + 1)
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]", level + 1)
    walk(data, where, 0)


# -- tainted values ------------------------------------------------------------------------------
_SECRET_SER = core_schema.plain_serializer_function_ser_schema(
    lambda v, info: MASK if info.mode == "json" else v, info_arg=True, when_used="unless-none")


class Secret(SecretStr):
    """A credential: ``***`` in ``str``, ``repr`` and JSON dumps (``model_dump()`` keeps the
    object, so a config round-trips). Creating one registers its value for masking in every log
    record and message (:func:`scrub`); ``register=False`` (a header value that neither its name
    nor its shape marks as a credential) only keeps it out of dumps."""

    def __init__(self, secret_value: str, *, register: bool = True) -> None:
        super().__init__(secret_value)
        if register:
            register_secret(secret_value)

    def _display(self) -> str:
        return MASK

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        schema = super().__get_pydantic_core_schema__(source, handler)
        for part in ("lax_schema", "strict_schema"):    # JSON dumps say ***, python dumps keep the object
            schema[part]["serialization"] = _SECRET_SER   # type: ignore[index]
        return schema

    __pydantic_serializer__ = SchemaSerializer(core_schema.any_schema(serialization=_SECRET_SER))


def credential(name: object, value: str) -> Secret:
    """``value`` of a header or query parameter ``name`` as a :class:`Secret`, registered for
    masking when its name or its shape marks it as a credential."""
    return Secret(value, register=is_secret_key(name) or looks_like_key(value))


class SecretURL:
    """A URL whose userinfo and query values are secrets. ``str``, ``repr`` and JSON dumps give
    the public form (``http://***@host/v1?key=***``); the HTTP client alone gets
    :meth:`connect_url` (userinfo kept, no query: credentials in the URL are sent as Basic auth)
    and :meth:`query` (sent as request query parameters, so paths stay well-formed)."""

    __slots__ = ("_url", "_userinfo", "_query", "_bare", "_public")

    def __init__(self, url: "str | SecretURL") -> None:
        if isinstance(url, SecretURL):
            url = url.get_secret_value()
        parts = urlsplit(url)
        userinfo, at, hostport = parts.netloc.rpartition("@")
        self._url = url
        self._userinfo = None
        if at:
            register_url_credentials(url)
            self._userinfo = Secret(userinfo)
        self._query = tuple((k, credential(k, v)) for k, v in parse_qsl(parts.query, keep_blank_values=True))
        self._bare = urlunsplit((parts.scheme, hostport, parts.path, "", ""))
        self._public = urlunsplit((parts.scheme, f"{MASK}@{hostport}" if at else hostport, parts.path,
                                   "&".join(f"{k}={MASK}" for k, _ in self._query), ""))

    def get_secret_value(self) -> str:
        """The URL as configured."""
        return self._url

    def connect_url(self) -> str:
        """The URL for the HTTP client: userinfo kept, no query, no fragment."""
        parts = urlsplit(self._url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))

    def query(self) -> dict[str, str]:
        """The query parameters, revealed (for ``default_query`` / ``params``)."""
        return {k: v.get_secret_value() for k, v in self._query}

    @property
    def bare(self) -> str:
        """The URL without credentials and without the query (for messages and tables)."""
        return self._bare

    @property
    def public(self) -> str:
        return self._public

    def __str__(self) -> str:
        return self._public

    def __repr__(self) -> str:
        return f"SecretURL({self._public!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretURL) and other._url == self._url

    def __hash__(self) -> int:
        return hash(self._url)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        from_str = core_schema.no_info_after_validator_function(cls, core_schema.str_schema())
        return core_schema.json_or_python_schema(
            json_schema=from_str,
            python_schema=core_schema.union_schema([core_schema.is_instance_schema(cls), from_str]),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda v, info: v.public if info.mode == "json" else v, info_arg=True))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string", "format": "uri"}


def read_secret(env_var: str) -> Secret | None:
    """The value of ``env_var`` as a :class:`Secret` (registered for masking), or None when unset/empty."""
    value = os.environ.get(env_var) or None
    return Secret(value) if value else None


# -- the one serialization -----------------------------------------------------------------------
def public(data: Any) -> Any:
    """The redacted, JSON-able form of a config (a pydantic model, or dicts / lists / strings of
    one): the ONLY form written to manifests, Prefect parameters, logs and messages. Secrets and
    values under secret-looking keys are ``***``, URL credentials and query values masked,
    registered secrets removed."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    elif isinstance(data, (Secret, SecretStr)):
        return MASK
    elif isinstance(data, SecretURL):
        return data.public
    if isinstance(data, dict):
        return {(k if isinstance(k, str) else str(k)): MASK if is_secret_key(k) and isinstance(v, (str, SecretStr)) and v
                else public(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [public(v) for v in data]
    if isinstance(data, str):
        return PREFIX_SHAPES.sub(MASK, scrub_known(_mask_url_secrets(data)) or "")
    if isinstance(data, (int, float, bool)) or data is None:
        return data
    return public(to_jsonable_python(data))


redact = public   # the name used before the mechanism had one function


def public_digest(data: Any) -> str:
    """A 16-hex digest of :func:`public` ``(data)`` (what a flow run carries instead of a config)."""
    return hashlib.sha256(json.dumps(public(data), sort_keys=True).encode()).hexdigest()[:16]


# -- masking text --------------------------------------------------------------------------------
def strip_url_credentials(text: str) -> str:
    """``text`` with the userinfo of every URL replaced by ``***``."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)


def _mask_url_secrets(text: str) -> str:
    """URL userinfo and secret-named query parameters of every URL in ``text`` masked."""
    text = strip_url_credentials(text)
    if "=" in text:
        text = _URL_SECRET_PARAM.sub(lambda m: m.group("name") + MASK, text)
    return text


def scrub(text: object) -> str:
    """``text`` as a string with every registered secret, key-shaped token, URL userinfo and
    secret query parameter masked."""
    s = text if isinstance(text, str) else str(text)
    pat = _pattern
    if pat is not None:
        s = pat.sub(MASK, s)
    return _mask_url_secrets(PREFIX_SHAPES.sub(MASK, s))


def scrub_known(text: str | None) -> str | None:
    """Mask registered secrets only (for model outputs: key-shaped text may be legitimate)."""
    pat = _pattern
    if text is None or pat is None:
        return text
    return pat.sub(MASK, text)


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
    elif record.exc_text:
        record.exc_text = scrub(record.exc_text)
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
    return record


class SecretMaskingFilter(logging.Filter):
    """The one logging filter: masks every registered secret (and its base64 / URL-encoded
    forms), key-shaped tokens and URL credentials in a record, then lets it through."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003
        scrub_record(record)
        return True


ScrubFilter = SecretMaskingFilter   # the name used before
_FILTER = SecretMaskingFilter()
_installed = False
MASKED_LOGGERS = ("", "prefect", "rich")


def install_secret_masking() -> None:
    """Mask secrets in every log record of the process from now on (idempotent).

    The filter goes on the root, ``prefect`` and ``rich`` loggers (records handed to them
    directly, e.g. from another process), and the log-record factory is wrapped with it: a
    logger-level filter alone misses child loggers (``mtr.agents.client``, ``prefect.task_runs``
    ...), while every record is created by the factory, so every handler (Prefect's API handler
    included, whenever it was added) only ever sees masked records. Handlers keep their own
    filters untouched. Records below a logger's level are never created, so the cost is paid
    only by records that are emitted.
    """
    global _installed
    with _lock:
        for name in MASKED_LOGGERS:
            lg = logging.getLogger(name)
            if _FILTER not in lg.filters:
                lg.addFilter(_FILTER)
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: object, **kwargs: object) -> logging.LogRecord:
            return scrub_record(previous(*args, **kwargs))

        logging.setLogRecordFactory(factory)
        _installed = True


install_log_scrubbing = install_secret_masking   # the name used before


__all__ = ["MASK", "KeyInPlainField", "Secret", "SecretMaskingFilter", "SecretURL", "credential",
           "install_secret_masking", "is_secret_key", "key_shape", "looks_like_key", "public", "public_digest",
           "read_secret", "redact", "refuse_key_like", "register_config_secrets", "register_secret",
           "register_url_credentials", "scrub", "scrub_known", "scrub_record", "shannon_entropy",
           "strip_url_credentials"]
