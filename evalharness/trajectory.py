"""The common trajectory format every harness writes, and its terminal view (``evalharness show``).

A trajectory is a list of steps (dicts). Every step has ``index``, ``t_start`` (ISO time, UTC),
``duration_s`` and ``kind``:

- ``model``: ``messages_in`` (messages sent), ``content`` (assistant text), ``tool_calls``
  (``[{name, arguments}]``), ``usage`` (a Usage dict);
- ``command``: ``command``, ``exit_code``, ``output`` (truncated with a marker), ``timed_out``;
- ``note``: ``text`` and free fields (submission, budget reached, format error, exit status).

Steps without a ``kind`` (the reference harnesses' ``{action, exit_code, output}``, older runs) are
shown as commands, numbered by position, and the oracle's as "oracle: gold patch applied" (or not).

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

    def add(self, kind: str, t_start: str, duration_s: float | None, **fields: Any) -> dict[str, Any]:
        step = {"index": len(self.steps), "t_start": t_start, "duration_s": duration_s, "kind": kind, **fields}
        self.steps.append(step)
        return step

    @staticmethod
    def _since(started: tuple[str, float]) -> tuple[str, float]:
        return started[0], round(time.monotonic() - started[1], 3)

    def model(self, started: tuple[str, float], messages_in: int, message: dict[str, Any], usage: Usage,
              ) -> dict[str, Any]:
        return self.add("model", *self._since(started), messages_in=messages_in, content=message.get("content") or "",
                        tool_calls=tool_calls_of(message), usage=usage.model_dump())

    def command(self, started: tuple[str, float], command: str, exit_code: int | None, output: str,
                timed_out: bool = False) -> dict[str, Any]:
        return self.add("command", *self._since(started), command=command, exit_code=exit_code,
                        output=truncate(output, self.output_limit), timed_out=timed_out)

    def note(self, text: str, **fields: Any) -> dict[str, Any]:
        return self.add("note", now_iso(), 0.0, text=text, **fields)


def from_mini_swe_messages(messages: list[dict[str, Any]], output_limit: int = DEFAULT_OUTPUT_LIMIT,
                           ) -> list[dict[str, Any]]:
    """The common trajectory of a mini-swe-agent conversation (``DefaultAgent.messages``).

    Model steps come from assistant messages and from format-error messages (the call was made,
    its reply rejected); timing and usage from the ``extra["evalharness"]`` the mini-swe-agent
    harness attaches; command steps from observation messages and from the exit message of a
    submission (whose command never gets an observation).
    """
    rec = Recorder(output_limit)
    for message in messages:
        role, extra = message.get("role"), message.get("extra") or {}
        info = extra.get("evalharness") or {}
        if role == "assistant" or info:
            reply = message if role == "assistant" else _response_message(extra)
            rec.add("model", info.get("t_start", ""), info.get("duration_s"), messages_in=info.get("messages_in"),
                    content=reply.get("content") or "", tool_calls=tool_calls_of(reply), usage=info.get("usage"))
        if extra.get("interrupt_type") == "FormatError":
            rec.add("note", info.get("t_start", ""), 0.0, text="format error", message=message.get("content"))
        elif "command" in extra:
            rec.add("command", extra.get("t_start", ""), extra.get("duration_s"), command=extra["command"],
                    exit_code=extra.get("returncode"), output=truncate(extra.get("raw_output", ""), output_limit),
                    timed_out=bool(extra.get("timed_out")))
        if role == "exit":
            rec.note(str(extra.get("exit_status") or message.get("content")), exit_status=extra.get("exit_status"),
                     budget=extra.get("budget"), submission=truncate(extra.get("submission", ""), output_limit))
    return rec.steps


def _response_message(extra: dict[str, Any]) -> dict[str, Any]:
    """The assistant message inside a stored litellm response dump (format-error messages keep only that)."""
    response = extra.get("response")
    try:
        return dict(response["choices"][0]["message"])  # type: ignore[index]
    except (TypeError, KeyError, IndexError):
        return {"content": extra.get("model_response", "")}


def document(steps: list[dict[str, Any]], usage: Usage, **meta: Any) -> dict[str, Any]:
    """The contents of ``trajectory.json``."""
    return {"format": FORMAT, **meta, "usage": usage.model_dump(), "steps": steps}


def load(path: Path) -> dict[str, Any]:
    """Read a ``trajectory.json``; a bare list of steps (older runs) is wrapped into a document."""
    data = json.loads(Path(path).read_text())
    return {"format": "legacy", "steps": data} if isinstance(data, list) else data


def trial_folders(target: Path) -> list[Path]:
    """Trial folders (holding a trajectory.json) at or under ``target``, sorted."""
    if (target / "trajectory.json").is_file():
        return [target]
    return sorted(p.parent for p in target.rglob("trajectory.json") if ".partial-" not in str(p))


def render(folder: Path, console: Any, output_chars: int = 1500) -> None:
    """Print one trial's trajectory (steps, commands, outputs cut to ``output_chars``), usage and outcome."""
    from rich.panel import Panel
    from rich.text import Text

    doc = load(folder / "trajectory.json")
    result_file = folder / "result.json"
    result = json.loads(result_file.read_text()) if result_file.is_file() else {}
    outcome = result.get("outcome") or doc.get("outcome", "?")
    head = Text.assemble((f"{outcome}", "bold green" if outcome == "resolved" else "bold red"),
                         f"  {result.get('reason') or doc.get('reason', '')}\n",
                         f"{doc.get('task_id', '?')} · {doc.get('harness', '?')} · {doc.get('model', '?')} · "
                         f"seed {doc.get('seed', '?')} · exit status {doc.get('exit_status', '?')}\n",
                         _usage_line(doc.get("usage") or {}))
    console.print(Panel(head, title=str(folder), title_align="left"))
    for position, step in enumerate(doc.get("steps", [])):
        console.print(_step_text(step, output_chars, position=position, harness=doc.get("harness")))
    if result.get("error"):
        console.print(Panel(Text(truncate(str(result["error"]), output_chars)), title="error", border_style="red"))
    found = [f for f in result.get("suspicious") or [] if isinstance(f, dict)]
    if found:
        lines = "\n".join(f"{f.get('path')}:{f.get('line')}  [{f.get('reason')}]  {f.get('text')}" for f in found)
        console.print(Panel(Text(lines), title=f"suspicious code: {len(found)} added lines to read",
                            border_style="yellow"))


