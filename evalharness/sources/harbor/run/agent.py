"""What the agent does in a Harbor task's environment container, by harness kind: ``oracle`` copies solution/
to /solution and runs ``bash /solution/solve.sh`` in the work directory; ``null`` does nothing; ``command`` without
a model runs its command as root in the work directory (the instruction at /logs/agent/instruction.md). Harnesses
whose loop runs on the host (``minimal``, ``mini-swe-agent``, an import-path harness) and ``command`` harnesses
with a model get the container as their sandbox (``hostloop.HarborSandbox``) and the instruction as the problem
statement: the former call the model from the host, the latter through the relay's socket in their shared folder
(its forwarder needs ``python3`` in the image); every way they end is kept as on other packs
(``evalharness.trial.run_harness``). A harness's install steps are an image tier over the environment
(``build.HarborImages.harness``). ``predictions`` has no base commit to apply a patch to: a harness error."""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

from evalharness.sources.harbor.model import HarborTask
from evalharness.sources.harbor.run.container import HarborContainer, dir_tar
from evalharness.sources.harbor.run.hostloop import HarborSandbox
from evalharness.types import AgentResult, Usage

INSTRUCTION = "/logs/agent/instruction.md"
NOT_ON_HARBOR = ("predictions",)
"""Kinds that cannot run on a Harbor pack."""
NO_PYTHON = ("harness {name} calls its model through the relay's forwarder, which needs python3 in the task's "
             "environment image; this one has none (install it in the harness's install steps)")


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


def run_agent(box: HarborContainer, task: HarborTask, trial, budget, workdir: str, log: list[str],
              shared: dict[str, Path] | None = None) -> AgentResult:
    """The agent's run in the started container; ``budget.max_wall_s`` caps the task's ``agent.timeout_sec``;
    ``shared``: the harness's shared folders mounted in the container (container path -> host folder)."""
    harness = trial.harness
    kind = harness.config().get("kind")
    timeout = min(t for t in (task.config.agent.timeout_sec or 1800.0, budget.max_wall_s) if t)
    env = {**task.config.environment.env}
    if kind == "null":
        return AgentResult(exit_status="submitted")
    if kind in NOT_ON_HARBOR:
        return AgentResult(exit_status="error", usage=Usage(cost_usd=None) if trial.model else Usage(),
                           error=f"harness {harness.name} (kind {kind}) cannot run Harbor tasks: a Harbor task has "
                                 "no base commit to apply a patch to")
    if kind == "oracle":
        if task.solve_script is None:
            return AgentResult(exit_status="error", error=f"task {task.name} has no solution/solve.sh")
        box.put("/", dir_tar(task.solution_dir, "solution/"))
        command, env = "bash /solution/solve.sh", {**env, **task.config.solution.env}
    elif kind == "command" and trial.model is None:
        command = harness.settings.command
    else:
        if kind == "command" and box.exec("command -v python3 >/dev/null", workdir="/", timeout=30).exit_code != 0:
            return AgentResult(exit_status="error", usage=Usage(), error=NO_PYTHON.format(name=harness.name))
        return _host_loop(box, trial, budget, workdir, env, timeout, log, shared or {})
    done = box.exec(command, workdir=workdir, timeout=timeout, env=env)
    step = {"action": command, "exit_code": done.exit_code, "output": done.output}
    status = "timed_out" if done.timed_out else "submitted"
    return AgentResult(exit_status=status, trajectory=[step], error="agent timed out" if done.timed_out else None)


def _host_loop(box: HarborContainer, trial, budget, workdir: str, env: dict[str, str], timeout: float,
               log: list[str], shared: dict[str, Path]) -> AgentResult:
    """A harness driving the container from the host, its wall budget the task's agent time limit."""
    from evalharness.trial import run_harness  # the one place every harness's ending is classified

    sandbox = HarborSandbox(box, workdir, env=env, deadline=time.monotonic() + timeout, wall_budget=timeout,
                            shared=shared)
    log.append(f"{trial.harness.name} drives the environment container from the host, wall budget {timeout:g} s")
    return run_harness(trial, sandbox, budget.model_copy(update={"max_wall_s": timeout}), log)


def shared_folders(harness, model) -> dict[str, Path]:
    """Fresh private host folders (mode 0700, root's) for the harness's ``sandbox_options()["shared_dirs"]``:
    root in the container, the agent's user on Harbor, reaches them; no other host account does. A ``command``
    harness without a model runs its command directly and gets none."""
    if harness.config().get("kind") == "command" and model is None:
        return {}
    paths = dict(getattr(harness, "sandbox_options", lambda: {})()).get("shared_dirs") or []
    return {path: Path(tempfile.mkdtemp(prefix="evalharness-")) for path in paths}


def remove_shared(shared: dict[str, Path]) -> None:
    for host in shared.values():
        shutil.rmtree(host, ignore_errors=True)
