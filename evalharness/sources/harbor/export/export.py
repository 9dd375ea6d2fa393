"""`packs export harbor`: each task of a pack written as a Harbor task directory (docs/task-format.md,
"Exporting to Harbor").

A task directory holds task.toml, instruction.md (the statement the agent gets), environment/ (a Dockerfile
reproducing the task image, ``export_env``), solution/ (solve.sh applying the gold patch, shipped beside it)
and tests/ (test.sh running the shipped verifier, ``evalharness/data/eh_harbor_verify.py``, with evalharness's
own log parsers copied unchanged, the test patch and the task's test lists). The verifier runs in Harbor's
separate mode by default (tests/Dockerfile: the task image plus /tests; the work tree its one artifact), or shared;
evalharness's guarded test run does not travel either way (the README written beside the tasks says so).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import evalharness.grading.nodelogs as nodelogs_module
import evalharness.grading.parsers as parsers_module
import evalharness.grading.textlogs as textlogs_module
from evalharness.errors import TaskError, UserError
from evalharness.packs import Pack
from evalharness.sources.harbor.export.export_env import BaseKind, environment_files
from evalharness.sources.harbor.export.render import VerifierMode, solve_sh, task_toml, test_sh, verifier_config
from evalharness.sources.harbor.model import HarborTask
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
            f"{lib}/grading/textlogs.py": Path(textlogs_module.__file__).read_bytes(),
            f"{lib}/grading/nodelogs.py": Path(nodelogs_module.__file__).read_bytes()}


def task_files(pack: Pack, task: TaskSpec, *, base: BaseKind, ca_bundle: bytes | None,
               verifier: VerifierMode = "separate") -> dict[str, bytes]:
    """Every file of the task's directory, by path inside it."""
    files = {"task.toml": task_toml(pack, task, verifier).encode(),
             "instruction.md": _text(task.problem_statement).encode()}
    environment = environment_files(pack, task, base=base, ca_bundle=ca_bundle)
    files.update({f"environment/{k}": v for k, v in environment.items()})
    tests = verifier_files(pack, task)
    files.update({f"tests/{k}": v for k, v in tests.items()})
    if verifier == "separate":  # tests/ is the verifier image's build context: the task image plus /tests
        top = sorted(name for name in tests if "/" not in name)
        dirs = sorted({name.split("/")[0] for name in tests if "/" in name})
        dockerfile = environment["Dockerfile"].decode() + f"COPY {' '.join(top)} /tests/\n"
        dockerfile += "".join(f"COPY {d} /tests/{d}\n" for d in dirs)
        files.update({f"tests/{k}": v for k, v in environment.items()})
        files["tests/Dockerfile"] = dockerfile.encode()
    if task.patch.strip():
        files["solution/solve.sh"] = solve_sh(pack, task).encode()
        files["solution/gold.patch"] = _diff(task.patch).encode()
    return files


def export_pack(pack: Pack, out: Path, *, task_ids: tuple[str, ...] = (), base: BaseKind = "local",
                ca_bundle: bytes | None = None, verifier: VerifierMode = "separate", force: bool = False,
                log: Log = lambda line: None) -> ExportReport:
    """Write one Harbor task directory per task (or per id of ``task_ids``) under ``out``, and a README."""
    tasks = _chosen(pack, task_ids)
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} is not empty", "choose an empty folder, or pass --force to replace its tasks")
    report = ExportReport()
    for task in tasks:
        try:
            files = task_files(pack, task, base=base, ca_bundle=ca_bundle, verifier=verifier)
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
    _write(out, {"README.md": readme(pack, base, verifier, report).encode()})
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


def readme(pack: Pack, base: BaseKind, verifier: VerifierMode, report: ExportReport) -> str:
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
              "- evalharness grades a patch it derives itself, in a fresh container, with a guarded pytest launcher",
              "  (canaries, a nonce, the plugin lock) over a graded tree in which test files, conftest.py, pytest",
              "  configuration and start-up hooks are restored. Here the verifier restores the test files and the",
              "  test patch from the image's packed base commit and runs the test command unguarded, deciding with",
              "  evalharness's parsers as evalharness does for an unguarded test command."]
    if verifier == "separate":
        lines += ["- The verifier runs in Harbor's **separate** mode (Harbor 2026-05 on): a fresh container of",
                  "  tests/Dockerfile (the task image plus /tests), into which Harbor copies the work tree, the one",
                  "  declared artifact. The agent's processes, its changes outside the work tree (interpreter, PATH,",
                  "  site-packages) and /logs/verifier stay behind; whatever the work tree holds (a conftest.py, a",
                  "  module shadowing one the tests import) runs with the tests."]
    else:
        lines += ["- The verifier runs in Harbor's **shared** mode, in the container the agent used (as `agent`, not",
                  "  root): an agent that gains root, changes the interpreter or leaves a process behind can defeat it."]
    lines += ["- evalharness's other outcomes (tampered, patch_rejected, ...) are reward 0 here; a broken task",
              "  (its test patch does not apply at base) gets no reward: Harbor's verifier error.",
              "  `/logs/verifier/verdict.json` keeps the outcome and reason the verifier reached."]
    if report.skipped:
        lines += ["", "## Not exported", ""] + [f"- {t}: {why}" for t, why in sorted(report.skipped.items())]
    if report.without_solution:
        lines += ["", "## Without a solution (no gold patch)", ""] + [f"- {t}" for t in report.without_solution]
    return "\n".join(lines) + "\n"
