"""Import a SWE-bench-format dataset (Lite, Verified, full, Live, rebench exports) as a task pack.

SOURCE is a Hugging Face dataset name (loaded through ``datasets`` when the hub answers) or a
local JSON array, JSONL or parquet file (``datasets``' local loaders). Every record becomes one
task of ``tasks.jsonl``; the environment of each task is the recipe of its (repo, version) in the
recipe tables copied into the pack's ``recipes/`` folder (built-in tables in
``evalharness/recipes/swebench/``, overridden or extended by ``--recipes DIR``). A task without a
recipe is still imported and listed with its reason (``import-report.json``); a run names it as a
task error rather than dropping it. Every task also goes through the quality gate (``evalharness/quality/``:
statement and gold patch checks); a task failing a check is reported there with the reasons, never dropped.

Import is deterministic: the same input and tables give the same pack bytes (records keep their
input order, JSON is written with sorted keys, nothing time-dependent is written).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import ValidationError

from evalharness.errors import UserError
from evalharness.packs import RecipeTable, load_pack, mirror_name
from evalharness.quality.gate import DEFAULT, Thresholds, run_gate
from evalharness.types import TaskSpec

STANDARD_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch", "FAIL_TO_PASS",
                   "PASS_TO_PASS", "created_at", "version", "environment_setup_commit", "hints_text")
"""The fields of a SWE-bench instance that map onto TaskSpec fields of the same name; others go to metadata."""
REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "FAIL_TO_PASS")
LOCAL_LOADERS = {".json": "json", ".jsonl": "json", ".ndjson": "json", ".parquet": "parquet"}
TESTS_TIMEOUT_S = 1800
"""SWE-bench's own per-instance limit; its slowest test files (SymPy, Django) need minutes."""
Log = Callable[[str], None]


@dataclass
class ImportReport:
    """What an import wrote: counts, and every task without an environment with its reason."""

    source: str
    source_sha256: str | None
    tasks: int = 0
    repos: dict[str, int] = field(default_factory=dict)
    without_recipe: dict[str, str] = field(default_factory=dict)
    """instance_id -> why there is no environment recipe."""
    gate_failed: dict[str, list[str]] = field(default_factory=dict)
    """instance_id -> the quality gate's failed checks (``name: reason``); the tasks are imported all the same."""

    def to_json(self) -> dict[str, Any]:
        reasons = Counter(self.without_recipe.values())
        return {"source": self.source, "source_sha256": self.source_sha256, "tasks": self.tasks,
                "repos": dict(sorted(self.repos.items())),
                "with_recipe": self.tasks - len(self.without_recipe),
                "without_recipe": dict(sorted(self.without_recipe.items())),
                "without_recipe_by_reason": dict(sorted(reasons.items())),
                "gate": {"failed": dict(sorted(self.gate_failed.items())),
                         "by_check": dict(sorted(Counter(r.split(":", 1)[0] for rs in self.gate_failed.values()
                                                         for r in rs).items()))}}


def builtin_tables() -> Path:
    """The folder of the recipe tables that ship with evalharness (one YAML file per repository)."""
    return Path(str(resources.files("evalharness.recipes").joinpath("swebench")))


