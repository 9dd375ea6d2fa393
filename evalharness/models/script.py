"""What the scripted model server answers: replies, scenarios and their cursors.

A script is a list of replies (one conversation), a set of scenarios matched by model name
or by a regex searched in the prompt (each with its own cursor), or a Python callable
``request -> reply``. This is mini-swe-agent's ``DeterministicModel`` moved onto the wire;
the file format is documented in docs/model-server.md.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalharness.errors import ConfigError
from evalharness.redact import redact_text

ErrorKind = Literal[
    "rate_limit", "server", "overloaded", "auth", "permission", "not_found", "bad_request", "context_window"
]
_KIND_BY_STATUS: dict[int, ErrorKind] = {
    400: "bad_request", 401: "auth", 403: "permission", 404: "not_found", 413: "context_window",
    429: "rate_limit", 529: "overloaded",
}
_STATUS_BY_KIND: dict[str, int] = {
    "rate_limit": 429, "server": 500, "overloaded": 529, "auth": 401, "permission": 403,
    "not_found": 404, "bad_request": 400, "context_window": 400,
}


class ToolCall(BaseModel):
    """One function call the model makes, e.g. ``bash(command="ls")``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    """Call id; generated per request when omitted."""


class ErrorSpec(BaseModel):
    """An HTTP error answered instead of a completion, with a provider-shaped body."""

    model_config = ConfigDict(extra="forbid")

    status: int = Field(default=500, ge=400, le=599)
    kind: ErrorKind | None = None
    """Provider error category; derived from ``status`` when omitted (``context_window`` is a 400)."""
    message: str | None = None
    retry_after: float | None = None
    """Seconds sent in the ``retry-after`` header."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, int):
            return {"status": value}
        if isinstance(value, str):
            return {"kind": value}
        return value

    @model_validator(mode="after")
    def _fill(self) -> "ErrorSpec":
        if self.kind is None:
            self.kind = _KIND_BY_STATUS.get(self.status, "server" if self.status >= 500 else "bad_request")
        elif "status" not in self.model_fields_set:
            self.status = _STATUS_BY_KIND[self.kind]
        return self


class Reply(BaseModel):
    """One scripted answer: text and/or tool calls, or an HTTP error; optionally late."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    error: ErrorSpec | None = None
    delay_s: float = Field(default=0.0, ge=0)
    """Seconds to wait before answering (a hang when longer than the client's timeout)."""
    input_tokens: int | None = Field(default=None, ge=0)
    """Prompt tokens reported; estimated from the prompt's length (4 characters a token) when omitted."""
    output_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    """Prompt tokens read from cache (OpenAI ``cached_tokens``, Anthropic ``cache_read_input_tokens``)."""
    cache_write_tokens: int = Field(default=0, ge=0)
    """Anthropic ``cache_creation_input_tokens``."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """Accept ``"text"``, ``{bash: cmd}`` and ``{hang: seconds}`` as in the script file."""
        if isinstance(value, str):
            return {"text": value}
        if isinstance(value, dict) and ("bash" in value or "hang" in value):
            value = dict(value)
            if "bash" in value:
                call = {"name": "bash", "arguments": {"command": value.pop("bash")}}
                value["tool_calls"] = [*value.get("tool_calls", []), call]
            if "hang" in value:
                value["delay_s"] = value.pop("hang")
        return value


class Scenario(BaseModel):
    """Replies for the requests whose model name and prompt match; served in order."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    model: str | None = None
    """Exact model name as sent on the wire (litellm strips the provider prefix)."""
    prompt: str | None = None
    """Regex searched (``re.search``) in the request's prompt text."""
    replies: list[Reply] = Field(default_factory=list)

    def matches(self, model: str, prompt: str) -> bool:
        return not self.mismatches(model, prompt)

    def mismatches(self, model: str, prompt: str) -> list[str]:
        """The matchers that fail for this request, in words (empty when the scenario matches)."""
        failed = []
        if self.model is not None and self.model != model:
            failed.append(f"model is {model!r}, not {self.model!r}")
        if self.prompt is not None and re.search(self.prompt, prompt) is None:
            failed.append(f"prompt regex {self.prompt!r} not found in the prompt")
        return failed


