"""Grade SWE-bench predictions with the hardened grader (``evalharness grade-predictions``).

A predictions file is JSON Lines or a JSON list of ``{"instance_id", "model_name_or_path",
"model_patch"}`` objects (a JSON object of them keyed by instance id, as SWE-agent writes, works
too); a folder of ``<instance_id>.diff`` files is one as well, named after the folder. Each file
becomes one configuration of one run: harness ``predictions``, model = its ``model_name_or_path``,
seed 0, so ``report``, ``compare`` and ``plan`` read it like any run. The ``predictions`` harness
(``evalharness/harness/predictions.py``) applies each prediction in the agent sandbox; the grader
derives and judges the change as for every agent.

Per file, a report with the keys of the SWE-bench harness's report (``swebench_report``), and per graded
instance a ``report.json`` shaped as the SWE-bench harness writes it (``instance_report``) under
``RUN_FOLDER/run_evaluation/<model>/<instance_id>/``; see ``docs/harnesses.md`` for how the lists are decided.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalharness.errors import UserError
from evalharness.packs import Pack, _format_errors, load_pack
from evalharness.rundir import safe
from evalharness.types import Outcome

KEY_INSTANCE_ID, KEY_MODEL, KEY_PREDICTION = "instance_id", "model_name_or_path", "model_patch"
HARNESS = "predictions"
INSTANCE_REPORTS = "run_evaluation"
"""The run folder's folder of per-instance ``report.json`` files (``<model>/<instance_id>/report.json``)."""
COUNTING_NOTE = ("as SWE-bench counts them, a patch that does not apply is an error (error_ids, with "
                 "patch_apply_failed_ids), never completed; evalharness's own rates (report, compare) count that "
                 "trial, patch_apply_failed, as a failure of the model")
SCHEMA_VERSION = 2
"""The ``schema_version`` of the SWE-bench harness's report whose keys ours carries (swebench 4.1.0)."""


class PredictionsError(UserError):
    """A predictions file or folder is malformed, or does not fit the pack: names the file and the line."""


@dataclass(frozen=True)
class Predictions:
    """One predictions file or folder: one model label, a patch per instance id ('' when empty or null)."""

    source: Path
    model: str
    patches: dict[str, str]
    where: dict[str, str] = field(default_factory=dict)
    """Where each prediction was read (``line 3``, ``item 2 (line 5)``, ``x.diff``), for messages."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")
    instance_id: str = Field(min_length=1)
    model_name_or_path: str | None = None
    model_patch: str | None


def read_predictions(path: Path, *, model_name: str | None = None) -> Predictions:
    """Read a predictions file or a folder of ``<instance_id>.diff``; ``model_name`` overrides the file's."""
    path = Path(path)
    if path.is_dir():
        return _read_folder(path, model_name)
    if not path.is_file():
        raise PredictionsError(f"no predictions file or folder at {path}")
    name = f"predictions file {path}"
    patches: dict[str, str] = {}
    where: dict[str, str] = {}
    models: dict[str, str] = {}
    for place, raw in _raw_records(path, name):
        if not isinstance(raw, dict):
            raise PredictionsError(f"{name} {place}: expected a JSON object, got {_json_type(raw)}")
        label = f"{name} {place}" + (f" (instance {raw[KEY_INSTANCE_ID]})" if isinstance(raw.get(KEY_INSTANCE_ID), str)
                                     else "")
        try:
            record = _Record.model_validate(raw)
        except ValidationError as e:
            raise PredictionsError(f"{label} is invalid", _format_errors(e)) from e
        if record.instance_id in patches:
            raise PredictionsError(f"{label}: instance_id: duplicate of {where[record.instance_id]}",
                                   "give one prediction per instance")
        if model_name is None:
            if not record.model_name_or_path:
                raise PredictionsError(f"{label}: {KEY_MODEL} is missing",
                                       "every prediction names its model, or name the file with --model-name")
            if models and record.model_name_or_path not in models:
                first, at = next(iter(models.items()))
                raise PredictionsError(f"{label}: {KEY_MODEL} {record.model_name_or_path!r} differs from "
                                       f"{first!r} ({at})",
                                       "one file is one configuration: split the file, or name it with --model-name")
            models.setdefault(record.model_name_or_path, place)
        patches[record.instance_id] = record.model_patch or ""
        where[record.instance_id] = place
    if not patches:
        raise PredictionsError(f"{name} holds no predictions")
    return Predictions(path, model_name or next(iter(models)), patches, where)


