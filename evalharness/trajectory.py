"""The common trajectory format every harness writes, and its terminal view (``evalharness show``).

A trajectory is a list of steps (dicts). Every step has ``index``, ``t_start`` (ISO time, UTC),
``duration_s`` and ``kind``:

- ``model``: ``messages_in`` (messages sent), ``content`` (assistant text), ``tool_calls``
  (``[{name, arguments}]``), ``usage`` (a Usage dict);
- ``command``: ``command``, ``exit_code``, ``output`` (truncated with a marker), ``timed_out``;
- ``note``: ``text`` and free fields (submission, budget reached, format error, exit status).

``trajectory.json`` is ``document(steps, usage, ...)``: ``{"format", "steps", "usage", ...}``.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalharness.types import Usage

FORMAT = "evalharness.trajectory/1"
DEFAULT_OUTPUT_LIMIT = 10_000


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def truncate(text: str, limit: int) -> str:
    """Head and tail of ``text`` within ``limit`` characters, with a marker saying how much was cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters truncated by evalharness ...]\n{text[len(text) - half:]}"


def tool_calls_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{name, arguments}]`` from an OpenAI-format assistant message (arguments parsed when JSON)."""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        raw = function.get("arguments") or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = raw
        calls.append({"name": function.get("name", ""), "arguments": arguments})
    return calls


class Recorder:
    """Collects steps as a harness works; ``start()`` returns a token to pass back when the step ends."""

    def __init__(self, output_limit: int = DEFAULT_OUTPUT_LIMIT):
        self.steps: list[dict[str, Any]] = []
        self.output_limit = output_limit

    @staticmethod
    def start() -> tuple[str, float]:
        return now_iso(), time.monotonic()

    def _add(self, kind: str, started: tuple[str, float] | None, **fields: Any) -> dict[str, Any]:
        t_start, t0 = started or self.start()
        step = {"index": len(self.steps), "t_start": t_start, "duration_s": round(time.monotonic() - t0, 3),
                "kind": kind, **fields}
        self.steps.append(step)
        return step

    def model(self, started: tuple[str, float], messages_in: int, message: dict[str, Any], usage: Usage,
              ) -> dict[str, Any]:
        return self._add("model", started, messages_in=messages_in, content=message.get("content") or "",
                         tool_calls=tool_calls_of(message), usage=usage.model_dump())

    def command(self, started: tuple[str, float], command: str, exit_code: int, output: str,
                timed_out: bool = False) -> dict[str, Any]:
        return self._add("command", started, command=command, exit_code=exit_code,
                         output=truncate(output, self.output_limit), timed_out=timed_out)

    def note(self, text: str, **fields: Any) -> dict[str, Any]:
        return self._add("note", None, text=text, **fields)


def document(steps: list[dict[str, Any]], usage: Usage, **meta: Any) -> dict[str, Any]:
    """The contents of ``trajectory.json``."""
    return {"format": FORMAT, **meta, "usage": usage.model_dump(), "steps": steps}


def load(path: Path) -> dict[str, Any]:
    """Read a ``trajectory.json``; a bare list of steps (older runs) is wrapped into a document."""
    data = json.loads(Path(path).read_text())
    return {"format": "legacy", "steps": data} if isinstance(data, list) else data
