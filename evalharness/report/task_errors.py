"""Broken tasks, named with their reason in every report: left out of the rates, never out of sight."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalharness.types import Outcome


def task_errors(df: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per broken task and reason: pack, task_id, reason, trials, configurations."""
    if not len(df) or "outcome" not in df.columns:
        return []
    broken = df[df["outcome"].astype(str) == Outcome.TASK_ERROR.value]
    if broken.empty:
        return []
    pack = broken["pack"] if "pack" in broken.columns else pd.Series("", index=broken.index)
    reason = broken["reason"] if "reason" in broken.columns else pd.Series("", index=broken.index)
    frame = broken.assign(_pack=pack.astype(str), _reason=reason.fillna("").astype(str))
    out = []
    for (pack_name, task, why), part in frame.groupby(["_pack", "task_id", "_reason"], sort=True):
        out.append({"pack": pack_name, "task_id": str(task), "reason": why, "trials": int(len(part)),
                    "configs": sorted(part["config"].astype(str).unique()) if "config" in part else []})
    return out


def task_error_lines(report: dict[str, Any]) -> list[str]:
    """'pack/task (n trials): reason' for each broken task of a built report."""
    return [f"{e['pack']}/{e['task_id']} ({e['trials']} trial{'s' if e['trials'] != 1 else ''}): {e['reason']}"
            for e in report.get("task_errors", [])]


def task_error_rows(report: dict[str, Any]) -> list[list[str]]:
    rows = [["task", "trials", "reason"]]
    rows += [[f"{e['pack']}/{e['task_id']}", str(e["trials"]), e["reason"]] for e in report.get("task_errors", [])]
    return rows