def _read_folder(path: Path, model_name: str | None) -> Predictions:
    files = sorted(p for p in path.iterdir() if p.suffix == ".diff" and p.is_file())
    if not files:
        raise PredictionsError(f"predictions folder {path} holds no <instance_id>.diff files")
    patches = {p.stem: p.read_bytes().decode("utf-8", "surrogateescape") for p in files}
    return Predictions(path, model_name or path.resolve().name, patches, {p.stem: p.name for p in files})


def _raw_records(path: Path, name: str) -> list[tuple[str, Any]]:
    """(where, parsed value) of every record: a JSON list or mapping, or JSON Lines."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise PredictionsError(f"{name}: not UTF-8 text", f"byte {e.start}: {e.reason}") from e
    stripped = text.lstrip()
    if not stripped:
        raise PredictionsError(f"{name} holds no predictions")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as e:
        if stripped.startswith("[") or path.suffix == ".json":
            raise PredictionsError(f"{name} line {e.lineno}: not valid JSON", f"{e.msg} at column {e.colno}") from e
        return _json_lines(text, name)
    if isinstance(document, list):
        return _list_items(text)
    if isinstance(document, dict) and KEY_INSTANCE_ID in document:
        return [("line 1", document)]  # JSON Lines with one line (or one object)
    if isinstance(document, dict) and document and all(isinstance(v, dict) for v in document.values()):
        return [(f"entry {key!r}", value) for key, value in document.items()]  # {instance_id: prediction}
    raise PredictionsError(f"{name}: expected JSON Lines of predictions, a JSON list of them, or a JSON object of "
                           f"them by instance id; got {_json_type(document)}")


def _json_lines(text: str, name: str) -> list[tuple[str, Any]]:
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"line {lineno}", json.loads(line)))
        except json.JSONDecodeError as e:
            raise PredictionsError(f"{name} line {lineno}: not valid JSON", f"{e.msg} at column {e.colno}") from e
    return out


def _list_items(text: str) -> list[tuple[str, Any]]:
    """The items of a valid JSON list, each with the line it starts on."""
    decoder, out = json.JSONDecoder(), []
    i = text.index("[") + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "]":
            return out
        value, end = decoder.raw_decode(text, i)
        out.append((f"item {len(out) + 1} (line {text.count(chr(10), 0, i) + 1})", value))
        i = end


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def check_pack(all_predictions: list[Predictions], pack: Pack, *, skip_unknown: bool) -> list[str]:
    """Problems of a set of files against ``pack``: a PredictionsError, or the warnings to print.

    Instance ids the pack does not hold are an error (as in the SWE-bench harness), or with
    ``skip_unknown`` a warning with their count; those predictions are not graded.
    """
    labels: dict[str, Path] = {}
    for p in all_predictions:
        twin = next((other for label, other in labels.items() if label == p.model or safe(label) == safe(p.model)),
                    None)
        if twin is not None:
            raise PredictionsError(f"predictions {twin} and {p.source} have the same model name {p.model!r}",
                                   "each file is one configuration: give each its own --model-name, "
                                   "in the order of --predictions")
        labels[p.model] = p.source
    known = {t.instance_id for t in pack.tasks}
    warnings = []
    for p in all_predictions:
        unknown = sorted(set(p.patches) - known)
        if not unknown:
            continue
        listed = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        if not skip_unknown:
            raise PredictionsError(f"predictions {p.source}: {len(unknown)} instance id(s) are not tasks of pack "
                                   f"{pack.name}: {listed}",
                                   "check --pack, or pass --skip-unknown-ids to grade the others")
        warnings.append(f"predictions {p.source}: {len(unknown)} instance id(s) not in pack {pack.name} skipped: "
                        f"{listed}")
    return warnings


def swebench_report(predictions: Predictions, pack: Pack, rows: list[dict[str, Any]], *, run_id: str,
                    harness: str = HARNESS, source: str | None = None) -> dict[str, Any]:
    """The SWE-bench harness's report for one file, from the run's stored trials (pure).

    Each pack task is in one list: ``incomplete_ids`` (not submitted, no trial), ``error_ids``
    (an infrastructure failure, no trial stored yet, or a patch that does not apply: SWE-bench's counting),
    ``task_error_ids`` (a broken task), ``empty_patch_ids`` (an empty prediction), or ``completed_ids``, split
    into ``resolved_ids`` and ``unresolved_ids`` (every other outcome the agent answers for, ``tampered``
    included).
    """
    trials = {r["task_id"]: r for r in rows if r["harness"] == harness and r["model"] == predictions.model}
    task_ids = [t.instance_id for t in pack.tasks]
    submitted = sorted(i for i in task_ids if i in predictions.patches)
    lists: dict[str, list[str]] = {k: [] for k in ("completed", "resolved", "unresolved", "empty_patch", "error",
                                                   "task_error", "patch_apply_failed")}
    outcomes = {}
    for instance in submitted:
        row = trials.get(instance)
        outcomes[instance] = row["outcome"] if row is not None else "not recorded"
        if row is None or row["infra"]:
            lists["error"].append(instance)
        elif row["outcome"] == Outcome.PATCH_APPLY_FAILED.value:  # SWE-bench: an evaluation error
            lists["error"].append(instance)
            lists["patch_apply_failed"].append(instance)
        elif row["outcome"] == Outcome.TASK_ERROR.value:
            lists["task_error"].append(instance)
        elif not predictions.patches[instance].strip():
            lists["empty_patch"].append(instance)
        else:
            lists["completed"].append(instance)
            lists["resolved" if row["resolved"] else "unresolved"].append(instance)
    return {
        "total_instances": len(task_ids),
        "submitted_instances": len(submitted),
        "completed_instances": len(lists["completed"]),
        "resolved_instances": len(lists["resolved"]),
        "unresolved_instances": len(lists["unresolved"]),
        "empty_patch_instances": len(lists["empty_patch"]),
        "error_instances": len(lists["error"]),
        "completed_ids": lists["completed"],
        "incomplete_ids": sorted(set(task_ids) - set(submitted)),
        "empty_patch_ids": lists["empty_patch"],
        "submitted_ids": submitted,
        "resolved_ids": lists["resolved"],
        "unresolved_ids": lists["unresolved"],
        "error_ids": lists["error"],
        "schema_version": SCHEMA_VERSION,
        # evalharness's own keys
        "task_error_instances": len(lists["task_error"]),
        "task_error_ids": lists["task_error"],
        "patch_apply_failed_ids": lists["patch_apply_failed"],
        "counting": COUNTING_NOTE,
        "unknown_ids": sorted(set(predictions.patches) - set(task_ids)),
        "outcomes": outcomes,
        "model_name_or_path": predictions.model,
        "config": f"{harness}/{predictions.model}",
        "run_id": run_id,
        "pack": pack.name,
        "predictions": source or str(predictions.source),
    }


def instance_report(task: Any, row: dict[str, Any], tests: dict[str, str] | None) -> dict[str, Any] | None:
    """SWE-bench's per-instance ``report.json`` for one graded prediction (pure): ``{instance_id: {patch_is_None,
    patch_exists, patch_successfully_applied, resolved, tests_status}}``, ``tests_status`` giving each listed test's
    ``success`` or ``failure`` from the grader's statuses (``tests``; a PASS_TO_PASS test may pass as an expected
    failure where the task allows it). A patch that does not apply has no ``tests_status``. None where SWE-bench
    writes no report: an empty prediction, an infrastructure failure, a broken task."""
    outcome = row["outcome"]
    if row["infra"] or outcome in (Outcome.NO_PATCH.value, Outcome.TASK_ERROR.value):
        return None
    body: dict[str, Any] = {"patch_is_None": False, "patch_exists": True,
                            "patch_successfully_applied": outcome != Outcome.PATCH_APPLY_FAILED.value,
                            "resolved": bool(row["resolved"])}
    if tests is not None and body["patch_successfully_applied"]:
        xfail_ok = set(task.metadata.get("xfail_at_base", []) or [])

        def split(names: list[str], expected_failure_ok: bool) -> dict[str, list[str]]:
            ok = [n for n in names if tests.get(n) == "passed" or (expected_failure_ok and n in xfail_ok
                                                                    and tests.get(n) == "xfail")]
            return {"success": ok, "failure": [n for n in names if n not in ok]}

        body["tests_status"] = {"FAIL_TO_PASS": split(list(task.FAIL_TO_PASS), False),
                                "PASS_TO_PASS": split(list(task.PASS_TO_PASS), True),
                                "FAIL_TO_FAIL": {"success": [], "failure": []},
                                "PASS_TO_FAIL": {"success": [], "failure": []}}
    return {task.instance_id: body}


def summary_line(report: dict[str, Any], path: Path) -> str:
    r = report
    return (f"{r['config']}: {r['resolved_instances']} of {r['total_instances']} instances resolved "
            f"({r['submitted_instances']} submitted, {r['completed_instances']} completed, "
            f"{r['unresolved_instances']} unresolved, {r['empty_patch_instances']} empty patches, "
            f"{r['error_instances']} errors, {r['task_error_instances']} task errors); report {path}")


Execute = Callable[..., Any]
"""``runner.run`` or ``console.run_with_progress``: (config, resume=, runs_dir=, db=, run_id=) -> RunSummary."""


@dataclass
class Graded:
    summary: Any
    """The runner's RunSummary (exit code, task errors, infrastructure failures)."""
    reports: list[tuple[Path, dict[str, Any]]]


