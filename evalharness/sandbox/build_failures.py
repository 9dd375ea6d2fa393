"""Why an image build failed, and whether the task (or its pack) is to blame: pure functions over the build log.

A build fails for one of two kinds of reason. The recipe is wrong (a wrong sdist sha256, a
``defect_patch`` that does not apply, a git ref or repository that does not exist, a setup
command that always fails): building again fails the same way, and the trials are *task
errors*. Or the engine or the network failed: that is infrastructure, retried, then counted
apart. ``diagnose`` reads the output of the failing build step and returns a one-line reason
and a kind; ``is_task_defect`` decides from the failures of one image so far:

- a line our own build scripts mark with ``evalharness-task-error:``, or a known deterministic
  signature (``TASK_SIGNATURES``: sha256 mismatch, a patch git refuses, a git ref or repository
  that does not exist), is a task defect at once;
- else a known transient signature (``TRANSIENT_SIGNATURES``: DNS, refused or reset connections,
  time-outs, HTTP 5xx, a full disk, an engine error) is never one, however often it repeats;
- anything else is a task defect when two builds in a row failed with the same reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

TASK_MARK = "evalharness-task-error:"
"""Prefix of a line our build scripts (prepare_task.sh, unpack_sdist.py) print for a recipe defect."""

TASK_SIGNATURES = tuple(re.compile(p) for p in (
    r"sha256 mismatch for ",
    r"patch does not apply|error: patch failed:|error: corrupt patch|No valid patches in input",
    r"did not match any file\(s\) known to git",
    r"fatal: reference is not a tree",
    r"fatal: repository '.*' not found|does not appear to be a git repository",
    r"Remote branch .* not found|couldn't find remote ref",
    r"unknown revision or path not in the working tree|fatal: bad revision",
))
TRANSIENT_SIGNATURES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"temporary failure in name resolution|could not resolve host|name or service not known",
    r"connection (refused|reset|timed out|aborted)|network is unreachable|no route to host",
    r"timed? ?out|NewConnectionError|ProtocolError|Max retries exceeded|RemoteDisconnected",
    r"\b(HTTP|error|status)[ :]*5\d\d\b|\b50[234] (Bad Gateway|Service Unavailable|Gateway Time)",
    r"no space left on device|cannot allocate memory|Cannot connect to the Docker daemon",
    r"CERTIFICATE_VERIFY_FAILED|TLS handshake",
))
_ERROR_LINE = re.compile(r"^(error|fatal|ERROR|Error|E):? ")
_STEP = re.compile(r"^Step \d+/\d+ : ")
_BUILDER_LINE = re.compile(r"^\s*(--->|Removing intermediate container )")

Kind = Literal["task", "transient", "unknown"]


@dataclass(frozen=True)
class BuildFailure:
    """One failed build: a one-line reason and what kind of failure it looks like."""

    reason: str
    kind: Kind


def failing_step_output(log: str) -> list[str]:
    """Non-empty output lines of the last build step (the one that failed), without the builder's own lines."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if _STEP.match(line)]
    step = lines[starts[-1] + 1:] if starts else lines
    return [line.strip() for line in step if line.strip() and not _BUILDER_LINE.match(line)]


def diagnose(log: str, error: str = "") -> BuildFailure:
    """The reason and kind of a build that failed with ``error`` after printing ``log``."""
    output = failing_step_output(log)
    for line in output:
        if line.startswith(TASK_MARK):
            return BuildFailure(line[len(TASK_MARK):].strip() or line, "task")
    for line in output:
        if any(p.search(line) for p in TASK_SIGNATURES):
            return BuildFailure(_one_line(line), "task")
    for line in output:
        if any(p.search(line) for p in TRANSIENT_SIGNATURES):
            return BuildFailure(_one_line(line), "transient")
    errors = [line for line in output if _ERROR_LINE.match(line)]
    reason = errors[0] if errors else (output[-1] if output else error)
    return BuildFailure(_one_line(reason or "image build failed (no output)"), "unknown")


def engine_failure(error: str) -> BuildFailure:
    """A build the engine could not carry out (connection lost, API error): infrastructure."""
    return BuildFailure(_one_line(error), "transient")


def is_task_defect(history: Sequence[BuildFailure]) -> bool:
    """True when the failures of one image so far (oldest first) say its recipe is broken."""
    if not history:
        return False
    last = history[-1]
    if last.kind != "unknown":
        return last.kind == "task"
    return len(history) >= 2 and history[-2].kind == "unknown" and history[-2].reason == last.reason


def _one_line(text: str, limit: int = 300) -> str:
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."
