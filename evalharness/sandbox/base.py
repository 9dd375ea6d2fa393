"""The Sandbox contract every harness and the grader rely on."""

from __future__ import annotations

import abc
import shlex
import time
from dataclasses import dataclass

from evalharness.errors import BudgetExhausted, SandboxError
from evalharness.types import ExecResult

AGENT_USER = "agent"
BASE_COMMIT_FILE = "/etc/evalharness/base_commit"
MAX_OUTPUT_BYTES = 2_000_000


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox."""

    cpus: float = 1.0
    memory: str = "2g"
    pids: int = 512


def clip_output(data: bytes, limit: int = MAX_OUTPUT_BYTES) -> str:
    """Keep the head and tail of an oversized output, saying how much was dropped."""
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace")
    half = limit // 2
    dropped = len(data) - 2 * half
    return (data[:half].decode("utf-8", errors="replace")
            + f"\n[... {dropped} bytes dropped by evalharness ...]\n"
            + data[-half:].decode("utf-8", errors="replace"))


class Sandbox(abc.ABC):
    """A live, isolated copy of a task's repository.

    Commands run as a non-root user with a wall-clock timeout each. When a deadline is set
    (the trial's wall budget), a command started after it raises BudgetExhausted and a
    command running across it is cut at the deadline.
    """

    workdir: str = "/testbed"
    default_timeout: float = 120.0
    deadline: float | None = None  # time.monotonic() value
    wall_budget: float = 0.0

    @abc.abstractmethod
    def _exec(self, argv: list[str], *, timeout: float, env: dict[str, str] | None, user: str,
              workdir: str) -> ExecResult: ...

    @abc.abstractmethod
    def write_file(self, path: str, content: str | bytes, *, user: str = AGENT_USER) -> None: ...

    @abc.abstractmethod
    def read_file(self, path: str) -> bytes: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def exec(self, command: str, *, timeout: float | None = None, env: dict[str, str] | None = None,
             user: str | None = None, workdir: str | None = None) -> ExecResult:
        """Run a shell command; never longer than ``timeout`` seconds (or the trial deadline)."""
        limit = timeout if timeout is not None else self.default_timeout
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise BudgetExhausted("wall_s", self.wall_budget, self.wall_budget - remaining)
            limit = min(limit, remaining)
        argv = ["timeout", "-k", "5", f"{max(limit, 0.1):.1f}", "bash", "-c", command]
        return self._exec(argv, timeout=limit, env=env, user=user or AGENT_USER, workdir=workdir or self.workdir)

    def set_wall_budget(self, seconds: float | None) -> None:
        self.wall_budget = seconds or 0.0
        self.deadline = None if seconds is None else time.monotonic() + seconds

    def ensure_dir(self, path: str, *, user: str = AGENT_USER) -> None:
        """mkdir -p, once per directory and user for the life of the sandbox."""
        known = self.__dict__.setdefault("_known_dirs", {("/", AGENT_USER), ("/tmp", AGENT_USER)})
        if (path, user) not in known:
            self.exec(f"mkdir -p {shlex.quote(path)}", user=user, timeout=30)
            known.add((path, user))

    def base_commit(self) -> str:
        """The task's single commit (read once: it never changes)."""
        if "_base_commit" not in self.__dict__:
            self.__dict__["_base_commit"] = self.read_file(BASE_COMMIT_FILE).decode().strip()
        return self.__dict__["_base_commit"]

    def diff(self) -> str:
        """Every change in the work tree against the base commit, new files included, as a git patch."""
        base = shlex.quote(self.base_commit())
        # not cut by the trial's deadline: a submission made just before it must still be collected
        command = f"git add -A && git diff --cached --binary {base}"
        r = self._exec(["timeout", "-k", "5", "120", "bash", "-c", command], timeout=120, env=None, user=AGENT_USER,
                       workdir=self.workdir)
        if r.exit_code != 0:
            raise SandboxError(f"git diff failed in the sandbox (exit {r.exit_code}): {r.output[-500:]}")
        return r.output

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
