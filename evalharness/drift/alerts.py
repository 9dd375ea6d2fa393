"""Alerts of a `drift run`: their kinds, the exit code, the alert file, and the --on-alert command.

Kinds, most severe first: ``drift`` (exit 10: the CUSUM alarmed on the day run), ``outage``
(11: the day's trials were lost to infrastructure; the day is left out), ``task_error`` (1:
broken tasks, fix the pack), ``infra`` (3: some trials lost to infrastructure on a day that is
not an outage; run again the same day to retry them). With several streams the exit code is the
most severe of theirs: 10 > 11 > 1 > 3 > 0. A user or configuration error is 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

__all__ = ["EXIT", "SEVERITY", "exit_code", "alert_document", "write_alert_file", "run_on_alert"]

EXIT = {"drift": 10, "outage": 11, "task_error": 1, "error": 1, "infra": 3}
EXIT_OK, EXIT_INTERRUPTED = 0, 130
SEVERITY = (10, 11, 1, 3, 0)
"""Exit codes from most to least severe: the one a run with several streams returns is the first present."""


def exit_code(codes: Iterable[int]) -> int:
    present = set(codes)
    return next((c for c in SEVERITY if c in present), EXIT_OK)


def alert_document(day: str, alerts: list[dict[str, Any]], code: int,
                   notes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The alert file's JSON (docs/drift.md, "The alert file"): every alert recorded for ``day`` as it was
    raised, the notes of later runs of that day, and the exit code of the latest run."""
    return {"schema": "evalharness.drift.alerts/1", "day": day, "exit_code": code,
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "alerts": alerts,
            "notes": notes or []}


def write_alert_file(path: Path, document: dict[str, Any]) -> None:
    """Write atomically (a temporary file, then rename): a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(document, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def run_on_alert(command: str, document: dict[str, Any], *, timeout_s: float = 120) -> str | None:
    """Run ``command`` through the shell with the alert JSON on stdin; None if it succeeded, else why not.

    Its stdout goes to our stderr (stdout is kept for --format json)."""
    try:
        done = subprocess.run(command, shell=True, input=json.dumps(document, default=str), text=True,
                              stdout=sys.stderr, stderr=sys.stderr, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:.0f} s"
    except OSError as e:
        return str(e)
    return None if done.returncode == 0 else f"exited with {done.returncode}"
