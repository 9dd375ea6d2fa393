"""Is the task itself sound? Once per task per run: its image builds and its gold patches apply.

The check runs ``git apply --check`` of the task's ``patch`` and ``test_patch`` in a throwaway
container from the task image (network none, labelled with the run so ``sandbox gc`` finds it).
The gold patch is written only there, never into an image an agent runs in. A task that fails
raises TaskError for every one of its trials; engine failures raise SandboxError (retried).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from evalharness.errors import TaskError
from evalharness.packs import Pack
from evalharness.sandbox.base import Limits
from evalharness.sandbox.docker import DockerSandbox
from evalharness.types import TaskSpec
from evalharness.validation import invalid_reason

_PATCH_DIR = "/tmp/evalharness-check"


def patch_problems(apply_check: Callable[[str, bytes], tuple[int, str]], task: TaskSpec) -> list[str]:
    """One line per gold patch of ``task`` that does not apply; ``apply_check(name, patch)`` -> (exit code, output)."""
    problems = []
    for field in ("patch", "test_patch"):
        text = getattr(task, field)
        if not text.strip():
            continue
        code, output = apply_check(f"{field}.diff", text.encode())
        if code != 0:
            first = next((line.strip() for line in output.splitlines() if line.strip()), f"git apply exited {code}")
            problems.append(f"gold {field} does not apply to the task's base: {first}")
    return problems


class TaskChecker:
    """Checks each task of a run once (threads share the result); remembers what it found."""

    def __init__(self, client, pack: Pack, run_id: str, limits: Limits, task_image: Callable[[TaskSpec], str], *,
                 include_invalid: bool = False):
        self.client, self.pack, self.run_id, self.limits = client, pack, run_id, limits
        self.include_invalid = include_invalid
        self.task_image = task_image
        self._found: dict[str, TaskError | None] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def check(self, task: TaskSpec) -> None:
        """Raise TaskError when ``task`` is broken (image recipe or gold patches); SandboxError on engine failures."""
        with self._guard:
            lock = self._locks.setdefault(task.instance_id, threading.Lock())
        with lock:
            if task.instance_id not in self._found and (problem := self._known_problem(task)) is not None:
                self._found[task.instance_id] = TaskError(f"task {task.instance_id}: {problem}", reason=problem)
            if task.instance_id not in self._found:
                image = self.task_image(task)  # TaskError or ImageBuildError propagate; a retry builds again
                problems = self._apply_checks(task, image)
                self._found[task.instance_id] = (TaskError(f"task {task.instance_id}: {problems[0]}",
                                                           reason="; ".join(problems)) if problems else None)
            found = self._found[task.instance_id]
        if found is not None:
            raise found

    def _known_problem(self, task: TaskSpec) -> str | None:
        """A reason known without Docker: no environment recipe, or a validation report that is not ok."""
        problem = self.pack.recipe_problem(task)
        if problem is None and not self.include_invalid:
            problem = invalid_reason(self.pack, task)
        return problem

    def _apply_checks(self, task: TaskSpec, image: str) -> list[str]:
        if not (task.patch.strip() or task.test_patch.strip()):
            return []
        spec = self.pack.spec_for(task)
        with DockerSandbox(self.client, image, run_id=self.run_id, trial=f"{self.pack.name}/{task.instance_id}/check",
                           role="check", limits=self.limits, workdir=spec.environment.workdir,
                           default_timeout=spec.timeouts.exec_s) as sandbox:
            sandbox.start()

            def apply_check(name: str, patch: bytes) -> tuple[int, str]:
                path = f"{_PATCH_DIR}/{name}"
                sandbox.write_file(path, patch)
                done = sandbox.exec(f"git apply --check --whitespace=nowarn {path}", timeout=spec.timeouts.exec_s)
                return done.exit_code, done.output

            return patch_problems(apply_check, task)