def grade_predictions(pack_path: str | Path, sources: list[Path], *, execute: Execute, runs_dir: Path,
                      db: str | None = None, model_names: list[str] | None = None,
                      report_paths: list[Path] | None = None, skip_unknown: bool = False,
                      workers: int = 2, warn: Callable[[str], None] = lambda message: None) -> Graded:
    """Grade each predictions file as one configuration of a new run; write one report per file.

    ``warn`` gets what the user should know before the run: skipped unknown ids, instances not submitted.
    """
    from evalharness.runner import RunConfig, new_run_id
    from evalharness.types import ModelEndpoint

    names = list(model_names or [])
    pack = load_pack(pack_path)
    loaded = [read_predictions(Path(s), model_name=names[i] if i < len(names) else None)
              for i, s in enumerate(sources)]
    for line in check_pack(loaded, pack, skip_unknown=skip_unknown):
        warn(line)
    run_id = new_run_id()
    run_dir = runs_dir / run_id
    folder = run_dir / "predictions"
    folder.mkdir(parents=True)
    files = {}
    for p in loaded:
        files[p.model] = str((folder / f"{safe(p.model)}.jsonl").resolve())
        Path(files[p.model]).write_text("".join(
            json.dumps({KEY_INSTANCE_ID: i, KEY_MODEL: p.model, KEY_PREDICTION: patch}) + "\n"
            for i, patch in p.patches.items()))
    harness_file = folder / "harness.yaml"
    sources = {p.model: str(p.source.resolve()) for p in loaded}
    harness_file.write_text(yaml.safe_dump({"kind": HARNESS, "name": HARNESS, "files": files, "sources": sources},
                                           sort_keys=False))
    paths = list(report_paths or []) or [run_dir / f"{safe(p.model)}.{run_id}.json" for p in loaded]
    (folder / "reports.json").write_text(json.dumps({p.model: str(path) for p, path in zip(loaded, paths)},
                                                    indent=2))
    for p in loaded:
        missing = len({t.instance_id for t in pack.tasks} - set(p.patches))
        if missing:
            warn(f"{HARNESS}/{p.model}: {missing} of {len(pack.tasks)} instances not submitted (no trial): "
                            "`report` rates are over submitted instances, the SWE-bench report counts them in "
                            "total_instances")
    config = RunConfig(pack=str(pack_path), harnesses=[str(harness_file.resolve())], seeds=[0], workers=workers,
                       models=[ModelEndpoint(name=p.model) for p in loaded])
    try:
        summary = execute(config, resume=None, runs_dir=runs_dir, db=db, run_id=run_id)
    except BaseException:
        _discard_if_unstarted(run_dir, runs_dir, db, run_id)
        raise
    return Graded(summary, _write_reports(pack, loaded, paths, summary.run_id, runs_dir, db, sources))


