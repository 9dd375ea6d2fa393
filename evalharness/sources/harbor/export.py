"""`packs export harbor`: each task of a pack written as a Harbor task directory (docs/task-format.md,
"Exporting to Harbor").

A task directory holds task.toml, instruction.md (the statement the agent gets), environment/ (a Dockerfile
reproducing the task image, ``export_env``), solution/ (solve.sh applying the gold patch, shipped beside it)
and tests/ (test.sh running the shipped verifier, ``evalharness/data/eh_harbor_verify.py``, with evalharness's
own log parsers copied unchanged, the test patch and the task's test lists). The verifier runs in Harbor's
shared mode: evalharness's guarded test run does not travel (the README written beside the tasks says so).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import evalharness.grading.parsers as parsers_module
import evalharness.grading.textlogs as textlogs_module
from evalharness.errors import TaskError, UserError
from evalharness.packs import Pack
from evalharness.sources.harbor.export_env import BaseKind, environment_files
from evalharness.sources.harbor.model import HarborTask
from evalharness.sources.harbor.render import solve_sh, task_toml, test_sh, verifier_config
from evalharness.types import TaskSpec

Log = Callable[[str], None]


@dataclass
class ExportReport:
    written: list[str] = field(default_factory=list)
    """Task ids written, each as a directory of the same name."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Task id -> why it has no directory (no environment recipe, ...)."""
    without_solution: list[str] = field(default_factory=list)
    """Tasks with no gold patch: their directory has no solution/ (Harbor's oracle cannot check them)."""


def verifier_files(pack: Pack, task: TaskSpec) -> dict[str, bytes]:
    """tests/: test.sh, the verifier, its configuration, the test patch and evalharness's parsers (unchanged)."""
    lib = "lib/evalharness"
    return {"test.sh": test_sh(pack, task).encode(),
            "verify.py": resources.files("evalharness.data").joinpath("eh_harbor_verify.py").read_bytes(),
            "config.json": (json.dumps(verifier_config(pack, task), indent=1) + "\n").encode(),
            "test.patch": _diff(task.test_patch).encode(),
            f"{lib}/__init__.py": b"", f"{lib}/grading/__init__.py": b"",
            f"{lib}/grading/parsers.py": Path(parsers_module.__file__).read_bytes(),
            f"{lib}/grading/textlogs.py": Path(textlogs_module.__file__).read_bytes()}


def task_files(pack: Pack, task: TaskSpec, *, base: BaseKind, ca_bundle: bytes | None) -> dict[str, bytes]:
    """Every file of the task's directory, by path inside it."""
    files = {"task.toml": task_toml(pack, task).encode(), "instruction.md": _text(task.problem_statement).encode()}
    files.update({f"environment/{k}": v for k, v in environment_files(pack, task, base=base, ca_bundle=ca_bundle).items()})
    files.update({f"tests/{k}": v for k, v in verifier_files(pack, task).items()})
    if task.patch.strip():
        files["solution/solve.sh"] = solve_sh(pack, task).encode()
        files["solution/gold.patch"] = _diff(task.patch).encode()
    return files


def export_pack(pack: Pack, out: Path, *, task_ids: tuple[str, ...] = (), base: BaseKind = "local",
                ca_bundle: bytes | None = None, force: bool = False, log: Log = lambda line: None) -> ExportReport:
    """Write one Harbor task directory per task (or per id of ``task_ids``) under ``out``, and a README."""
    tasks = _chosen(pack, task_ids)
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} is not empty", "choose an empty folder, or pass --force to replace its tasks")
    report = ExportReport()
    for task in tasks:
        try:
            files = task_files(pack, task, base=base, ca_bundle=ca_bundle)
        except TaskError as e:
            report.skipped[task.instance_id] = e.reason or e.message
            log(f"skipped {task.instance_id}: {report.skipped[task.instance_id]}")
            continue
        folder = out / task.instance_id
        if folder.exists():
            shutil.rmtree(folder)
        _write(folder, files)
        loaded = HarborTask.load(folder)
        assert not loaded.unknown_fields(), loaded.unknown_fields()
        report.written.append(task.instance_id)
        if "solution/solve.sh" not in files:
            report.without_solution.append(task.instance_id)
    _write(out, {"README.md": readme(pack, base, report).encode()})
    return report


def _chosen(pack: Pack, task_ids: tuple[str, ...]) -> list[TaskSpec]:
    known = {t.instance_id for t in pack.tasks}
    unknown = [t for t in task_ids if t not in known]
    if unknown:
        raise UserError(f"pack {pack.name} has no task {', '.join(map(repr, unknown))}",
                        "list its tasks with: evalharness packs validate PACK, or see its tasks.jsonl")
    return [t for t in pack.tasks if not task_ids or t.instance_id in task_ids]


def _write(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if name.endswith((".sh", ".py")) else 0o644)


def _diff(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _text(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def readme(pack: Pack, base: BaseKind, report: ExportReport) -> str:
    """The README beside the exported tasks: what a recipient needs, and what does not travel."""
    lines = [f"# {pack.name}: evalharness tasks as Harbor task directories", "",
             f"Exported by `evalharness packs export harbor` from pack {pack.name} v{pack.spec.version} "
             f"(content hash {pack.content_hash}): {len(report.written)} tasks, one directory each.", "",
             "Run with Harbor: `harbor run -p <this folder> -a oracle` (reward 1 on every task), `-a nop` (reward 0).",
             "Harbor's docker environment (0.26) enforces `network_mode = \"no-network\"` through an egress-control",
             "sidecar whose image it pulls from Docker Hub; on an engine without registry access it refuses the task",
             "(evalharness's docs/task-format.md, \"Exporting to Harbor\", gives the local change that runs it).", ""]
    if base == "local":
        lines += ["**The Dockerfiles start FROM an evalharness base image** (`evalharness/base:<name>-<hash>`), which",
                  "exists only where evalharness made it: `evalharness sandbox bootstrap --base NAME` (Debian by",
                  "debootstrap, or pulled from Docker Hub). Elsewhere, export again with `--base official`: the",
                  "official Debian image with the same packages installed.", ""]
    lines += ["Building an environment fetches the repository and its pinned requirements (PyPI, git) with the",
              "build's network; the task itself runs with no network (`network_mode = \"no-network\"`).", "",
              "## What does not travel", "",
              "- evalharness grades in a fresh container the agent never ran in, with a guarded pytest launcher",
              "  (canaries, a nonce, the plugin lock) and a graded tree in which test files, conftest.py and runner",
              "  configuration are restored. These tasks' verifier runs in Harbor's **shared** mode, in the container",
              "  the agent used: it restores the test files and the test patch from the image's packed base commit",
              "  and runs the tests unguarded with the pack's log parser, as evalharness does for an unguarded test",
              "  command. An agent that runs as root, replaces the interpreter or leaves a process behind can",
              "  defeat it; the agent runs as the unprivileged `agent` user for that reason.",
              "- A verdict of evalharness's other outcomes (tampered, patch_rejected, task_error, ...) is reward 0",
              "  here; `/logs/verifier/verdict.json` keeps the outcome and reason the verifier reached."]
    if report.skipped:
        lines += ["", "## Not exported", ""] + [f"- {t}: {why}" for t, why in sorted(report.skipped.items())]
    if report.without_solution:
        lines += ["", "## Without a solution (no gold patch)", ""] + [f"- {t}" for t in report.without_solution]
    return "\n".join(lines) + "\n"
