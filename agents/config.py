"""Configuration of the LLM layer (Pydantic, unknown keys forbidden).

An :class:`LLMConfig` names endpoints (any OpenAI-compatible server: OpenAI, vLLM, Ollama,
llama.cpp), maps roles to an endpoint / model / sampling, and sets the global concurrency,
retries, budget and cache. It never holds a secret: ``api_key_env`` is the *name* of the
environment variable that holds the key, read only when a client is built. Credentials that
a config does carry are tainted as they are read (:mod:`agents.secrets`): every header value is
a :class:`~agents.secrets.Secret`, ``base_url`` a :class:`~agents.secrets.SecretURL` (its
userinfo and query values are secrets; the query is sent as request parameters), and a value
that looks like a key anywhere else (a model id, a name, a path, ``api_key_env``) is refused.
The config reaches files, Prefect and logs only through :meth:`LLMConfig.public_dict`
(:func:`agents.secrets.public`).

Reference sampling defaults (YourBench / the MTRAG reference): generation roles use
``temperature=0.8, top_p=0.95``; judge roles use ``temperature=0``.

Example (YAML)::

    endpoints:
      local:
        base_url: http://127.0.0.1:8000/v1
        model: qwen2.5-7b-instruct
        api_key_env: VLLM_API_KEY
        max_concurrency: 16
    default_endpoint: local
    roles:
      question_generator: {kind: generation}
      judge: {kind: judge, model: qwen2.5-32b-instruct}
    prices:
      qwen2.5-7b-instruct: {input_per_1m: 0.1, output_per_1m: 0.3}
    budget: {max_usd: 5}
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from agents.errors import LLMConfigError
from agents.secrets import (Secret, SecretURL, credential, key_shape, public, public_digest, refuse_key_like,
                            register_config_secrets, scrub)
from common.configfile import read_config_file

RoleKind = Literal["generation", "judge"]
Backend = Literal["openai", "offline"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # fields that hold credentials (tainted by their own types); ``*_env(s)`` fields hold
    # variable NAMES and are checked by their validators
    credential_fields: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _taint_and_refuse_misplaced_keys(cls, data: Any) -> Any:
        # a key pasted into the wrong field (or a user:pass@ URL) is masked in every message,
        # log record and file from now on, including this validation's own error ...
        register_config_secrets(data)
        # ... and refused: a model id, a name or a path never holds a key
        if isinstance(data, dict):
            skip = cls.credential_fields + tuple(
                k for k in data if isinstance(k, str) and k.endswith(("_env", "_envs")))
            refuse_key_like(data, skip=skip, depth=2)     # nested models check their own fields
        return data


def validation_message(exc: Exception) -> str:
    """A pydantic validation error as one line of ``field: problem`` items, without the
    offending values (a misplaced key would be echoed otherwise); other errors scrubbed."""
    if isinstance(exc, ValidationError):
        items = []
        for e in exc.errors(include_input=False, include_url=False, include_context=False):
            loc = ".".join(str(p) for p in e.get("loc", ())) or "config"
            items.append(f"{loc}: {str(e.get('msg', 'invalid')).removeprefix('Value error, ')}")
        return scrub(f"{exc.error_count()} error(s): " + "; ".join(items))
    return scrub(str(exc))


def _check_env_name(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and not _ENV_NAME.match(value) or key_shape(value):
        # never echo the value: it is a key pasted by mistake (registered by the before-validator)
        raise ValueError(f"{what} must be the NAME of an environment variable "
                         "(e.g. OPENAI_API_KEY), not a key")
    return value


class ModelPrice(_Strict):
    """USD per one million tokens.

    Attributes:
        input_per_1m: USD per one million prompt tokens.
        output_per_1m: USD per one million completion tokens.
    """

    input_per_1m: float = Field(ge=0)
    output_per_1m: float = Field(ge=0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_1m + completion_tokens * self.output_per_1m) / 1e6


class EndpointConfig(_Strict):
    """One OpenAI-compatible server.

    Attributes:
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``; a
            :class:`~agents.secrets.SecretURL`: ``user:pass@`` is sent as Basic auth and
            ``?name=value`` as query parameters of every request, both masked in every dump.
        model: default model id on this endpoint.
        api_key_env: name of the env var holding the key; None for servers without auth.
        headers: extra headers sent with every request; every value is a
            :class:`~agents.secrets.Secret` (``***`` in every dump). Prefer ``header_envs`` for secrets.
        header_envs: header name -> env var name, for secret headers.
        timeout_s: per-request timeout (whole request, each attempt).
        connect_timeout_s: TCP connect timeout.
        max_concurrency: requests in flight to this endpoint at most.
        structured_output: ``json_schema`` (response_format with the output model's schema),
            ``json_object_schema`` (``{"type": "json_object", "schema": ...}``: llama.cpp's
            grammar-constrained form), ``json_object`` or ``text`` (JSON extracted from plain
            text). An endpoint that rejects the requested form is downgraded automatically.
        strict_schema: send ``strict: true`` with the JSON schema.
        supports_logprobs: False makes logprob requests fail fast with LogprobsUnsupported.
        probe: probe the endpoint once per run before its first request
            (:mod:`agents.capabilities`) and use what it supports: the best structured-output
            mode (overrides ``structured_output``), logprobs, seed, context length.
        context_length: the model's context in tokens, for servers that do not report it
            (llama-cpp-python, Ollama); wins over a probed value. Prompts that do not fit are
            refused before sending (``api_error``, error class ``ContextLengthExceeded``).
    """

    credential_fields: ClassVar[tuple[str, ...]] = ("base_url", "headers")

    base_url: SecretURL
    model: str
    api_key_env: str | None = None
    headers: dict[str, Secret] = Field(default_factory=dict)
    header_envs: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=120.0, gt=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    max_concurrency: int = Field(default=8, ge=1)
    structured_output: Literal["json_schema", "json_object_schema", "json_object", "text"] = "json_schema"
    strict_schema: bool = False
    supports_logprobs: bool = True
    probe: bool = False
    context_length: int | None = Field(default=None, ge=16)

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, v: str | None) -> str | None:
        return _check_env_name(v, "api_key_env")

    @field_validator("header_envs")
    @classmethod
    def _header_envs(cls, v: dict[str, str]) -> dict[str, str]:
        for name, env in v.items():
            _check_env_name(env, f"header_envs[{name!r}]")
        return v

    @field_validator("headers", mode="before")
    @classmethod
    def _taint_headers(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: x if isinstance(x, Secret) else credential(k, x) if isinstance(x, str) else x
                    for k, x in v.items()}
        return v

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, v: dict[str, Secret]) -> dict[str, Secret]:
        for name in v:
            if key_shape(name):
                raise ValueError("a header name looks like a key; a config never holds a key: "
                                 "keep it in an environment variable and name that variable (header_envs)")
            if name.lower() in ("authorization", "api-key", "x-api-key"):
                raise ValueError(f"header {name!r} carries a secret: set it through header_envs")
        return v


class Sampling(_Strict):
    """Sampling parameters; None means "not sent" (the server's default).

    Attributes:
        temperature: sampling temperature (0-2); judges default to 0, generation roles to 0.8.
        top_p: nucleus sampling mass; generation roles default to 0.95.
        max_tokens: cap on completion tokens per call.
        seed: sampling seed (dropped from requests when the server rejects it).
        stop: stop sequences.
    """

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: list[str] | None = None

    def merged(self, other: "Sampling | None") -> "Sampling":
        """``self`` with every field that ``other`` sets overridden."""
        if other is None:
            return self
        return self.model_copy(update=other.model_dump(exclude_none=True))

    def params(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


GENERATION_DEFAULTS = Sampling(temperature=0.8, top_p=0.95)
JUDGE_DEFAULTS = Sampling(temperature=0.0)


def kind_defaults(kind: RoleKind) -> Sampling:
    return JUDGE_DEFAULTS if kind == "judge" else GENERATION_DEFAULTS


class RoleConfig(_Strict):
    """Per-role overrides. Unset fields fall back to the step's declaration, then defaults.

    Attributes:
        kind: ``generation`` or ``judge`` (the sampling defaults: temperature 0.8 / top_p 0.95, or 0).
        endpoint: name of the endpoint this role calls (default: ``default_endpoint``).
        model: model id on that endpoint (default: the endpoint's ``model``).
        backend: ``offline`` runs this role on the offline backend, whatever the global ``backend``.
        sampling: sampling parameters, over the kind defaults and the step's own.
    """

    kind: RoleKind | None = None
    endpoint: str | None = None
    model: str | None = None
    backend: Backend | None = None
    sampling: Sampling = Field(default_factory=Sampling)


class RetryConfig(_Strict):
    """Retries on timeouts, connection errors and HTTP 408/409/429/5xx only.

    Backoff before attempt n+1 is ``min(backoff_max_s, backoff_base_s * 2**n)`` with full
    jitter in [50%, 100%]; a ``Retry-After`` header (capped at ``max_retry_after_s``) wins.

    Attributes:
        max_attempts: attempts per call, the first included.
        backoff_base_s: base of the exponential backoff, in seconds.
        backoff_max_s: longest backoff, in seconds.
        max_retry_after_s: cap on a server's ``Retry-After``, in seconds.
        jitter: full jitter in [50%, 100%] of the backoff.
        repair_attempts: calls that show the model its validation error after an invalid output (0-3).
    """

    max_attempts: int = Field(default=5, ge=1)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    max_retry_after_s: float = Field(default=120.0, ge=0)
    jitter: bool = True
    repair_attempts: int = Field(default=1, ge=0, le=3)


class BudgetConfig(_Strict):
    """Caps for one run (misses only: cache hits cost nothing).

    Attributes:
        max_tokens: prompt + completion tokens at most; the run stops cleanly when reached.
        max_usd: cost at most, from ``prices``; the run stops cleanly when reached.
    """

    max_tokens: int | None = Field(default=None, ge=0)
    max_usd: float | None = Field(default=None, ge=0)


class CacheConfig(_Strict):
    """The content-addressed call cache.

    Attributes:
        enabled: False: every call goes to the server (and nothing is written).
        scope: ``run``: the cache lives in ``<run dir>/cache/llm`` (a rerun of the same run
            resumes; other runs don't share it); ``shared``: ``dir`` (default
            ``~/.cache/mtr-suite/llm``) is shared by every run.
        dir: explicit cache directory (overrides the scope's default location).
        fsync: fsync each entry before its rename (survives power loss; a killed process
            never leaves a torn entry either way). Costs a few ms per miss, off the event loop.
    """

    enabled: bool = True
    scope: Literal["run", "shared"] = "run"
    dir: str | None = None
    fsync: bool = True

    def resolve_dir(self, run_dir: str | Path | None) -> Path | None:
        if not self.enabled:
            return None
        if self.dir:
            return Path(self.dir).expanduser()
        if self.scope == "shared":
            return Path("~/.cache/mtr-suite/llm").expanduser()
        if run_dir is None:
            return None
        return Path(run_dir) / "cache" / "llm"


class ResolvedRole(_Strict):
    """Everything needed to make a call for one role (secret-free)."""

    role: str
    kind: RoleKind
    backend: Backend
    endpoint_name: str | None
    model: str | None
    sampling: Sampling


class LLMConfig(_Strict):
    """The whole LLM layer configuration (see module docstring).

    Attributes:
        endpoints: OpenAI-compatible servers by name.
        default_endpoint: endpoint of the roles that name none (a single endpoint is the default anyway).
        roles: per-role overrides by role name (e.g. ``question_generator``, ``faithfulness_judge``).
        backend: ``openai`` (the endpoints) or ``offline`` (every role on the offline backend).
        max_concurrency: calls in flight at most, over all endpoints.
        prices: USD per one million tokens by model id (cost accounting and ``budget.max_usd``).
        retry: retries of failed calls.
        budget: token and money caps of one run.
        cache: the content-addressed call cache.
        accounting_flush_every: group commit: cache entries and ``llm_calls`` rows are committed (one sync) as
            soon as this many calls are pending.
        commit_interval_ms: ... and at least this often; 0 = synchronous per-call writes.
        http_client: HTTP transport under the ``openai`` client: ``aiohttp`` (the SDK's aiohttp transport,
            about 1.6x the calls/s of the default at concurrency 64 on 2 cores) or ``httpx`` (the SDK's default).
    """

    endpoints: dict[str, EndpointConfig] = Field(default_factory=dict)
    default_endpoint: str | None = None
    roles: dict[str, RoleConfig] = Field(default_factory=dict)
    backend: Backend = "openai"
    max_concurrency: int = Field(default=16, ge=1)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    # group commit of cache entries + llm_calls rows: a commit (one sync) as soon as this many
    # calls are pending, and at least every commit_interval_ms; 0 ms = synchronous per-call writes
    accounting_flush_every: int = Field(default=64, ge=1)
    commit_interval_ms: float = Field(default=100.0, ge=0)
    # HTTP transport under the ``openai`` client: "aiohttp" (the SDK's ``DefaultAioHttpClient``,
    # the ``openai[aiohttp]`` extra: about 1.6x the calls/s of the default at concurrency 64 on
    # 2 cores, see benchmarks/llm_layer.py) or "httpx" (the SDK's default httpx2 client)
    http_client: Literal["aiohttp", "httpx"] = "aiohttp"

    @model_validator(mode="after")
    def _check_refs(self) -> "LLMConfig":
        if self.default_endpoint is not None and self.default_endpoint not in self.endpoints:
            raise ValueError(f"default_endpoint {self.default_endpoint!r} is not among the endpoints "
                             f"({', '.join(sorted(self.endpoints)) or 'none'})")
        for name, role in self.roles.items():
            if role.endpoint is not None and role.endpoint not in self.endpoints:
                raise ValueError(f"role {name!r} uses unknown endpoint {role.endpoint!r}")
        return self

    # -- loading ------------------------------------------------------------------------
    _source: str | None = PrivateAttr(default=None)

    @classmethod
    def from_file(cls, path: str | Path) -> "LLMConfig":
        """Load a YAML, JSON or TOML file (an ``llm:`` top-level key is accepted)."""
        p = Path(path)
        data = read_config_file(p, what="LLM config", section="llm", error=LLMConfigError)
        try:
            cfg = cls.model_validate(data)
        except ValueError as exc:
            raise LLMConfigError(f"invalid LLM config {p}: {validation_message(exc)}") from None
        cfg._source = str(p.resolve())
        return cfg

    @property
    def source(self) -> str | None:
        """The file this config was loaded from (:meth:`from_file`), else None."""
        return self._source

    # -- resolution ---------------------------------------------------------------------
    def endpoint_for(self, name: str | None) -> tuple[str, EndpointConfig]:
        if name is None:
            name = self.default_endpoint
            if name is None and len(self.endpoints) == 1:
                name = next(iter(self.endpoints))
        if name is None:
            raise LLMConfigError("no LLM endpoint configured: add one under `endpoints` "
                                 "(or select the offline backend explicitly)")
        if name not in self.endpoints:
            raise LLMConfigError(f"unknown LLM endpoint {name!r}")
        return name, self.endpoints[name]

    def resolve(self, role: str, *, kind: RoleKind = "generation",
                step_sampling: Sampling | None = None, backend: Backend | None = None) -> ResolvedRole:
        """Resolve a role: kind defaults < step sampling < role config; explicit backend wins."""
        rc = self.roles.get(role, RoleConfig())
        kind = rc.kind or kind
        sampling = kind_defaults(kind).merged(step_sampling).merged(rc.sampling)
        chosen: Backend = backend or rc.backend or self.backend
        if chosen == "offline":
            return ResolvedRole(role=role, kind=kind, backend="offline", endpoint_name=None,
                                model=None, sampling=sampling)
        ep_name, ep = self.endpoint_for(rc.endpoint)
        return ResolvedRole(role=role, kind=kind, backend="openai", endpoint_name=ep_name,
                            model=rc.model or ep.model, sampling=sampling)

    def price(self, model: str | None) -> ModelPrice | None:
        return self.prices.get(model) if model else None

    def public_dict(self) -> dict[str, Any]:
        """The redacted, JSON-able form for manifests, Prefect and logs (:func:`agents.secrets.public`):
        env var names, never values; header values and URL credentials / query values ``***``."""
        return public(self)

    def digest(self) -> str:
        """A 16-hex digest of :meth:`public_dict` (what a flow run carries instead of the config)."""
        return public_digest(self)
