"""What the agent does in a Harbor task's environment container, by harness kind: ``oracle`` copies solution/
to /solution and runs ``bash /solution/solve.sh`` in the work directory; ``null`` does nothing; ``command`` without
a model runs its command as root in the work directory (the instruction at /logs/agent/instruction.md). Harnesses
whose loop runs on the host (``minimal``, ``mini-swe-agent``, an import-path harness) get the container as their
sandbox (``hostloop.HarborSandbox``) and the instruction as the problem statement; their model calls leave from
the host as on every pack, and every way they end is kept as on other packs (``evalharness.trial.run_harness``).
A ``command`` harness that calls a model needs the in-container relay, not built for Harbor packs yet, and
``predictions`` has no base commit to apply a patch to: both a harness error, never the task's outcome."""

from __future__ import annotations

import io
import tarfile
import time

from evalharness.sources.harbor.container import HarborContainer, dir_tar
from evalharness.sources.harbor.hostloop import HarborSandbox
from evalharness.sources.harbor.model import HarborTask
from evalharness.types import AgentResult, Usage

INSTRUCTION = "/logs/agent/instruction.md"
NOT_ON_HARBOR = ("predictions",)
"""Kinds that cannot run on a Harbor pack (besides a ``command`` harness with a model)."""


def _file_tar(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        parts = name.split("/")[:-1]
        for i in range(len(parts)):
            folder = tarfile.TarInfo("/".join(parts[:i + 1]))
            folder.type, folder.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(folder)
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def prepare(box: HarborContainer, task: HarborTask) -> None:
    """Before start: /logs/agent with the instruction (/logs/verifier is never made here)."""
    box.put("/", _file_tar(INSTRUCTION.lstrip("/"), task.instruction.encode()))


def run_agent(box: HarborContainer, task: HarborTask, trial, budget, workdir: str, log: list[str]) -> AgentResult:
    """The agent's run in the started container; ``budget.max_wall_s`` caps the task's ``agent.timeout_sec``."""
    harness = trial.harness
    kind = harness.config().get("kind")
    timeout = min(t for t in (task.config.agent.timeout_sec or 1800.0, budget.max_wall_s) if t)
    env = {**task.config.environment.env}
    if kind == "null":
        return AgentResult(exit_status="submitted")
    if kind == "oracle":
        if task.solve_script is None:
            return AgentResult(exit_status="error", error=f"task {task.name} has no solution/solve.sh")
        box.put("/", dir_tar(task.solution_dir, "solution/"))
        command, env = "bash /solution/solve.sh", {**env, **task.config.solution.env}
    elif kind == "command" and trial.model is None and not harness.settings.install:
        command = harness.settings.command
    elif kind == "command" or kind in NOT_ON_HARBOR:
        return AgentResult(exit_status="error", usage=Usage(cost_usd=None) if trial.model else Usage(),
                           error=f"harness {harness.name} (kind {kind}) cannot run Harbor tasks yet: oracle, null, "
                                 "harnesses whose loop runs on the host (minimal, mini-swe-agent) and command "
                                 "harnesses without a model or install steps can")
    else:
        return _host_loop(box, trial, budget, workdir, env, timeout, log)
    done = box.exec(command, workdir=workdir, timeout=timeout, env=env)
    step = {"action": command, "exit_code": done.exit_code, "output": done.output}
    status = "timed_out" if done.timed_out else "submitted"
    return AgentResult(exit_status=status, trajectory=[step], error="agent timed out" if done.timed_out else None)


def _host_loop(box: HarborContainer, trial, budget, workdir: str, env: dict[str, str], timeout: float,
               log: list[str]) -> AgentResult:
    """A harness driving the container from the host, its wall budget the task's agent time limit."""
    from evalharness.trial import run_harness  # the one place every harness's ending is classified

    sandbox = HarborSandbox(box, workdir, env=env, deadline=time.monotonic() + timeout, wall_budget=timeout)
    log.append(f"{trial.harness.name} drives the environment container from the host, wall budget {timeout:g} s")
    return run_harness(trial, sandbox, budget.model_copy(update={"max_wall_s": timeout}), log)
