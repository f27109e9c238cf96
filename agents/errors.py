"""Typed errors of the LLM layer. Every message is scrubbed of secrets on construction.

Two families:

* exceptions (this module) for conditions that stop a call or a run: configuration errors,
  :class:`BudgetExceeded`, :class:`LogprobsUnsupported`, :class:`LLMFatalError` (auth,
  unknown model: every further call would fail the same way);
* :class:`agents.results.LLMFailure` *values* for a single item that could not be answered
  (invalid output after the repair retry, refusal, retries exhausted). A failure is never
  replaced by an empty string or a placeholder.

:mod:`agents.results` imports this module (its values raise these errors), so this module does
not import it back: the failure and partial-batch values some errors carry are typed ``Any``
here and documented on each attribute.
"""
from __future__ import annotations

from typing import Any

from agents.secrets import scrub
from common.errors import UserError


class LLMError(Exception):
    """Base class; the message is scrubbed of API keys."""

    def __init__(self, message: str = "") -> None:
        super().__init__(scrub(message))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class LLMConfigError(LLMError, UserError):
    """The LLM configuration is invalid or incomplete (missing endpoint, unset key variable)."""


class OfflineBackendMissing(LLMConfigError):
    """The offline backend was selected for a step that has no offline implementation."""


class LogprobsUnsupported(LLMError):
    """Log-probabilities were requested from an endpoint that does not return them."""

    def __init__(self, endpoint: str, model: str, detail: str = "") -> None:
        self.endpoint, self.model = endpoint, model
        msg = f"endpoint {endpoint!r} (model {model!r}) does not support logprobs"
        super().__init__(msg + (f": {detail}" if detail else ""))


class BudgetExceeded(LLMError, UserError):
    """The run's token or money cap was reached; no new calls start.

    Attributes:
        reason: one sentence saying which cap was hit and by how much.
        partial: the :class:`~agents.results.BatchResult` of a batch stopped by the cap
            (completed items kept, unstarted items as explicit ``not_started`` failures).
    """

    def __init__(self, reason: str, partial: Any = None) -> None:   # agents.results.BatchResult | None
        self.reason = scrub(reason)
        self.partial = partial
        super().__init__(f"LLM budget exceeded: {reason}")


class LLMFatalError(LLMError):
    """A non-retryable error that would repeat for every call (authentication, permission,
    unknown model/route). The batch is cancelled.

    Attributes:
        failure: the :class:`~agents.results.LLMFailure` of the call, or None.
    """

    def __init__(self, message: str, failure: Any = None) -> None:   # agents.results.LLMFailure | None
        self.failure = failure
        super().__init__(message)


class LLMCallFailed(LLMError):
    """Raised by :meth:`StepResult.unwrap` when the result holds a failure (``failure``: its
    :class:`~agents.results.LLMFailure`)."""

    def __init__(self, failure: Any) -> None:   # agents.results.LLMFailure
        self.failure = failure
        super().__init__(f"{failure.step or 'llm call'} failed ({failure.kind}): {failure.message}")


def error_details(exc: BaseException) -> dict[str, Any]:
    """Class name, HTTP status and a scrubbed one-line message of any exception."""
    status = getattr(exc, "status_code", None)
    msg = scrub(str(exc)).strip().splitlines()
    return {"error_class": type(exc).__name__, "status_code": status,
            "message": (msg[0] if msg else type(exc).__name__)[:500]}