def resume_predictions(run_id: str, *, execute: Execute, runs_dir: Path, db: str | None = None) -> Graded:
    """Finish a predictions run (``run --resume``), then write its reports again where they were written."""
    folder = runs_dir / run_id / "predictions"
    if not (folder / "reports.json").is_file():
        raise UserError(f"run {run_id} is not a predictions run (no {folder / 'reports.json'})",
                        "resume other runs with: evalharness run --resume RUN_ID")
    summary = execute(None, resume=run_id, runs_dir=runs_dir, db=db)
    harness = yaml.safe_load((folder / "harness.yaml").read_text())
    paths = json.loads((folder / "reports.json").read_text())
    loaded = [read_predictions(Path(path), model_name=label) for label, path in harness["files"].items()]
    stored = _store(runs_dir, db).get_run(run_id)
    pack = load_pack(stored["config"]["run"]["pack"])
    return Graded(summary, _write_reports(pack, loaded, [Path(paths[p.model]) for p in loaded], run_id, runs_dir, db,
                                          harness.get("sources") or {}))


def _write_reports(pack: Pack, loaded: list[Predictions], paths: list[Path], run_id: str, runs_dir: Path,
                   db: str | None, sources: dict[str, str]) -> list[tuple[Path, dict[str, Any]]]:
    rows = _store(runs_dir, db).trial_rows([run_id])
    out = []
    for p, path in zip(loaded, paths):
        report = swebench_report(p, pack, rows, run_id=run_id, source=sources.get(p.model))
        folder = runs_dir / run_id / INSTANCE_REPORTS / safe(p.model)
        report["instance_reports"] = str(folder.resolve())
        report["instance_reports_written"] = _write_instance_reports(pack, p, rows, runs_dir, folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=4) + "\n")
        out.append((path, report))
    return out


