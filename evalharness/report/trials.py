"""Every trial of a report, down to its files: the trial index (``report["trials"]``, one row per trial, what the
HTML report lists and links to) and each trial's details read from its folder under the runs folder (patch, test
output, result, trajectory, log), truncated to the limits below so that a 10,000-trial report stays small.

A file that is missing or unreadable is said so (``{"missing": "..."}``), never left blank.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from evalharness.rundir import UnsafeTrialPath, read_trial_text, trial_folder
from evalharness.textshow import visible_controls

PATCH_LIMIT = 20_000
"""Characters of a patch kept (its head); the page says how many more there were."""
OUTPUT_TAIL = 4_000
"""Characters of test output kept (its tail: the summary and the failures)."""
LOG_TAIL = 2_000
STEP_TEXT = 1_000
"""Characters kept of each text of a trajectory step (command, thought, output: head and tail)."""
STEPS_KEPT = 40
"""Trajectory steps kept: the first and last halves of this many."""
TESTS_LISTED = 60
"""Failing tests listed per trial (all tests are counted)."""
SUSPICIOUS_LISTED = 50
"""Suspicious added lines shown per trial (result.json has up to ``grading.suspicious.MAX_FINDINGS``)."""
INDEX_FIELDS = ["run_id", "trial_id", "task_id", "config", "seed", "outcome", "resolved", "infra", "reason",
                "cost_usd", "flags", "detail", "merged"]
LIMITS_NOTE = (f"Limits: a patch shows its first {PATCH_LIMIT:,} characters, test output its last {OUTPUT_TAIL:,}, "
               f"trial.log its last {LOG_TAIL:,}; a trajectory its first and last {STEPS_KEPT // 2} steps, each text "
               f"cut to {STEP_TEXT:,} characters (head and tail); {TESTS_LISTED} failing tests per trial. "
               "`evalharness show TRIAL` and the trial folder have everything.")


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") else value


def trial_index(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One plain row per trial (``INDEX_FIELDS``; ``merged`` None when unreviewed or without reviews)."""
    if not len(frame):
        return []
    table = frame.reindex(columns=INDEX_FIELDS)
    table = table.sort_values(["config", "task_id", "seed", "run_id"], kind="stable")
    return [{k: _plain(v) for k, v in zip(INDEX_FIELDS, row)} for row in table.itertuples(index=False, name=None)]


def head(text: str, limit: int) -> dict[str, Any]:
    return {"text": text[:limit], "size": len(text), "cut": max(0, len(text) - limit), "where": "end"}


def tail(text: str, limit: int) -> dict[str, Any]:
    return {"text": text[-limit:] if len(text) > limit else text, "size": len(text),
            "cut": max(0, len(text) - limit), "where": "start"}


def squeeze(text: Any, limit: int = STEP_TEXT) -> str:
    """Head and tail of a text within ``limit`` characters, with a marker of what was cut."""
    text = text if isinstance(text, str) else json.dumps(text, default=str)
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters cut by the report ...]\n{text[-half:]}"


def _read(path: Path) -> str | dict[str, str]:
    """The file's text, direction controls shown as marks (``textshow``); a symbolic link, device or pipe is not
    read (what the page shows is the folder's own)."""
    try:
        return visible_controls(read_trial_text(path.parent, path.name)[0])
    except UnsafeTrialPath as exc:
        return {"missing": str(exc)}
    except FileNotFoundError:
        return {"missing": f"{path.name} is missing from the trial folder"}
    except OSError as exc:
        return {"missing": f"{path.name} could not be read: {exc.strerror or exc}"}


def _json(path: Path) -> Any:
    raw = _read(path)
    if isinstance(raw, dict):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        return {"missing": f"{path.name} is not valid JSON ({exc.msg}, line {exc.lineno})"}


def read_result(folder: Path) -> Any:
    """A trial folder's result.json (``{"missing": ...}`` when it cannot be read as JSON)."""
    return _json(folder / "result.json")


def _text(path: Path, cut) -> dict[str, Any]:
    raw = _read(path)
    return raw if isinstance(raw, dict) else cut(raw)