def _usage_line(usage: dict[str, Any]) -> str:
    cost = usage.get("cost_usd")
    return (f"{usage.get('calls', 0)} model calls · {usage.get('input_tokens', 0)} input + "
            f"{usage.get('output_tokens', 0)} output tokens · cost "
            f"{'unknown' if cost is None else f'${cost:.6f}'}")


def _step_kind(step: dict[str, Any]) -> str:
    """The step's kind; a kind-less step with an ``action`` or ``command`` is a command, else a note."""
    if step.get("kind"):
        return str(step["kind"])
    return "command" if "action" in step or "command" in step else "note"


def _caption(step: dict[str, Any], harness: str | None) -> str:
    """What a kind-less step of a reference harness did, in words (the oracle applies the gold patch)."""
    if step.get("kind") or harness != "oracle":
        return ""
    code = step.get("exit_code")
    return "oracle: gold patch applied" if code == 0 else f"oracle: gold patch did not apply (exit {code})"


def _step_text(step: dict[str, Any], output_chars: int, position: int = 0, harness: str | None = None) -> Any:
    from rich.text import Text

    kind, took = _step_kind(step), step.get("duration_s")
    index = step["index"] if step.get("index") is not None else position
    when = f"{took:.2f} s" if isinstance(took, (int, float)) else "?"
    if kind == "model":
        usage = step.get("usage") or {}
        text = Text.assemble((f"[{index}] model", "bold cyan"), f"  {when} · {usage.get('input_tokens', 0)} in / "
                             f"{usage.get('output_tokens', 0)} out tokens\n")
        if step.get("content"):
            text.append(truncate(str(step["content"]), output_chars) + "\n")
        for call in step.get("tool_calls") or []:
            args = call.get("arguments")
            shown = args.get("command") if isinstance(args, dict) and "command" in args else json.dumps(args)
            text.append(f"→ {call.get('name')}: ", style="magenta")
            text.append(truncate(str(shown), output_chars) + "\n")
        return text
    if kind == "command":
        code = step.get("exit_code")
        flag = " · timed out" if step.get("timed_out") else ""
        caption = _caption(step, harness)
        command = step.get("command", step.get("action", ""))
        text = Text.assemble((f"[{index}] " + (f"{caption}\n    " if caption else ""), "bold yellow"),
                             ("$ ", "bold yellow"), (truncate(str(command), output_chars), "yellow"),
                             (f"\n    exit {code} · {when}{flag}\n", "green" if code == 0 else "red"))
        text.append(truncate(str(step.get("output", "")), output_chars) + "\n", style="dim")
        return text
    text = Text(f"[{index}] • {step.get('text', '')}\n", style="bold")
    for key, value in step.items():
        if key not in ("index", "t_start", "duration_s", "kind", "text", "exit_status") and value:
            text.append(f"    {key}: {truncate(str(value), output_chars)}\n")
    return text