def _write_instance_reports(pack: Pack, p: Predictions, rows: list[dict[str, Any]], runs_dir: Path,
                            folder: Path) -> int:
    """One ``<instance_id>/report.json`` per graded prediction of ``p`` (``instance_report``); how many."""
    from evalharness.rundir import UnsafeTrialPath, read_trial_text, trial_folder

    written = 0
    for row in rows:
        if row["harness"] != HARNESS or row["model"] != p.model or row["task_id"] not in p.patches:
            continue
        try:
            text, _ = read_trial_text(trial_folder(runs_dir, row["detail"]), "result.json")
            tests = (json.loads(text).get("grade") or {}).get("tests")
        except (OSError, ValueError, UnsafeTrialPath):  # a trial folder gone or unreadable: no tests_status
            tests = None
        report = instance_report(pack.task(row["task_id"]), row, tests)
        if report is not None:
            target = folder / safe(row["task_id"]) / "report.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(report, indent=4) + "\n")
            written += 1
    return written


def _store(runs_dir: Path, db: str | None):
    from evalharness.store import Store, database_url

    return Store(database_url(db or runs_dir / "evalharness.db"))


def _discard_if_unstarted(run_dir: Path, runs_dir: Path, db: str | None, run_id: str) -> None:
    """A run that failed before the store knew it (no engine, a bad option) leaves no folder behind."""
    try:
        _store(runs_dir, db).get_run(run_id)
    except Exception:  # noqa: BLE001 - unknown run (or no database): nothing refers to the folder
        shutil.rmtree(run_dir, ignore_errors=True)
