"""The exception tree.

``UserError`` and its children are problems the user can fix (bad config, no engine,
unknown harness): the CLI prints them as one short block without a traceback and exits 1.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class EvalHarnessError(Exception):
    """Base of every error evalharness raises on purpose."""


class UserError(EvalHarnessError):
    """Something the user can fix; printed without a traceback.

    ``hint`` is an optional second line saying what to do.
    """

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  {self.hint}"


class TaskPackError(UserError):
    """A task pack is malformed: names the file, the line or task, the field and the problem."""


class TaskError(UserError):
    """A task or its pack is broken: its image recipe fails for a reason of the recipe (a wrong sdist
    sha256, a ``defect_patch`` that does not apply, a bad git ref or URL, a missing source folder),
    or its gold ``patch`` / ``test_patch`` does not apply. Never retried; a run records the task's
    trials as ``task_error`` with ``reason`` (one line), names them at the end and exits 1."""

    def __init__(self, message: str, hint: str | None = None, *, reason: str | None = None):
        super().__init__(message, hint)
        self.reason = reason or message


class ConfigError(UserError):
    """A configuration value is wrong or missing."""


class PrerequisiteError(UserError):
    """Something the machine lacks (Docker engine, base image, a binary)."""


class SandboxError(EvalHarnessError):
    """The sandbox (Docker) failed. Infrastructure, never the agent's fault: retried, then counted apart."""


class FileTooLarge(EvalHarnessError):
    """A file read from a sandbox is over its cap: what it means is the caller's to decide."""

    def __init__(self, path: str, limit: int):
        super().__init__(f"{path} is larger than {limit} bytes")
        self.path, self.limit = path, limit


class ImageBuildError(SandboxError):
    """An image could not be built; carries the tail of the build log and its diagnosis.

    ``reason`` is one line (e.g. "sha256 mismatch for x.tar.gz: expected ..., got ..."); ``kind`` is
    "task", "transient" or "unknown" (evalharness.sandbox.build_failures decides).
    """

    def __init__(self, message: str, log_tail: str = "", *, reason: str = "", kind: str = "unknown"):
        super().__init__(message if not log_tail else f"{message}\n--- build log (tail) ---\n{log_tail}")
        self.log_tail = log_tail
        self.reason = reason or message.splitlines()[0]
        self.kind = kind


class HarnessError(EvalHarnessError):
    """The harness could not do its job (bad credentials, unknown model, crash).

    Ends the trial with outcome HARNESS_ERROR; the run continues.
    """


class BudgetExhausted(EvalHarnessError):
    """A per-trial budget (steps, cost, tokens, wall time) was reached."""

    def __init__(self, which: str, limit: float, used: float):
        super().__init__(f"budget exhausted: {which} limit {limit:g} reached (used {used:g})")
        self.which, self.limit, self.used = which, limit, used
