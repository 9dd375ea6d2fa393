"""``packs import harbor PATH``: Harbor task directories as an evalharness pack.

PATH is one task directory, a folder of them, or a ``dataset.toml`` manifest (its ``[[tasks]]`` found by name
beside it). Each task is checked with its overlays applied (support.unsupported): it is copied into the pack
unchanged, or listed with one line naming it and the reason. Fields evalharness does not honour are named per
task in import-report.json. The pack: pack.yaml (``kind: harbor``), tasks.jsonl (one line per task: its id and
instruction), the task directories, the overlays of the imported tasks and the base map file, all hashed.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from evalharness.errors import UserError
from evalharness.sources.harbor.basemap import load_map
from evalharness.sources.harbor.model import HarborTask, is_task_dir
from evalharness.sources.harbor.overlays import apply_overlays, overlay_patches
from evalharness.sources.harbor.support import Reachable, ignored_fields, unsupported

TASKS_DIR, OVERLAYS_DIR, BASE_MAP_FILE = "harbor-tasks", "overlays", "base-map.yaml"
REWARD_TEST = "harbor:reward"
"""The one FAIL_TO_PASS entry of a Harbor task's line in tasks.jsonl: its verifier's reward decides."""


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Task -> why it was not imported (one line)."""
    ignored: dict[str, list[str]] = field(default_factory=dict)
    """Task -> fields of its task.toml evalharness does not honour."""
    overlays: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"imported": self.imported, "skipped": self.skipped, "ignored_fields": self.ignored,
                "overlays": self.overlays}


def instance_id(name: str) -> str:
    """A task's directory name as an evalharness id (letters, digits, '.', '_', '-')."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name.split("/")[-1]).strip("._") or "task"


def find_task_dirs(path: Path) -> tuple[list[Path], dict[str, str]]:
    """The task directories PATH names, and the dataset's tasks that are not there (name -> reason)."""
    path = Path(path)
    if path.is_file() and path.name.endswith(".toml") and not is_task_dir(path.parent):
        return _dataset_tasks(path)
    if is_task_dir(path):
        return [path], {}
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if is_task_dir(p))
        if found:
            return found, {}
    raise UserError(f"{path}: not a Harbor task directory, a folder of them, or a dataset.toml",
                    "a task directory holds task.toml; a dataset manifest lists [[tasks]] by name")


def _dataset_tasks(manifest: Path) -> tuple[list[Path], dict[str, str]]:
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{manifest}: not valid TOML: {e}") from e
    entries = data.get("tasks")
    if not isinstance(entries, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in entries):
        raise UserError(f"{manifest}: tasks: expected [[tasks]] entries each with a name")
    found, missing = [], {}
    for entry in entries:
        name = entry["name"]
        folder = manifest.parent / name.split("/")[-1]
        if is_task_dir(folder):
            found.append(folder)
        else:
            missing[name] = f"not present beside {manifest.name} (expected {folder})"
    return found, missing


def import_harbor(path: Path, out: Path, *, name: str | None = None, base_map: Path | None = None,
                  overlays: Path | None = None, reachable: Reachable = lambda image: False,
                  force: bool = False) -> ImportReport:
    """Write the pack at ``out``; UserError when ``out`` holds something else (unless ``force``)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise UserError(f"{out} is not empty", "pass --force to replace the pack there")
        shutil.rmtree(out)
    mapping = load_map(base_map)
    dirs, missing = find_task_dirs(path)
    report = ImportReport(skipped=dict(missing))
    tasks = []
    with tempfile.TemporaryDirectory(prefix="evalharness-harbor-") as scratch:
        for folder in dirs:
            task_id = instance_id(folder.name)
            problem, task = _assess(folder, task_id, mapping, overlays, reachable, Path(scratch))
            if problem is not None:
                report.skipped[task_id] = problem
                continue
            _copy_task(folder, task_id, out, overlays, report)
            report.ignored[task_id] = ignored_fields(task)
            report.imported.append(task_id)
            tasks.append({"instance_id": task_id, "repo": "harbor", "problem_statement": task.instruction,
                          "FAIL_TO_PASS": [REWARD_TEST], "metadata": {"harbor_name": task.name}})
    if not tasks:
        raise UserError(f"{path}: no task could be imported", "; ".join(f"{k}: {v}" for k, v in report.skipped.items()))
    _write_pack(out, name or out.name, tasks, base_map, report)
    return report


def _assess(folder: Path, task_id: str, mapping: dict[str, str], overlays: Path | None, reachable: Reachable,
            scratch: Path) -> tuple[str | None, HarborTask | None]:
    """(why the task cannot run, None) or (None, the task as it will run: overlays applied)."""
    try:
        patched = apply_overlays(folder, overlay_patches(overlays, task_id), scratch / task_id)
        task = HarborTask.load(patched)
    except UserError as e:
        return e.message, None
    problems = unsupported(task, mapping, reachable)
    return ("; ".join(problems), None) if problems else (None, task)


def _copy_task(folder: Path, task_id: str, out: Path, overlays: Path | None, report: ImportReport) -> None:
    shutil.copytree(folder, out / TASKS_DIR / task_id, symlinks=True)
    patches = overlay_patches(overlays, task_id)
    if patches:
        (out / OVERLAYS_DIR / task_id).mkdir(parents=True, exist_ok=True)
        for patch in patches:
            shutil.copy2(patch, out / OVERLAYS_DIR / task_id / patch.name)
        report.overlays[task_id] = [p.name for p in patches]


def _write_pack(out: Path, name: str, tasks: list[dict], base_map: Path | None, report: ImportReport) -> None:
    harbor: dict = {"tasks_dir": TASKS_DIR}
    if report.overlays:
        harbor["overlays"] = OVERLAYS_DIR
    if base_map is not None:
        shutil.copy2(base_map, out / BASE_MAP_FILE)
        harbor["base_map"] = BASE_MAP_FILE
    manifest = {"name": re.sub(r"[^A-Za-z0-9_.\-]", "-", name), "version": 1, "kind": "harbor",
                "description": f"Harbor tasks imported by evalharness ({len(tasks)})", "harbor": harbor}
    (out / "pack.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (out / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (out / "import-report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
