"""Pieces shared by the wire formats: token counts, ids, SSE framing, text chunking."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from evalharness.models.script import Reply, estimate_tokens, output_text


@dataclass(frozen=True)
class Tokens:
    """Token counts reported for one reply; ``input`` includes cached tokens (OpenAI's convention)."""

    input: int
    output: int
    cached: int = 0
    cache_write: int = 0


def tokens_for(reply: Reply, prompt: str) -> Tokens:
    """Scripted counts, or estimates from the prompt and reply lengths."""
    inp = reply.input_tokens if reply.input_tokens is not None else estimate_tokens(prompt)
    out = reply.output_tokens if reply.output_tokens is not None else estimate_tokens(output_text(reply))
    return Tokens(input=inp, output=out, cached=reply.cached_tokens, cache_write=reply.cache_write_tokens)


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event (``event:`` line only when named)."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def pieces(text: str, size: int = 16) -> list[str]:
    """Split ``text`` into deltas so clients must reassemble them (empty text gives none)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def text_of(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of parts/blocks holding text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(filter(None, (_part_text(p) for p in content)))
    return _part_text(content)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    for key in ("text", "output", "content", "input"):
        if key in part:
            value = part[key]
            return value if isinstance(value, str) else text_of(value) if isinstance(value, list) else json.dumps(value)
    return ""
