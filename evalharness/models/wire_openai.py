"""OpenAI wire formats: chat completions (``/v1/chat/completions``) and Responses (``/v1/responses``).

Shapes follow the OpenAI API reference (chat completion object and chunk object; Responses
object and its streaming events), as parsed by the ``openai`` SDK and litellm.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

from evalharness.models.script import ErrorSpec, Reply
from evalharness.models.wire_common import Tokens, new_id, pieces, sse, text_of

_ERROR_TYPES = {
    "rate_limit": ("rate_limit_exceeded", "requests", "Rate limit reached for requests. Please try again later."),
    "server": ("server_error", None, "The server had an error while processing your request."),
    "overloaded": ("server_error", None, "The server is overloaded. Please try again later."),
    "auth": ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    "permission": ("invalid_request_error", "permission_denied", "You are not allowed to use this model."),
    "not_found": ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."),
    "bad_request": ("invalid_request_error", None, "Invalid request."),
    "context_window": (
        "invalid_request_error", "context_length_exceeded",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
        "Please reduce the length of the messages.",
    ),
}


def error_body(spec: ErrorSpec) -> dict[str, Any]:
    kind, code, message = _ERROR_TYPES[spec.kind or "server"]
    return {"error": {"message": spec.message or message, "type": kind, "param": None, "code": code}}


def chat_prompt(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages") or []:
        parts.append(text_of(message.get("content")))
        parts.extend(json.dumps(c.get("function", c)) for c in message.get("tool_calls") or [])
    return "\n".join(filter(None, parts))


def responses_prompt(body: dict[str, Any]) -> str:
    items = body.get("input")
    items = [items] if isinstance(items, str) else items or []
    return "\n".join(filter(None, [body.get("instructions") or "", *(text_of(i) for i in items)]))


def _chat_usage(t: Tokens) -> dict[str, Any]:
    return {
        "prompt_tokens": t.input, "completion_tokens": t.output, "total_tokens": t.input + t.output,
        "prompt_tokens_details": {"cached_tokens": t.cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"id": c.id or new_id("call_"), "type": "function",
         "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
        for c in reply.tool_calls
    ]


def chat_completion(reply: Reply, model: str, tokens: Tokens) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = _calls(reply)
    choice = {"index": 0, "message": message, "logprobs": None,
              "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
    return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [choice], "usage": _chat_usage(tokens)}


def chat_chunks(reply: Reply, model: str, tokens: Tokens, include_usage: bool) -> Iterator[bytes]:
    """``chat.completion.chunk`` events: role, text deltas, tool-call deltas, finish, usage, [DONE]."""
    head = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in pieces(reply.text):
        yield chunk({"content": piece})
    for i, call in enumerate(_calls(reply)):
        opening = {"index": i, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
        yield chunk({"tool_calls": [opening]})
        for piece in pieces(call["function"]["arguments"]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    if include_usage:
        yield sse({**head, "choices": [], "usage": _chat_usage(tokens)})
    yield sse("[DONE]")


def _output_items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append({"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
    for call in reply.tool_calls:
        items.append({"type": "function_call", "id": new_id("fc_"), "call_id": call.id or new_id("call_"),
                      "name": call.name, "arguments": json.dumps(call.arguments), "status": "completed"})
    return items


def response_object(reply: Reply, model: str, tokens: Tokens, body: dict[str, Any],
                    output: list[dict[str, Any]] | None = None, status: str = "completed") -> dict[str, Any]:
    """A Responses API ``response`` object."""
    done = status == "completed"
    return {
        "id": new_id("resp_"), "object": "response", "created_at": int(time.time()), "status": status,
        "model": model, "output": _output_items(reply) if output is None else output,
        "parallel_tool_calls": True, "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools", []),
        "instructions": body.get("instructions"), "metadata": {}, "error": None, "incomplete_details": None,
        "temperature": body.get("temperature"), "top_p": None, "text": {"format": {"type": "text"}},
        "usage": None if not done else {
            "input_tokens": tokens.input, "output_tokens": tokens.output, "total_tokens": tokens.input + tokens.output,
            "input_tokens_details": {"cached_tokens": tokens.cached},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def response_events(reply: Reply, model: str, tokens: Tokens, body: dict[str, Any]) -> Iterator[bytes]:
    """Responses streaming: created, in_progress, per-item added/delta/done events, completed."""
    final = response_object(reply, model, tokens, body)
    seq = iter(range(1_000_000))

    def event(kind: str, **data: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **data}, event=kind)

    started = {**final, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(final["output"]):
        yield from _item_events(event, index, item)
    yield event("response.completed", response=final)


def _item_events(event: Any, index: int, item: dict[str, Any]) -> Iterator[bytes]:
    where = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        yield event("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
        part = {"type": "output_text", "text": "", "annotations": []}
        yield event("response.content_part.added", **where, content_index=0, part=part)
        for piece in pieces(text):
            yield event("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
        yield event("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
        yield event("response.content_part.done", **where, content_index=0, part={**part, "text": text})
    else:
        yield event("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""})
        for piece in pieces(item["arguments"]):
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event("response.function_call_arguments.done", **where, arguments=item["arguments"], name=item["name"])
    yield event("response.output_item.done", output_index=index, item=item)
