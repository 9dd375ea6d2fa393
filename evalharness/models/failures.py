"""Sorting model API failures into retry-or-abort, and abort messages that say what to fix.

Follows mini-swe-agent's split: transient errors (429, 5xx, timeouts, connection drops) are
retried with backoff; auth, not-found, bad-request and context-window errors abort with a hint.
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass

from evalharness.errors import HarnessError
from evalharness.types import ModelEndpoint

_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


RETRYABLE_KINDS = ("rate_limit", "server", "timeout", "connection")
"""Failures of the endpoint, not of the request: retried, and when they persist the endpoint is unavailable."""


class ModelAPIError(HarnessError):
    """A model call failed for good. ``status`` is the HTTP status (None: no response), ``kind`` the category,
    ``where`` the endpoint it was sent to (its api_base, or the provider's default API)."""

    def __init__(self, message: str, *, kind: str, status: int | None, attempts: int = 1, where: str = ""):
        super().__init__(message)
        self.kind, self.status, self.attempts, self.where = kind, status, attempts, where


class ContextWindowExceeded(ModelAPIError):
    """The conversation no longer fits the model's context window."""


@dataclass(frozen=True)
class Failure:
    kind: str
    """rate_limit, server, timeout, connection, auth, not_found, context_window, bad_request."""
    status: int | None
    detail: str
    retry_after_s: float | None = None

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS


def classify(exc: Exception) -> Failure:
    """Sort a litellm/openai exception (litellm's exceptions subclass openai's); imported lazily."""
    import litellm
    import openai

    status = getattr(exc, "status_code", None)
    detail = str(getattr(exc, "message", None) or exc)
    if isinstance(exc, litellm.ContextWindowExceededError):
        return Failure("context_window", status, detail)
    if isinstance(exc, openai.APITimeoutError):
        return Failure("timeout", None, detail)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection", None, detail)
    transport = _transport_cause(exc)
    if transport is not None:  # litellm reports a connection it could not open as a 500 "Connection error."
        return Failure(transport, None, detail)
    if status == 429:
        return Failure("rate_limit", 429, detail, _retry_after(exc))
    if isinstance(status, int) and status >= 500:
        return Failure("server", status, detail, _retry_after(exc))
    kinds = {401: "auth", 403: "auth", 404: "not_found"}
    return Failure(kinds.get(status, "bad_request"), status, detail)  # type: ignore[arg-type]


def _transport_cause(exc: BaseException) -> str | None:
    """"timeout" or "connection" when the exception was caused by a request that got no answer, else None."""
    import openai

    seen, cause = set(), exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, openai.APITimeoutError):
            return "timeout"
        if isinstance(cause, openai.APIConnectionError):
            return "connection"
        cause = cause.__cause__ or cause.__context__
    return None


def _retry_after(exc: Exception) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (a number or an HTTP date), if sent."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def abort_error(failure: Failure, endpoint: ModelEndpoint, attempts: int, secret: str | None) -> ModelAPIError:
    """The HarnessError to raise: what failed, where, and what to do. ``secret`` is scrubbed from it."""
    where = endpoint.api_base or f"the default {_provider(endpoint)} API"
    detail = _scrub(failure.detail, secret)[:400]
    status = failure.status if failure.status is not None else failure.kind
    if failure.kind == "auth":
        env = endpoint.api_key_env or _DEFAULT_KEY_ENV.get(_provider(endpoint), "the provider's key variable")
        message = f"{status} from {where}: the API key was refused ({detail})\n  check the key in ${env}"
    elif failure.kind == "not_found":
        message = (f"404 from {where}: model {endpoint.name!r} not found ({detail})\n"
                   "  check the model name and api_base")
    elif failure.kind == "context_window":
        return ContextWindowExceeded(
            f"context window of {endpoint.name!r} exceeded at {where} ({detail})\n"
            "  shorten the conversation or use a model with a longer context",
            kind=failure.kind, status=failure.status, attempts=attempts, where=where)
    elif failure.retryable:
        message = (f"{endpoint.name!r} at {where} still failing after {attempts} attempts: {status} ({detail})\n"
                   "  lower concurrency, raise num_retries or timeout_s on the endpoint, or check the server")
    else:
        message = f"{status} from {where} for {endpoint.name!r}: {detail}"
    return ModelAPIError(message, kind=failure.kind, status=failure.status, attempts=attempts, where=where)


def _provider(endpoint: ModelEndpoint) -> str:
    return endpoint.name.split("/", 1)[0] if "/" in endpoint.name else "openai"


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text
