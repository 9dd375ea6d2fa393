"""What the agent does in a Harbor task's environment container, by harness kind: ``oracle`` copies solution/
to /solution and runs ``bash /solution/solve.sh`` in the work directory; ``null`` does nothing; ``command`` runs
its command as root in the work directory (the instruction at /logs/agent/instruction.md). Harnesses that call a
model are not run on Harbor packs yet (no relay here): a harness error, never the task's outcome."""

from __future__ import annotations

import io
import tarfile

from evalharness.sources.harbor.model import HarborTask
from evalharness.sources.harbor.run.container import HarborContainer, dir_tar
from evalharness.types import AgentResult, Usage

INSTRUCTION = "/logs/agent/instruction.md"


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


def run_agent(box: HarborContainer, task: HarborTask, harness, model, workdir: str,
              wall_s: float | None = None) -> AgentResult:
    """``wall_s``: the run's --max-wall budget, which caps the task's ``agent.timeout_sec``."""
    kind = harness.config().get("kind")
    timeout = min(t for t in (task.config.agent.timeout_sec or 1800.0, wall_s) if t)
    env = {**task.config.environment.env}
    if kind == "null":
        return AgentResult(exit_status="submitted")
    if kind == "oracle":
        if task.solve_script is None:
            return AgentResult(exit_status="error", error=f"task {task.name} has no solution/solve.sh")
        box.put("/", dir_tar(task.solution_dir, "solution/"))
        command, env = "bash /solution/solve.sh", {**env, **task.config.solution.env}
    elif kind == "command" and model is None and not harness.settings.install:
        command = harness.settings.command
    else:
        return AgentResult(exit_status="error", usage=Usage(cost_usd=None) if model else Usage(),
                           error=f"harness {harness.name} (kind {kind}) cannot run Harbor tasks yet: oracle, null "
                                 "and command harnesses without a model or install steps can")
    done = box.exec(command, workdir=workdir, timeout=timeout, env=env)
    step = {"action": command, "exit_code": done.exit_code, "output": done.output}
    status = "timed_out" if done.timed_out else "submitted"
    return AgentResult(exit_status=status, trajectory=[step], error="agent timed out" if done.timed_out else None)
