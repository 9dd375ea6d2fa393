"""Suspicious code in reports (issue 23): the quoted lines of every trial flagged ``suspicious_code``.

The store counts the flag; the lines themselves are in each trial's ``result.json`` (``suspicious``: findings of
``grading.suspicious``, path, line in the new file, the line quoted, category). ``attach_findings`` reads them for
the flagged trials of a report (``report["flagged_trials"][i]["suspicious"]``: all of them, what the JSON report
holds); the table, Markdown and HTML reports and the console show the first ``SHOWN``, each as the trial, its
``path:line``, the categories and the quoted line, so a person reads them before the number is used.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evalharness.report.trials import read_result
from evalharness.rundir import UnsafeTrialPath, trial_folder
from evalharness.types import Flag

SHOWN = 50
"""Findings listed in the table, Markdown and HTML reports (the JSON holds every one)."""
CONSOLE = 10
"""Findings printed on the console after a run or a report written to a file."""
FIELDS = ("path", "line", "text", "category", "reason")


def findings_of(runs_dir: Path, detail: str | None) -> list[dict[str, Any]]:
    """The ``suspicious`` findings a trial folder's result.json records (none when it is missing or malformed)."""
    if not detail:
        return []
    try:
        result = read_result(trial_folder(runs_dir, detail))
    except UnsafeTrialPath:
        return []
    found = result.get("suspicious") if isinstance(result, dict) else None
    if not isinstance(found, list):
        return []
    return [{k: f.get(k) for k in FIELDS} for f in found if isinstance(f, dict)]


def attach_findings(report: dict[str, Any], runs_dir: Path) -> None:
    """Give every flagged trial with ``suspicious_code`` its findings (``suspicious``), read from its folder."""
    for trial in report.get("flagged_trials") or []:
        if Flag.SUSPICIOUS_CODE.value in trial.get("flags", ()):
            trial["suspicious"] = findings_of(runs_dir, trial.get("trial"))


def suspicious_findings(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(trial, finding) of every flagged trial, in trial order."""
    return [(t["trial"], f) for t in report.get("flagged_trials") or [] for f in t.get("suspicious") or []]


def where(finding: dict[str, Any]) -> str:
    return f"{finding.get('path')}:{finding.get('line')}"


def finding_rows(report: dict[str, Any], limit: int = SHOWN) -> list[list[str]]:
    """Header plus the first ``limit`` findings; a last row says how many more the JSON lists."""
    found = suspicious_findings(report)
    rows = [["trial", "where", "why", "added line"]]
    rows += [[trial, where(f), str(f.get("reason") or f.get("category") or ""), str(f.get("text") or "")]
             for trial, f in found[:limit]]
    if len(found) > limit:
        rows.append([f"... and {len(found) - limit} more (--format json lists all)", "", "", ""])
    return rows


def unread(report: dict[str, Any]) -> list[str]:
    """Flagged trials whose folder gave no finding to quote (folder moved, result.json older than the flag)."""
    return [t["trial"] for t in report.get("flagged_trials") or []
            if Flag.SUSPICIOUS_CODE.value in t.get("flags", ()) and not t.get("suspicious")]


def console_lines(report: dict[str, Any], limit: int = CONSOLE) -> list[str]:
    """The first ``limit`` findings, one line each, for the console after the warnings."""
    found = suspicious_findings(report)
    lines = [f"  {trial}: {where(f)} [{f.get('category')}] {f.get('text')}" for trial, f in found[:limit]]
    if len(found) > limit:
        lines.append(f"  ... and {len(found) - limit} more suspicious lines (the report lists them)")
    return lines


def markdown_code(text: str) -> str:
    """``text`` as one Markdown code span, whatever backticks it holds (``|`` is escaped by the table)."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
