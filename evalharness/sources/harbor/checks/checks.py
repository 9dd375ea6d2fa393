"""Static checks of a Harbor task in the spirit of the Terminal-Bench-3 benchmark template (pure, no Docker).

``static_checks(task)`` runs every check in ``CHECKS`` and returns their findings, worst first;
``validation_findings(oracle_rewards, null_rewards)`` is the run-time verdict the runner asks for after
running the oracle and the no-op. ``docs/audit.md`` ("Static checks of Harbor tasks") lists what each check
catches and what it cannot see.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from evalharness.errors import UserError
from evalharness.sources.harbor.checks.check_installs import dockerfile_platform, gpu_request, gpu_types, pip_pinning
from evalharness.sources.harbor.checks.check_network import allow_internet, trial_network_fetch
from evalharness.sources.harbor.checks.check_task import instruction_timeout, task_fields
from evalharness.sources.harbor.checks.check_validate import validate_nop, validate_oracle, validation_findings
from evalharness.sources.harbor.checks.check_verifier import separate_verifier, test_sh_sanity
from evalharness.sources.harbor.checks.findings import Evidence, StaticFinding
from evalharness.sources.harbor.model import HarborTask, is_task_dir

__all__ = ["CHECKS", "Evidence", "StaticFinding", "TaskCheck", "check_dirs", "static_checks", "task_dirs",
           "validation_findings"]

CHECKS: dict[str, tuple[Callable[[HarborTask], list[StaticFinding]], str]] = {
    "allow-internet": (allow_internet, "test.sh or solve.sh reaches the network its phase forbids"),
    "dockerfile-platform": (dockerfile_platform, "FROM --platform= (or a compose platform:) pins an architecture"),
    "gpu-request": (gpu_request, "the task asks for GPUs"),
    "gpu-types": (gpu_types, "gpu_types names a GPU the backend does not know, or is set without gpus"),
    "instruction-timeout": (instruction_timeout, "the instruction states a time limit other than [agent] timeout_sec"),
    "pip-pinning": (pip_pinning, "pip / uv / uvx / npm installs without an exact version or hash"),
    "separate-verifier": (separate_verifier, "the verifier shares the agent's container, or its separate image "
                                             "lacks /tests or an artifact's parent directory"),
    "task-fields": (task_fields, "the template's reviewer metadata is missing"),
    "test-sh-sanity": (test_sh_sanity, "test.sh calls a tool nothing provides, or a path writes no reward or "
                                       "writes it where Harbor does not read"),
    "trial-network-fetch": (trial_network_fetch, "a separate verifier's test.sh downloads at verify time"),
    "validate-nop": (validate_nop, "static hint that the no-op passes (always-1 test.sh, constant asserts)"),
    "validate-oracle": (validate_oracle, "static hint that the oracle fails (no solve.sh, a contradicting literal)"),
}


def static_checks(task: HarborTask, only: list[str] | None = None) -> list[StaticFinding]:
    """Every check's findings (or those of ``only``), the most severe first, then by check."""
    findings = []
    for name, (check, _) in CHECKS.items():
        if only is None or name in only:
            findings += check(task)
    return sorted(findings, key=lambda f: (-f.severity, f.check))


@dataclass
class TaskCheck:
    """One task directory's findings, or why it could not be read (``error``: the UserError's text)."""

    path: Path
    name: str
    findings: list[StaticFinding] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict:
        return {"task": self.name, "path": str(self.path), "error": self.error,
                "findings": [f.to_json() for f in self.findings]}


def task_dirs(path: Path) -> list[Path]:
    """``path`` itself when it is a task directory, else every task directory below it (not inside another)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    if is_task_dir(path):
        return [path]
    found: list[Path] = []
    for toml in sorted(path.rglob("task.toml")):
        if not any(parent in found for parent in toml.parents):
            found.append(toml.parent)
    if not found:
        raise UserError(f"{path}: no Harbor task directory (a folder with task.toml) in it")
    return found


def check_dirs(paths: list[Path], only: list[str] | None = None) -> list[TaskCheck]:
    """Every task directory under ``paths``, checked; one that cannot be read keeps its reason, the rest go on."""
    unknown = sorted(set(only or ()) - set(CHECKS))
    if unknown:
        raise UserError(f"unknown check {', '.join(unknown)}", f"the checks: {', '.join(CHECKS)}")
    results = []
    for root in [d for p in paths for d in task_dirs(p)]:
        try:
            task = HarborTask.load(root)
        except UserError as e:
            results.append(TaskCheck(root, root.name, error=str(e)))
            continue
        results.append(TaskCheck(root, task.name, static_checks(task, only)))
    return results