class ScriptSpec(BaseModel):
    """The script file's top level (YAML or JSON)."""

    model_config = ConfigDict(extra="forbid")

    scenarios: list[Scenario] = Field(default_factory=list)
    on_exhausted: Literal["error", "repeat_last", "cycle"] = "error"
    """What to answer once a scenario's replies are used up: a 400 error, the last reply again, or from the top."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {"scenarios": [{"name": "default", "replies": value}]}
        if isinstance(value, dict) and "replies" in value:
            value = dict(value)
            value["scenarios"] = [*value.get("scenarios", []), {"name": "default", "replies": value.pop("replies")}]
        return value

    @model_validator(mode="after")
    def _names(self) -> "ScriptSpec":
        for i, scenario in enumerate(self.scenarios):
            scenario.name = scenario.name or scenario.model or scenario.prompt or f"scenario-{i}"
        return self


@dataclass
class ModelRequest:
    """A request as the script sees it (and as the server records it)."""

    path: str
    api: str
    """``chat`` (OpenAI chat completions), ``responses`` (OpenAI Responses) or ``messages`` (Anthropic)."""
    model: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    prompt: str = ""
    """All text of the request (system, messages, tool results) joined by newlines."""

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


class ScriptError(Exception):
    """No reply for a request: no scenario matched or the scenario is used up (served as a 400)."""


ReplyFunction = Callable[[ModelRequest], "Reply | str | dict[str, Any]"]


class Script:
    """A script with a cursor per scenario; thread-safe."""

    def __init__(self, source: ScriptSpec | ReplyFunction):
        self._spec = source if isinstance(source, ScriptSpec) else None
        self._function = None if isinstance(source, ScriptSpec) else source
        self._cursors: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def models(self) -> list[str]:
        """Model names the scenarios match on (for ``/v1/models``)."""
        return [s.model for s in self._spec.scenarios if s.model] if self._spec else []

    def next_reply(self, request: ModelRequest) -> tuple[str, int, Reply]:
        """Return (scenario name, reply index, reply) and advance that scenario's cursor."""
        if self._function is not None:
            with self._lock:
                index = self._cursors["function"] = self._cursors.get("function", -1) + 1
            try:
                return "function", index, as_reply(self._function(request))
            except Exception as e:  # served as a 400 naming the error; the harness sees it as a HarnessError
                raise ScriptError(f"script function raised {type(e).__name__}: {e}") from e
        scenario = self._match(request)
        with self._lock:
            index = self._cursors.get(scenario.name, 0)
            self._cursors[scenario.name] = index + 1
        return scenario.name, index, self._pick(scenario, index)

    def _match(self, request: ModelRequest) -> Scenario:
        assert self._spec is not None
        for scenario in self._spec.scenarios:
            if scenario.matches(request.model, request.prompt):
                return scenario
        raise ScriptError(no_match_message(self._spec.scenarios, request))

    def _pick(self, scenario: Scenario, index: int) -> Reply:
        assert self._spec is not None
        n = len(scenario.replies)
        if index < n:
            return scenario.replies[index]
        if n and self._spec.on_exhausted == "repeat_last":
            return scenario.replies[-1]
        if n and self._spec.on_exhausted == "cycle":
            return scenario.replies[index % n]
        raise ScriptError(f"script for scenario {scenario.name!r} is used up after {n} replies")


EXCERPT_CHARS = 120
"""Characters of the request's first user message quoted in a no-match error (credential shapes redacted)."""


def no_match_message(scenarios: list[Scenario], request: ModelRequest) -> str:
    """Why no scenario answers ``request``: each scenario's failing matchers, and what the request had to match on
    (model, api, prompt length, the start of its first user message; never its headers, which carry the key)."""
    why = "; ".join(f"scenario {s.name!r}: {' and '.join(s.mismatches(request.model, request.prompt))}"
                    for s in scenarios) or "the script has no scenarios"
    excerpt = redact_text(first_user_text(request.body)[:EXCERPT_CHARS], [])
    return (f"no scenario matches model {request.model!r} ({why}). The request: api {request.api}, model "
            f"{request.model!r}, {len(request.prompt)} prompt characters (system, messages, tool results), first "
            f"user message {excerpt!r}")


def first_user_text(body: dict[str, Any]) -> str:
    """The text of the first user message of a chat, Responses or Anthropic Messages body ('' when none)."""
    items = body.get("messages") or body.get("input") or []
    if isinstance(items, str):
        return items
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def as_reply(value: Reply | str | dict[str, Any]) -> Reply:
    return value if isinstance(value, Reply) else Reply.model_validate(value)


def as_script(source: Any) -> Script:
    """Coerce a Script, ScriptSpec, callable, list of replies, mapping or file path into a Script."""
    if isinstance(source, Script):
        return source
    if isinstance(source, (str, Path)):
        return load_script(source)
    if callable(source) and not isinstance(source, (ScriptSpec, list, dict)):
        return Script(source)
    try:
        return Script(source if isinstance(source, ScriptSpec) else ScriptSpec.model_validate(source or []))
    except ValidationError as e:
        raise ConfigError(f"invalid model script: {e}") from e


def load_script(path: str | Path) -> Script:
    """Read a script file: ``.yaml``/``.yml``/``.json`` (a ScriptSpec) or ``.jsonl`` (a recording, replayed)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"model script {path} not found", hint="pass an existing .yaml, .json or .jsonl file")
    if path.suffix == ".jsonl":
        from evalharness.models.recording import replay_spec

        return Script(replay_spec(path))
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return Script(ScriptSpec.model_validate(data or []))
    except (ValidationError, yaml.YAMLError, json.JSONDecodeError) as e:
        raise ConfigError(f"model script {path} is invalid", hint=str(e).replace("\n", "\n  ")) from e


def estimate_tokens(text: str) -> int:
    """Rough token count: one token per four characters, at least one."""
    return max(1, (len(text) + 3) // 4)


def output_text(reply: Reply) -> str:
    """Everything the reply emits, for estimating output tokens."""
    return reply.text + "".join(c.name + json.dumps(c.arguments) for c in reply.tool_calls)
