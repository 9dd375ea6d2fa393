"""Anthropic Messages wire format (``/v1/messages``), as documented in Anthropic's API reference.

Non-streaming: a ``message`` object with ``text`` and ``tool_use`` content blocks. Streaming:
``message_start``, per block ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``) / ``content_block_stop``, then ``message_delta`` and ``message_stop``.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from evalharness.models.script import ErrorSpec, Reply
from evalharness.models.wire_common import Tokens, new_id, pieces, sse, text_of

_ERROR_TYPES = {
    "rate_limit": ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    "server": ("api_error", "Internal server error."),
    "overloaded": ("overloaded_error", "Overloaded."),
    "auth": ("authentication_error", "invalid x-api-key"),
    "permission": ("permission_error", "Your API key does not have permission to use the specified resource."),
    "not_found": ("not_found_error", "model: not found"),
    "bad_request": ("invalid_request_error", "Invalid request."),
    "context_window": ("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
}


def error_body(spec: ErrorSpec) -> dict[str, Any]:
    kind, message = _ERROR_TYPES[spec.kind or "server"]
    return {"type": "error", "error": {"type": kind, "message": spec.message or message}}


def messages_prompt(body: dict[str, Any]) -> str:
    parts = [text_of(body.get("system"))]
    parts.extend(text_of(m.get("content")) for m in body.get("messages") or [])
    return "\n".join(filter(None, parts))


def _usage(t: Tokens, output: int) -> dict[str, Any]:
    """Anthropic counts cache reads and writes apart from ``input_tokens``."""
    return {
        "input_tokens": max(0, t.input - t.cached - t.cache_write), "output_tokens": output,
        "cache_read_input_tokens": t.cached, "cache_creation_input_tokens": t.cache_write,
    }


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    blocks.extend({"type": "tool_use", "id": c.id or new_id("toolu_"), "name": c.name, "input": c.arguments}
                  for c in reply.tool_calls)
    return blocks


def message(reply: Reply, model: str, tokens: Tokens, content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": new_id("msg_"), "type": "message", "role": "assistant", "model": model,
        "content": _blocks(reply) if content is None else content,
        "stop_reason": _stop(reply), "stop_sequence": None,
        "usage": _usage(tokens, tokens.output),
    }


def message_events(reply: Reply, model: str, tokens: Tokens) -> Iterator[bytes]:
    """The streaming event sequence for one message."""
    start = {**message(reply, model, tokens, content=[]), "stop_reason": None, "usage": _usage(tokens, 1)}
    yield sse({"type": "message_start", "message": start}, event="message_start")
    yield sse({"type": "ping"}, event="ping")
    for index, block in enumerate(_blocks(reply)):
        yield from _block_events(index, block)
    delta = {"type": "message_delta", "delta": {"stop_reason": _stop(reply), "stop_sequence": None},
             "usage": {"output_tokens": tokens.output}}
    yield sse(delta, event="message_delta")
    yield sse({"type": "message_stop"}, event="message_stop")


def _stop(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    if block["type"] == "text":
        opening, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
    else:
        opening = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(json.dumps(block["input"]))]
    yield sse({"type": "content_block_start", "index": index, "content_block": opening}, event="content_block_start")
    for delta in deltas:
        yield sse({"type": "content_block_delta", "index": index, "delta": delta}, event="content_block_delta")
    yield sse({"type": "content_block_stop", "index": index}, event="content_block_stop")
