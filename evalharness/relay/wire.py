"""Read what a relayed model call said: usage, assistant text and tool calls, streaming or not.

Pure functions over bytes. Three wire formats are understood, following each provider's
API reference: OpenAI chat completions (``usage.prompt_tokens``/``completion_tokens``, in the
last chunk when streaming with ``stream_options.include_usage``), OpenAI Responses
(``usage.input_tokens``/``output_tokens``; the ``response.completed`` event when streaming) and
Anthropic Messages (``usage`` in ``message_start`` and the cumulative ``message_delta``).
Token convention: ``input_tokens`` is the whole prompt, cache reads and writes included, as
OpenAI counts it; ``cached_tokens`` the part read from cache. Also the one request rewrite the
relay makes (``with_stream_usage``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallSummary:
    """One model call as read off the wire; ``usage_found`` is False when the reply carried no usage."""

    api: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    usage_found: bool = False
    model: str = ""
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def with_stream_usage(body: bytes) -> bytes:
    """Ask for the usage chunk of a streamed chat completion (``stream_options.include_usage``).

    Without it an OpenAI-compatible server sends no token counts at all (aider, for one, streams
    without asking), and the trial's usage would be unknown. Clients skip the extra final chunk,
    whose ``choices`` list is empty, as the OpenAI API reference describes.
    """
    parsed = json_object(body)
    options = parsed.get("stream_options") or {}
    if not isinstance(options, dict):  # not an object: sent as it is, the endpoint's to refuse
        return body
    if not parsed.get("stream") or options.get("include_usage"):
        return body
    parsed["stream_options"] = {**options, "include_usage": True}
    return json.dumps(parsed).encode()


def json_object(body: bytes) -> dict[str, Any]:
    """A request or reply body as a JSON object; {} when it is not one."""
    try:
        value = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def request_messages(body: dict[str, Any]) -> int:
    """How many conversation items the request sent (messages, or Responses input items)."""
    items = body.get("messages", body.get("input"))
    if isinstance(items, list):
        return len(items)
    return 1 if items else 0


def summarize(api: str, raw: bytes, streamed: bool) -> CallSummary:
    """Parse a complete response body (JSON, or the SSE stream's bytes)."""
    summary = CallSummary(api=api)
    if not streamed:
        try:
            _apply_object(summary, json.loads(raw or b"{}"))
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError):
            pass
        return summary
    for event in sse_events(raw):
        _apply_event(summary, event)
    return summary


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE stream's ``data:`` lines ([DONE] and non-JSON lines skipped)."""
    events = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            value = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _apply_object(s: CallSummary, body: dict[str, Any]) -> None:
    s.model = str(body.get("model") or "")
    if s.api == "chat":
        message = ((body.get("choices") or [{}])[0] or {}).get("message") or {}
        s.content = message.get("content") or ""
        s.tool_calls = [_fn(c.get("function") or {}) for c in message.get("tool_calls") or []]
        _chat_usage(s, body.get("usage"))
    elif s.api == "responses":
        _responses_output(s, body.get("output") or [])
        _responses_usage(s, body.get("usage"))
    else:
        _anthropic_content(s, body.get("content") or [])
        _anthropic_usage(s, body.get("usage"), final=True)


def _apply_event(s: CallSummary, event: dict[str, Any]) -> None:
    kind = event.get("type", "")
    if s.api == "chat":
        s.model = s.model or str(event.get("model") or "")
        for choice in event.get("choices") or []:
            _chat_delta(s, choice.get("delta") or {})
        _chat_usage(s, event.get("usage"))
    elif s.api == "responses" and kind in ("response.completed", "response.incomplete", "response.failed"):
        _apply_object(s, event.get("response") or {})
    elif kind == "message_start":
        message = event.get("message") or {}
        s.model = str(message.get("model") or "")
        _anthropic_usage(s, message.get("usage"), final=False)
    elif kind == "content_block_start":
        block = event.get("content_block") or {}
        if block.get("type") == "tool_use":
            s.tool_calls.append({"name": block.get("name", ""), "arguments": ""})
    elif kind == "content_block_delta":
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta":
            s.content += delta.get("text", "")
        elif delta.get("type") == "input_json_delta" and s.tool_calls:
            s.tool_calls[-1]["arguments"] += delta.get("partial_json", "")
    elif kind == "message_delta":
        _anthropic_usage(s, event.get("usage"), final=True)


def _fn(function: dict[str, Any]) -> dict[str, Any]:
    return {"name": function.get("name", ""), "arguments": function.get("arguments", "")}


def _chat_delta(s: CallSummary, delta: dict[str, Any]) -> None:
    s.content += delta.get("content") or ""
    for call in delta.get("tool_calls") or []:
        index = call.get("index", len(s.tool_calls))
        while len(s.tool_calls) <= index:
            s.tool_calls.append({"name": "", "arguments": ""})
        function = call.get("function") or {}
        s.tool_calls[index]["name"] += function.get("name") or ""
        s.tool_calls[index]["arguments"] += function.get("arguments") or ""


def _chat_usage(s: CallSummary, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    s.usage_found = True
    s.input_tokens = int(usage.get("prompt_tokens") or 0)
    s.output_tokens = int(usage.get("completion_tokens") or 0)
    s.cached_tokens = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)


def _responses_output(s: CallSummary, output: list[Any]) -> None:
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            s.content += "".join(p.get("text", "") for p in item.get("content") or [] if isinstance(p, dict))
        elif item.get("type") == "function_call":
            s.tool_calls.append(_fn(item))


def _responses_usage(s: CallSummary, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    s.usage_found = True
    s.input_tokens = int(usage.get("input_tokens") or 0)
    s.output_tokens = int(usage.get("output_tokens") or 0)
    s.cached_tokens = int((usage.get("input_tokens_details") or {}).get("cached_tokens") or 0)


def _anthropic_content(s: CallSummary, blocks: list[Any]) -> None:
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            s.content += block.get("text", "")
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            s.tool_calls.append({"name": block.get("name", ""), "arguments": json.dumps(block.get("input") or {})})


def _anthropic_usage(s: CallSummary, usage: Any, *, final: bool) -> None:
    """Anthropic reports uncached input apart from cache reads/writes; ``message_delta`` counts are cumulative."""
    if not isinstance(usage, dict):
        return
    s.usage_found = True
    read = int(usage.get("cache_read_input_tokens") or s.cached_tokens or 0)
    write = int(usage.get("cache_creation_input_tokens") or s.cache_write_tokens or 0)
    if "input_tokens" in usage and usage.get("input_tokens") is not None:
        s.input_tokens = int(usage["input_tokens"]) + read + write
    elif read != s.cached_tokens or write != s.cache_write_tokens:
        s.input_tokens += (read - s.cached_tokens) + (write - s.cache_write_tokens)
    s.cached_tokens, s.cache_write_tokens = read, write
    if "output_tokens" in usage and (final or not s.output_tokens):
        s.output_tokens = int(usage.get("output_tokens") or 0)
