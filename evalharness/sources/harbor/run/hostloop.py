"""A Harbor environment container seen as a harness's sandbox (``SandboxLike``), for the harnesses whose agent loop
runs on the host (``minimal``, ``mini-swe-agent``): their model calls leave from the host, as on every other pack,
and their commands run in the environment container as root (Harbor's agent user) in the task's work directory.

Each command is cut by the container's own ``timeout`` at its limit; one that outlives a further grace period
stops the container, and every later command is told so (the agent's doing, never the machine's), as it is when
the agent's own processes end the container (``kill -KILL -1`` as root ends its ``sleep``). A command started
after the trial's deadline raises BudgetExhausted, as the Python packs' sandbox does. ``shared`` are the harness's
shared folders (``sandbox_options()``: container path -> host folder, mounted read-only), e.g. the model relay's."""

from __future__ import annotations

import io
import posixpath
import shlex
import tarfile
import time

from pathlib import Path

from evalharness.errors import BudgetExhausted, SandboxError
from evalharness.sources.harbor.run.container import HarborContainer
from evalharness.types import ExecResult

GRACE_S = 30.0
"""How long past its limit a command may run (the in-container ``timeout`` sends KILL after 5 s) before the host
stops the container."""
STOPPED = ("the environment container was stopped: a command outlived its time limit by {grace:g} s; "
           "no later command can run")
ENDED = "the environment container has stopped: the agent's processes ended it; no later command can run"
_DIFF = "git -C {workdir} rev-parse --is-inside-work-tree >/dev/null 2>&1 && git -C {workdir} diff --no-color HEAD 2>/dev/null"


class HarborSandbox:
    """``SandboxLike`` over the agent's HarborContainer (started). ``deadline``: time.monotonic() value or None."""

    def __init__(self, box: HarborContainer, workdir: str, *, env: dict[str, str], deadline: float | None,
                 wall_budget: float = 0.0, default_timeout: float = 120.0, shared: dict[str, Path] | None = None):
        self.box, self.workdir, self.env = box, workdir, dict(env)
        self.deadline, self.wall_budget, self.default_timeout = deadline, wall_budget, default_timeout
        self.shared = dict(shared or {})
        self.stopped: str | None = None
        """Why no command can run any more (None while the container runs)."""
        self._has_timeout: bool | None = None

    def shared_dir(self, container_path: str) -> Path:
        """The host folder mounted read-only at ``container_path``."""
        if container_path not in self.shared:
            raise SandboxError(f"{container_path} is not a shared folder of this container "
                               f"(shared: {', '.join(self.shared) or 'none'})")
        return self.shared[container_path]

    def _run(self, command: str, **kwargs):
        """``box.exec``, or None once the agent's processes have ended the container: an exec refused then (an
        error, or exit 126 "cannot exec in a stopped state", by timing) is the agent's doing, never the machine's."""
        try:
            done = self.box.exec(command, **kwargs)
        except SandboxError:
            if self.box.running():
                raise  # the engine failed: the machine's
            self.stopped = ENDED
            return None
        if done.exit_code != 0 and not done.timed_out and not self.box.running():
            self.stopped = ENDED
            return None
        return done

    def exec(self, command: str, *, timeout: float | None = None, env: dict[str, str] | None = None,
             user: str | None = None, workdir: str | None = None) -> ExecResult:
        """``user`` is ignored: Harbor's agent runs as root in its own container."""
        limit = timeout if timeout is not None else self.default_timeout
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise BudgetExhausted("wall_s", self.wall_budget, self.wall_budget - remaining)
            limit = min(limit, remaining)
        limit = max(limit, 0.1)
        wrapped = (f"timeout -k 5 {limit:.1f} bash -c {shlex.quote(command)}" if self._timeout_available()
                   else command)
        started = time.monotonic()
        done = None if self.stopped else self._run(wrapped, workdir=workdir or self.workdir,
                                                  env={**self.env, **(env or {})} or None, timeout=limit + GRACE_S)
        elapsed = time.monotonic() - started
        if done is not None and done.timed_out:  # the host stopped the container: the agent's processes with it
            self.stopped = STOPPED.format(grace=GRACE_S)
        if self.stopped:
            return ExecResult(exit_code=-1, output=self.stopped, timed_out=True, duration_s=elapsed)
        cut = done.exit_code in (124, 137) and elapsed >= limit - 0.5
        return ExecResult(exit_code=done.exit_code, output=done.output, timed_out=cut, duration_s=elapsed)

    def _timeout_available(self) -> bool:
        if self._has_timeout is None and not self.stopped:
            probe = self._run("command -v timeout >/dev/null", workdir="/", timeout=30)
            self._has_timeout = probe is not None and probe.exit_code == 0 and not probe.timed_out
        return bool(self._has_timeout)

    def write_file(self, path: str, content: str | bytes) -> None:
        """Through the engine's archive API into the folder (made first by the agent's own ``mkdir``)."""
        data = content.encode() if isinstance(content, str) else content
        full = posixpath.join(self.workdir, path)
        folder = posixpath.dirname(full) or "/"
        if self.stopped or self._run(f"mkdir -p {shlex.quote(folder)}", workdir="/", timeout=30) is None:
            raise FileNotFoundError(f"{full}: {self.stopped}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(posixpath.basename(full))
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self.box.put(folder, buf.getvalue())

    def read_file(self, path: str) -> bytes:
        data = self.box.read_file(posixpath.join(self.workdir, path))
        if data is None:
            raise FileNotFoundError(path)
        return data

    def diff(self) -> str:
        """The work directory's change for the harness to show its model, when it is a git work tree (else "").
        Never graded: the verifier decides the trial, and patch.diff is derived after the agent has stopped."""
        done = None if self.stopped else self._run(_DIFF.format(workdir=shlex.quote(self.workdir)), workdir="/",
                                                   timeout=60)
        return done.output if done is not None and done.exit_code == 0 and not done.timed_out else ""
