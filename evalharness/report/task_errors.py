"""Broken tasks and verifiers, named with their reason in every report: left out of the rates, never out of sight.

A ``task_error`` (the task's image or patches are broken) and a ``verifier_error`` (a Harbor verifier gave no valid
reward: missing, malformed, out of range, or it timed out) are both named here, each with its outcome."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalharness.types import Outcome

NOT_THE_AGENTS = (Outcome.TASK_ERROR.value, Outcome.VERIFIER_ERROR.value)


def task_errors(df: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per broken task, outcome and reason: pack, task_id, outcome, reason, trials, configurations."""
    if not len(df) or "outcome" not in df.columns:
        return []
    broken = df[df["outcome"].astype(str).isin(NOT_THE_AGENTS)]
    if broken.empty:
        return []
    pack = broken["pack"] if "pack" in broken.columns else pd.Series("", index=broken.index)
    reason = broken["reason"] if "reason" in broken.columns else pd.Series("", index=broken.index)
    frame = broken.assign(_pack=pack.astype(str), _reason=reason.fillna("").astype(str),
                          _outcome=broken["outcome"].astype(str))
    out = []
    for (pack_name, task, outcome, why), part in frame.groupby(["_pack", "task_id", "_outcome", "_reason"], sort=True):
        out.append({"pack": pack_name, "task_id": str(task), "outcome": outcome, "reason": why,
                    "trials": int(len(part)),
                    "configs": sorted(part["config"].astype(str).unique()) if "config" in part else []})
    return out


def task_error_lines(report: dict[str, Any]) -> list[str]:
    """'pack/task (n trials): reason' for each broken task of a built report."""
    return [f"{e['pack']}/{e['task_id']} ({e['trials']} trial{'s' if e['trials'] != 1 else ''}, "
            f"{e.get('outcome', 'task_error')}): {e['reason']}"
            for e in report.get("task_errors", [])]


def task_error_rows(report: dict[str, Any]) -> list[list[str]]:
    rows = [["task", "outcome", "trials", "reason"]]
    rows += [[f"{e['pack']}/{e['task_id']}", e.get("outcome", "task_error"), str(e["trials"]), e["reason"]]
             for e in report.get("task_errors", [])]
    return rows