def load_records(source: str, *, split: str = "test", log: Log = lambda line: None) -> list[dict[str, Any]]:
    """The records of ``source``: a local .json (array or lines), .jsonl or .parquet file, or a hub dataset name."""
    import datasets

    datasets.disable_progress_bars()
    path = Path(source).expanduser()
    if path.exists():
        if path.is_dir():
            raise UserError(f"{source} is a folder", "give a .json, .jsonl or .parquet file, or a dataset name")
        loader = LOCAL_LOADERS.get(path.suffix.lower())
        if loader is None:
            raise UserError(f"{source}: unknown file type {path.suffix!r}",
                            f"give one of {', '.join(sorted(LOCAL_LOADERS))}, or a Hugging Face dataset name")
        kwargs: dict[str, Any] = {"data_files": str(path), "split": "train"}
    else:
        if "/" not in source or source.startswith((".", "/", "~")):
            raise UserError(f"no such file: {source}",
                            "SOURCE is a local .json/.jsonl/.parquet file or a Hugging Face dataset name (owner/name)")
        loader, kwargs = source, {"split": split}
        log(f"loading {source} (split {split}) from the Hugging Face hub")
    try:
        dataset = datasets.load_dataset(loader, **kwargs)
    except Exception as e:  # datasets raises many types (FileNotFoundError, DatasetGenerationError, hub errors)
        hint = ("check that the file is a JSON array, JSON lines or parquet" if path.exists()
                else "the hub may be unreachable from this machine: download the dataset and give the file")
        raise UserError(f"cannot load {source}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                        hint) from e
    rows = [dict(row) for row in dataset]
    # datasets' JSON loader reads ISO dates as timestamps ("...T...Z" comes back as a datetime): those
    # columns keep the text the file holds, so an import reproduces created_at exactly
    stamped = [name for name, feature in dataset.features.items()
               if isinstance(feature, datasets.Value) and feature.dtype.startswith("timestamp")]
    if stamped and loader == "json":
        raw = _raw_json_records(path)
        if len(raw) == len(rows):
            for row, original in zip(rows, raw):
                for name in stamped:
                    if isinstance(original, dict) and isinstance(original.get(name), str):
                        row[name] = original[name]
    return rows


def _raw_json_records(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat() + ("Z" if value.tzinfo is None else "")
    return value if isinstance(value, str) else str(value)


def _json_safe(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return _text(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def to_task(record: dict[str, Any]) -> TaskSpec:
    """One SWE-bench record as a TaskSpec (test lists may be JSON strings); other fields go to metadata."""
    data: dict[str, Any] = {}
    for name in STANDARD_FIELDS:
        if name in record and record[name] is not None:
            value = record[name]
            data[name] = value if name in ("FAIL_TO_PASS", "PASS_TO_PASS") else _text(value)
    extra = {k: _json_safe(v) for k, v in sorted(record.items()) if k not in STANDARD_FIELDS and v is not None}
    data["metadata"] = {"source": "swebench", "repo": data.get("repo", ""), **extra}
    return TaskSpec.model_validate(data)


def convert(records: list[dict[str, Any]], source: str) -> list[TaskSpec]:
    """Every record as a task; one UserError naming each bad record (index, id, field, problem)."""
    tasks, problems, seen = [], [], {}
    for index, record in enumerate(records):
        name = record.get("instance_id") or f"record {index}"
        missing = [f for f in REQUIRED_FIELDS if not record.get(f)]
        if missing:
            problems.append(f"record {index} ({name}): missing {', '.join(missing)}")
            continue
        try:
            task = to_task(record)
        except ValidationError as e:
            first = e.errors()[0]
            problems.append(f"record {index} ({name}): {'.'.join(map(str, first['loc']))}: {first['msg']}")
            continue
        if task.instance_id in seen:
            problems.append(f"record {index} ({name}): duplicate of record {seen[task.instance_id]}")
            continue
        seen[task.instance_id] = index
        tasks.append(task)
    if problems:
        shown = "\n  ".join(problems[:20]) + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise UserError(f"{source}: {len(problems)} of {len(records)} records cannot be imported", shown)
    if not tasks:
        raise UserError(f"{source} holds no records")
    return tasks


def _read_tables(folder: Path) -> dict[str, tuple[Path, RecipeTable]]:
    tables = {}
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            table = RecipeTable.model_validate(yaml.safe_load(path.read_text()))
        except (yaml.YAMLError, ValidationError) as e:
            raise UserError(f"recipe table {path} is invalid", str(e).splitlines()[0]) from e
        tables[table.repo] = (path, table)
    return tables


def gate_report(tasks: list[TaskSpec], thresholds: Thresholds = DEFAULT) -> dict[str, list[str]]:
    """The tasks failing a quality gate check, with each failed check as ``name: reason`` (pure)."""
    failed = {}
    for task in tasks:
        gate = run_gate(task.problem_statement, task.patch or None, project=task.repo, thresholds=thresholds)
        if not gate.passed:
            failed[task.instance_id] = [f"{c.name}: {c.reason}" for c in gate.failed]
    return failed


def task_line(task: TaskSpec) -> str:
    return json.dumps(task.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def import_swebench(source: str, out: Path, *, name: str | None = None, recipes: Path | None = None,
                    repo_mirror: Path | None = None, split: str = "test", force: bool = False,
                    thresholds: Thresholds = DEFAULT, log: Log = lambda line: None) -> ImportReport:
    """Write a pack for ``source`` into ``out`` (pack.yaml, tasks.jsonl, recipes/, import-report.json)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} exists and is not empty", "give a new folder, or --force to replace the pack in it")
    records = load_records(source, split=split, log=log)
    tasks = convert(records, source)
    path = Path(source).expanduser()
    report = ImportReport(source=source, source_sha256=hashlib.sha256(path.read_bytes()).hexdigest()
                          if path.is_file() else None)
    report.tasks = len(tasks)
    report.repos = dict(Counter(t.repo for t in tasks))
    report.gate_failed = gate_report(tasks, thresholds)

    tables = _read_tables(builtin_tables())
    if recipes is not None:
        if not Path(recipes).is_dir():
            raise UserError(f"--recipes {recipes} is not a folder", "give a folder of recipe tables (*.yaml)")
        tables.update(_read_tables(Path(recipes)))  # the user's table of a repository replaces the built-in one
    used = {t.repo for t in tasks}
    pack_name = name or out.name
    out.mkdir(parents=True, exist_ok=True)
    recipe_dir = out / "recipes"
    if recipe_dir.exists():
        shutil.rmtree(recipe_dir)
    recipe_dir.mkdir()
    for repo in sorted(used & set(tables)):
        table_path, _ = tables[repo]
        (recipe_dir / f"{mirror_name(repo)}.yaml").write_bytes(table_path.read_bytes())
    manifest = {
        "name": pack_name,
        "version": 1,
        "description": f"Imported from {source} ({len(tasks)} tasks of {len(used)} repositories) by "
                       "`evalharness packs import swebench`. Environments: the recipe tables in recipes/.",
        "recipes": "recipes",
        **({"repo_mirror": str(Path(repo_mirror).resolve())} if repo_mirror is not None else {}),
        "tasks": "tasks.jsonl",
        "log_parser": "junit",
        "timeouts": {"agent_s": 1800, "tests_s": TESTS_TIMEOUT_S, "build_s": 3600, "exec_s": 120},
    }
    (out / "pack.yaml").write_text("# Written by `evalharness packs import swebench`; edit freely (see "
                                   "docs/task-format.md).\n" + yaml.safe_dump(manifest, sort_keys=False, width=120))
    (out / "tasks.jsonl").write_text("".join(task_line(t) + "\n" for t in tasks), encoding="utf-8")
    pack = load_pack(out)  # the pack must load as any other; its recipes say which tasks have an environment
    for task in pack.tasks:
        problem = pack.recipe_problem(task)
        if problem is not None:
            report.without_recipe[task.instance_id] = problem
    (out / "import-report.json").write_text(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
    return report
