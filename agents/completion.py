"""What one chat-completion call sends and gets back: the secret-free :class:`ChatRequest`,
the :class:`Completion` read from the server's JSON (:func:`read_completion`; also the payload
the call cache stores), the :class:`CallResult` of a call with its retries, and
:class:`CallFailed`, the error of a request that could not be answered.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.errors import LLMError, LogprobsUnsupported
from agents.results import TokenLogprob, Usage
from agents.secrets import scrub, scrub_known


def estimate_tokens(text: str) -> int:
    """Offline token estimate: ~4 characters per token (see docs/stack.md, tiktoken note)."""
    return max(1, (len(text) + 3) // 4) if text else 0


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat-completion request, secret-free."""

    endpoint: str
    model: str
    messages: list[dict[str, Any]]
    sampling: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    schema_name: str = "output"
    logprobs: bool = False
    top_logprobs: int | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """What a call returned; also the payload stored in the cache."""

    content: str | None
    refusal: str | None
    finish_reason: str | None
    model: str | None
    usage: Usage
    logprobs: tuple[TokenLogprob, ...] | None = None

    def to_payload(self) -> dict[str, Any]:
        return {
            "content": self.content, "refusal": self.refusal, "finish_reason": self.finish_reason,
            "model": self.model,
            "usage": {"prompt_tokens": self.usage.prompt_tokens,
                      "completion_tokens": self.usage.completion_tokens,
                      "estimated": self.usage.estimated},
            "logprobs": None if self.logprobs is None else
            [[t.token, t.logprob, [list(x) for x in t.top]] for t in self.logprobs],
        }

    @classmethod
    def from_payload(cls, d: dict[str, Any]) -> "Completion":
        u = d.get("usage") or {}
        lp = d.get("logprobs")
        return cls(content=d.get("content"), refusal=d.get("refusal"),
                   finish_reason=d.get("finish_reason"), model=d.get("model"),
                   usage=Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0),
                               bool(u.get("estimated"))),
                   logprobs=None if lp is None else tuple(
                       TokenLogprob(t[0], float(t[1]), tuple((a, float(b)) for a, b in t[2])) for t in lp))


@dataclass(frozen=True, slots=True)
class CallResult:
    completion: Completion
    retries: int
    latency_s: float


class CallFailed(LLMError):
    """A request could not be answered (retries exhausted or a non-retryable 4xx)."""

    def __init__(self, kind: str, message: str, *, error_class: str | None, status_code: int | None,
                 retries: int, latency_s: float) -> None:
        self.kind, self.error_class, self.status_code = kind, error_class, status_code
        self.retries, self.latency_s = retries, latency_s
        super().__init__(message)


def _text_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def read_completion(resp: Any, req: ChatRequest) -> Completion:
    """The :class:`Completion` of a ``chat.completion`` JSON object (a dict, as the SDK returns it
    for ``cast_to=dict``); :class:`CallFailed` for a body that is not one, and
    :class:`LogprobsUnsupported` when ``req`` asked for logprobs and none came back."""
    if not isinstance(resp, dict):
        raise CallFailed("api_error", f"the server's response is not a JSON object ({scrub(str(resp))[:200]!r})",
                         error_class="InvalidResponse", status_code=None, retries=0, latency_s=0.0)
    choices = resp.get("choices") or []
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise CallFailed("api_error", "the server returned no choices", error_class="EmptyResponse",
                         status_code=None, retries=0, latency_s=0.0)
    ch = choices[0]
    msg = ch.get("message") if isinstance(ch.get("message"), dict) else {}
    # a model echoing a key (prompt injection, a leaky proxy) must not put it on disk
    content = scrub_known(_text_or_none(msg.get("content")))
    refusal = scrub_known(_text_or_none(msg.get("refusal")))
    u = resp.get("usage") if isinstance(resp.get("usage"), dict) else None
    if u is not None and u.get("prompt_tokens") is not None:
        usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
    else:
        ptext = "".join(str(m.get("content", "")) for m in req.messages)
        usage = Usage(estimate_tokens(ptext), estimate_tokens(content or refusal or ""), True)
    lps: tuple[TokenLogprob, ...] | None = None
    if req.logprobs:
        lp = ch.get("logprobs")
        items = lp.get("content") if isinstance(lp, dict) else None
        if items is None and refusal is None:
            raise LogprobsUnsupported(req.endpoint, req.model, "the response carries no logprobs")
        lps = tuple(
            TokenLogprob(t["token"], float(t["logprob"]),
                         tuple((x["token"], float(x["logprob"])) for x in (t.get("top_logprobs") or ())))
            for t in (items or ()))
    model = resp.get("model")
    return Completion(content=content, refusal=refusal, finish_reason=ch.get("finish_reason"),
                      model=model if isinstance(model, str) else None, usage=usage, logprobs=lps)
