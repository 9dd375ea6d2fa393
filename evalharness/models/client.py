"""One chat call to a model through litellm, with usage, cost, retries and a concurrency cap.

``ModelClient(endpoint).complete(messages, tools)`` returns the assistant message (OpenAI
chat format, whatever the provider) and a Usage. Transient failures (429, 5xx, timeouts) are
retried with exponential backoff and full jitter (AWS Architecture Blog, "Exponential Backoff
and Jitter"), honouring ``retry-after``; others raise :class:`ModelAPIError` (a HarnessError).
litellm is imported on the first call, offline (see ``_litellm``).
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from typing import Any, Callable
from urllib.parse import urlparse

from evalharness.errors import ConfigError, HarnessError
from evalharness.models._litellm import load_litellm
from evalharness.models.failures import abort_error, classify
from evalharness.types import ModelEndpoint, Usage

log = logging.getLogger(__name__)

DEFAULT_MAX_CONCURRENCY = 8
_PLACEHOLDER_KEY = "sk-evalharness-no-key"
_semaphores: dict[str, threading.BoundedSemaphore] = {}
_semaphores_lock = threading.Lock()


def endpoint_semaphore(endpoint: ModelEndpoint, limit: int) -> threading.BoundedSemaphore:
    """The semaphore shared by every client of ``endpoint.api_base``; its size is fixed by the first caller."""
    key = endpoint.api_base or f"default:{endpoint.name.split('/', 1)[0]}"
    with _semaphores_lock:
        return _semaphores.setdefault(key, threading.BoundedSemaphore(limit))


def configured_key(endpoint: ModelEndpoint) -> str | None:
    """The value of ``$api_key_env`` read now (host side only); None when the endpoint names no variable."""
    name = endpoint.api_key_env
    if not name:
        return None
    value = os.environ.get(name)
    if not value:
        raise HarnessError(f"model {endpoint.name}: environment variable ${name} is not set\n"
                           f"  export {name}=<your key>, or set api_key_env to the variable holding it")
    return value


class ModelClient:
    """Calls one ModelEndpoint. Thread-safe; share one per endpoint across trials.

    ``backoff_base_s`` scales the retry waits (``base * 2**attempt``, jittered), each capped at
    ``backoff_max_s``, as is any ``retry-after`` the server sends. ``max_concurrency`` (or
    ``endpoint.extra["max_concurrency"]``) caps calls in flight per api_base. Extra litellm
    arguments come from ``endpoint.extra["completion_kwargs"]``.
    """

    def __init__(self, endpoint: ModelEndpoint, *, max_concurrency: int | None = None,
                 backoff_base_s: float = 1.0, backoff_max_s: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep):
        if (endpoint.input_cost_per_token is None) != (endpoint.output_cost_per_token is None):
            raise ConfigError(f"model {endpoint.name}: set both input_cost_per_token and output_cost_per_token, or neither")
        self.endpoint = endpoint
        limit = max_concurrency or int(endpoint.extra.get("max_concurrency", DEFAULT_MAX_CONCURRENCY))
        self._semaphore = endpoint_semaphore(endpoint, limit)
        self._backoff_base_s, self._backoff_max_s, self._sleep = backoff_base_s, backoff_max_s, sleep

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 **params: Any) -> tuple[dict[str, Any], Usage]:
        """One completion: (assistant message as an OpenAI-format dict, Usage with calls=1).

        ``latency_s`` covers the whole call, retries included. ``params`` go to litellm as is.
        """
        litellm = load_litellm()
        key = self.api_key()
        request = {**self._request_args(key), **params, "messages": messages}
        if tools:
            request["tools"] = tools
        response, usage = self.call(lambda: litellm.completion(**request), key=key)
        return message_of(response), usage

    def call(self, query: Callable[[], Any], *, key: str | None = None) -> tuple[Any, Usage]:
        """Run ``query()`` (one litellm call) under this endpoint's concurrency cap, retrying transient
        failures (429, 5xx, timeouts) with backoff; returns (response, Usage with cost and latency).

        Harnesses that drive litellm through another library (mini-swe-agent) wrap its call here.
        """
        import openai  # litellm's API errors all subclass openai.OpenAIError; already imported by litellm

        started = time.monotonic()
        attempts = self.endpoint.num_retries + 1
        for attempt in range(attempts):
            try:
                with self._semaphore:
                    response = query()
                break
            except openai.OpenAIError as e:
                failure = classify(e)
                if not failure.retryable or attempt == attempts - 1:
                    raise abort_error(failure, self.endpoint, attempt + 1, key or self.api_key()) from e
                wait = failure.retry_after_s
                if wait is None:
                    wait = self._backoff_base_s * 2**attempt * random.uniform(0.5, 1.0)
                log.info("model %s: %s, retry %d/%d in %.2fs", self.endpoint.name, failure.kind,
                         attempt + 1, attempts - 1, min(wait, self._backoff_max_s))
                self._sleep(min(wait, self._backoff_max_s))
        usage = usage_of(response)
        usage.latency_s = time.monotonic() - started
        usage.cost_usd = self._cost(load_litellm(), response, usage)
        return response, usage

    def _request_args(self, key: str | None) -> dict[str, Any]:
        ep = self.endpoint
        args: dict[str, Any] = {"model": ep.name, "timeout": ep.timeout_s, "num_retries": 0, "max_retries": 0,
                                "drop_params": True}
        optional = {"api_base": ep.api_base, "api_key": key, "temperature": ep.temperature,
                    "seed": ep.seed, "max_tokens": ep.max_tokens}
        args.update({k: v for k, v in optional.items() if v is not None})
        return {**args, **ep.extra.get("completion_kwargs", {})}

    def api_key(self) -> str | None:
        """The key from ``$api_key_env`` (read now); a placeholder for a loopback server needing none."""
        value = configured_key(self.endpoint)
        if value is not None:
            return value
        host = urlparse(self.endpoint.api_base or "").hostname
        return _PLACEHOLDER_KEY if host in ("127.0.0.1", "localhost", "::1") else None

    def _cost(self, litellm: Any, response: Any, usage: Usage) -> float | None:
        """Endpoint prices when set; else litellm's bundled price map; None when the model is not in it."""
        ep = self.endpoint
        if ep.input_cost_per_token is not None and ep.output_cost_per_token is not None:
            return usage.input_tokens * ep.input_cost_per_token + usage.output_tokens * ep.output_cost_per_token
        try:
            return float(litellm.completion_cost(completion_response=response, model=ep.name))
        except Exception as e:  # litellm raises several unrelated types for "not in the price map"
            log.debug("no price for %s (%s): cost unknown", ep.name, e)
            return None


def usage_of(response: Any) -> Usage:
    """Token counts of a litellm ModelResponse; cache reads fill both cached_tokens and cache_read_tokens."""
    u = getattr(response, "usage", None)
    if u is None:
        return Usage(calls=1, cost_usd=None)
    details = getattr(u, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or getattr(u, "cache_read_input_tokens", None) or 0
    written = getattr(u, "cache_creation_input_tokens", None) or 0
    return Usage(input_tokens=u.prompt_tokens or 0, output_tokens=u.completion_tokens or 0, cached_tokens=cached,
                 cache_read_tokens=cached, cache_write_tokens=written, calls=1)


def message_of(response: Any) -> dict[str, Any]:
    """The first choice's message as a plain OpenAI-format dict (role, content, tool_calls)."""
    msg = response.choices[0].message
    out: dict[str, Any] = {"role": "assistant", "content": msg.content}
    if msg.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.function.name, "arguments": c.function.arguments}}
                             for c in msg.tool_calls]
    thinking = getattr(msg, "thinking_blocks", None)
    if thinking:
        out["thinking_blocks"] = thinking
    return out
