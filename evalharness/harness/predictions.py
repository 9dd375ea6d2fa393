"""The ``predictions`` harness: submits patches made elsewhere (SWE-bench predictions files).

Its "agent" applies the given prediction to the work tree as SWE-bench does (``git apply``, then
``git apply --reject``, then GNU ``patch`` with fuzz); the grader then derives the change from the
tree as for every agent, so the same integrity rules hold. Each predictions file is one model
label; the model is never called. Files are read with ``evalharness.predictions.read_predictions``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from evalharness.errors import ConfigError, HarnessError
from evalharness.trajectory import Recorder
from evalharness.trial import PATCH_APPLY_FAILED
from evalharness.types import AgentResult, Budget, ModelEndpoint, SandboxLike, TaskSpec, Usage

PATCH_PATH = "/tmp/evalharness-prediction.diff"
APPLY_COMMANDS = ("git apply --verbose", "git apply --verbose --reject",
                  "patch --batch --fuzz=5 -p1 --no-backup-if-mismatch -i")
"""Tried in order, as the SWE-bench harness does; the first that exits 0 wins. ``patch`` keeps no
``.orig`` backups, which would otherwise be new files in the derived change."""
RESET = "git reset -q --hard HEAD && git clean -fdq"
"""After a failed attempt: a partial application (``--reject``, ``patch``) is undone before the next."""


class PredictionsHarness:
    """One label per predictions file (``files``: model label -> normalized JSONL path)."""

    uses_model = True
    """The model is the predictions file's label: one configuration per file. It is never called."""

    def __init__(self, files: dict[str, str] | None = None, name: str = "predictions",
                 sources: dict[str, str] | None = None):
        from evalharness.predictions import read_predictions

        if not isinstance(files, dict) or not files:
            raise ConfigError("the predictions harness needs 'files': a mapping of model label to predictions file",
                              "grade predictions with: evalharness grade-predictions --pack P --predictions FILE")
        self.name = name
        self._files = {label: str(path) for label, path in files.items()}
        self._sources = dict(sources or {})
        self._patches: dict[str, dict[str, str]] = {}
        self._digests: dict[str, str] = {}
        for label, path in self._files.items():
            self._patches[label] = read_predictions(Path(path), model_name=label).patches
            self._digests[label] = hashlib.sha256(Path(path).read_bytes()).hexdigest()

    def config(self) -> dict[str, Any]:
        return {"kind": "predictions", "files": {label: {"path": path, "sha256": self._digests[label],
                                                         "source": self._sources.get(label)}
                                                 for label, path in self._files.items()}}

    def covers(self, task: TaskSpec, model: ModelEndpoint | None) -> bool:
        """A trial only where the file submits the instance: a missing one is "not submitted", no trial."""
        return model is not None and task.instance_id in self._patches.get(model.name, {})

    def run(self, task: TaskSpec, sandbox: SandboxLike, model: ModelEndpoint | None, *, seed: int,
            budget: Budget) -> AgentResult:
        usage = Usage(cost_usd=None)  # what the model spent is not in a predictions file: unknown, never 0
        if model is None or task.instance_id not in self._patches.get(model.name, {}):
            raise HarnessError(f"no prediction for {task.instance_id} from {model.name if model else 'no model'}")
        patch = self._patches[model.name][task.instance_id]
        rec = Recorder()
        if not patch.strip():
            rec.note("empty prediction: nothing applied")
            return AgentResult(patch="", exit_status="submitted", usage=usage, trajectory=rec.steps)
        data = patch.encode("utf-8", "surrogateescape")
        sandbox.write_file(PATCH_PATH, data if data.endswith(b"\n") else data + b"\n")
        failed = []
        for command in APPLY_COMMANDS:
            started = rec.start()
            done = sandbox.exec(f"{command} {PATCH_PATH}")
            rec.command(started, f"{command} {PATCH_PATH}", done.exit_code, done.output, done.timed_out)
            if done.exit_code == 0:
                rec.note(f"prediction applied by: {command}")  # the grader derives the change from the tree
                return AgentResult(patch="", exit_status="submitted", usage=usage, trajectory=rec.steps)
            failed.append(done)
            started = rec.start()
            reset = sandbox.exec(RESET)
            rec.command(started, RESET, reset.exit_code, reset.output, reset.timed_out)
            if reset.exit_code != 0:
                raise HarnessError(f"could not undo a failed attempt ({RESET} exited {reset.exit_code})")
        errors = [line for line in failed[0].output.splitlines() if line.startswith("error:")]
        lines = errors or failed[-1].output.strip().splitlines()
        why = lines[0] if lines else f"exit {failed[-1].exit_code}"
        rec.note("the prediction does not apply")
        return AgentResult(patch=patch, exit_status=PATCH_APPLY_FAILED, usage=usage, trajectory=rec.steps,
                           error=f"the prediction does not apply (git apply, git apply --reject, patch): {why}"[:500])
