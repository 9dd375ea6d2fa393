"""Short constructors for scripted replies, for tests and Python scripts.

    server.set_script([http_error(429, retry_after=1), bash("ls"), reply("done")])
"""

from __future__ import annotations

from typing import Any

from evalharness.models.script import ErrorKind, ErrorSpec, Reply, ToolCall


def reply(text: str = "", *tool_calls: ToolCall, **fields: Any) -> Reply:
    """A completion with text and/or tool calls; ``fields`` sets token counts or ``delay_s``."""
    return Reply(text=text, tool_calls=list(tool_calls), **fields)


def tool_call(name: str, **arguments: Any) -> ToolCall:
    """A function call, e.g. ``tool_call("bash", command="ls")``."""
    return ToolCall(name=name, arguments=arguments)


def bash(command: str, text: str = "", **fields: Any) -> Reply:
    """A reply calling the ``bash`` tool with ``command`` (mini-swe-agent's only tool)."""
    return Reply(text=text, tool_calls=[tool_call("bash", command=command)], **fields)


def http_error(
    status: int = 500, message: str | None = None, *, retry_after: float | None = None, kind: ErrorKind | None = None
) -> Reply:
    """An HTTP error with a provider-shaped body: 429 (with ``retry-after``), 500, 401, ..."""
    spec = {"status": status, "message": message, "retry_after": retry_after}
    if kind is not None:
        spec["kind"] = kind
    return Reply(error=ErrorSpec.model_validate(spec))


def context_window_error(message: str | None = None) -> Reply:
    """A 400 saying the prompt is longer than the model's context window."""
    return Reply(error=ErrorSpec(kind="context_window", message=message))


def hang(seconds: float, then: Reply | str = "") -> Reply:
    """Wait ``seconds`` before answering ``then`` (the client times out when it is shorter)."""
    late = then if isinstance(then, Reply) else Reply(text=then)
    return late.model_copy(update={"delay_s": seconds})