def trial_details(runs_dir: Path, detail: str | None) -> dict[str, Any]:
    """The trial's folder as the page shows it: patch, test output, result, trajectory, log (each truncated)."""
    if not detail:
        return {"missing": "the store names no trial folder for this trial"}
    try:
        folder = trial_folder(runs_dir, detail)
    except UnsafeTrialPath as exc:
        return {"missing": str(exc)}
    if not folder.is_dir():
        return {"missing": f"trial folder {folder} not found (was the runs folder moved? report --runs-dir)"}
    return {"patch": _text(folder / "patch.diff", lambda t: head(t, PATCH_LIMIT)),
            "test_output": _text(folder / "test_output.txt", lambda t: tail(t, OUTPUT_TAIL)),
            "result": result_summary(read_result(folder)),
            "trajectory": trajectory_summary(_json(folder / "trajectory.json")),
            "log": _text(folder / "trial.log", lambda t: tail(t, LOG_TAIL)),
            "results_jsonl": _size(folder / "results.jsonl")}


def _size(path: Path) -> dict[str, Any]:
    try:
        return {"size": path.lstat().st_size}
    except OSError:
        return {"missing": f"{path.name} is missing from the trial folder"}


def result_summary(result: Any) -> dict[str, Any]:
    """What result.json says: outcome, reason, error, flags, and the grade (tests counted, failing ones listed)."""
    if not isinstance(result, dict) or "missing" in result:
        return result if isinstance(result, dict) else {"missing": "result.json holds no object"}
    grade = result.get("grade") or {}
    tests = grade.get("tests") or {}
    statuses: dict[str, int] = {}
    for status in tests.values():
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    failing = sorted(t for t, s in tests.items() if s not in ("passed", "xfailed", "skipped"))
    return {"outcome": result.get("outcome"), "reason": result.get("reason"), "error": squeeze(result["error"])
            if result.get("error") else None, "exit_status": result.get("exit_status"),
            "attempts": result.get("attempts"), "flags": result.get("flags") or [],
            "grade": {"outcome": grade.get("outcome"), "reason": grade.get("reason"),
                      "patch_applied": grade.get("patch_applied"), "test_exit_code": grade.get("test_exit_code"),
                      "runner": grade.get("runner"), "flags": grade.get("flags") or [],
                      "evidence": [squeeze(e, 400) for e in (grade.get("evidence") or [])[:20]],
                      "tests": statuses, "failing": failing[:TESTS_LISTED], "n_failing": len(failing),
                      "surface": [{k: s.get(k) for k in ("path", "change", "action", "flag", "why")}
                                  for s in (grade.get("surface") or [])[:50] if isinstance(s, dict)]},
            "usage": result.get("usage"),
            "suspicious": [{k: f.get(k) for k in ("path", "line", "text", "category", "reason")}
                           for f in _listed(result.get("suspicious"))[:SUSPICIOUS_LISTED] if isinstance(f, dict)]}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def step_summary(step: dict[str, Any]) -> dict[str, Any]:
    """One trajectory step as the page shows it: kind, and each of its texts cut to ``STEP_TEXT``."""
    kind = str(step.get("kind") or ("command" if "action" in step or "command" in step else "step"))
    out: dict[str, Any] = {"kind": kind, "index": step.get("index"), "duration_s": step.get("duration_s")}
    if step.get("content"):
        out["thought"] = squeeze(step["content"])
    if step.get("tool_calls"):
        out["tool_calls"] = squeeze(step["tool_calls"])
    command = step.get("command", step.get("action"))
    if command:
        out["command"] = squeeze(command)
    if "exit_code" in step:
        out["exit_code"] = step.get("exit_code")
    if step.get("output"):
        out["output"] = squeeze(step["output"])
    if step.get("text"):
        out["note"] = squeeze(step["text"])
    if step.get("timed_out"):
        out["timed_out"] = True
    return out


def trajectory_summary(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or "missing" in doc:
        return doc if isinstance(doc, dict) else {"missing": "trajectory.json holds no object"}
    steps = [s for s in doc.get("steps") or [] if isinstance(s, dict)]
    half = STEPS_KEPT // 2
    kept = steps if len(steps) <= STEPS_KEPT else steps[:half] + steps[-half:]
    return {"n_steps": len(steps), "omitted": max(0, len(steps) - STEPS_KEPT), "omitted_after": half,
            "steps": [step_summary(s) for s in kept], "exit_status": doc.get("exit_status")}
