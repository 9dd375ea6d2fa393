"""Reference harnesses with no model: they bound what grading can say about a pack.

``oracle`` submits the gold patch (a pack where it fails is broken); ``null`` submits nothing
(a pack where it succeeds is broken).
"""

from __future__ import annotations

from typing import Any

from evalharness.errors import HarnessError
from evalharness.types import AgentResult, Budget, ModelEndpoint, SandboxLike, TaskSpec


class OracleHarness:
    """Applies the task's gold patch inside the sandbox and submits the resulting diff."""

    name = "oracle"
    uses_model = False

    def config(self) -> dict[str, Any]:
        return {"kind": "oracle"}

    def run(self, task: TaskSpec, sandbox: SandboxLike, model: ModelEndpoint | None, *, seed: int,
            budget: Budget) -> AgentResult:
        if not task.patch.strip():
            raise HarnessError(f"task {task.instance_id} has no gold patch")
        sandbox.write_file("/tmp/gold.diff", task.patch if task.patch.endswith("\n") else task.patch + "\n")
        applied = sandbox.exec("git apply --whitespace=nowarn /tmp/gold.diff", timeout=60)
        step = {"action": "git apply /tmp/gold.diff", "exit_code": applied.exit_code, "output": applied.output}
        if applied.exit_code != 0:  # submit it as is; grading says it does not apply
            return AgentResult(patch=task.patch, exit_status="submitted", trajectory=[step])
        return AgentResult(patch=sandbox.diff(), exit_status="submitted", trajectory=[step])


class NullHarness:
    """Submits an empty patch."""

    name = "null"
    uses_model = False

    def config(self) -> dict[str, Any]:
        return {"kind": "null"}

    def run(self, task: TaskSpec, sandbox: SandboxLike, model: ModelEndpoint | None, *, seed: int,
            budget: Budget) -> AgentResult:
        return AgentResult(patch="", exit_status="submitted")
