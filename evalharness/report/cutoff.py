"""The training-cutoff split in reports: each configuration's score before and after its model's cutoff."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evalharness.report.fmt import pct as _pct
from evalharness.stats.cutoff import cutoff_split


def run_dates(runs: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """(task id -> created_at, model -> training_cutoff) from the runs' stored configurations."""
    created: dict[str, str] = {}
    cutoffs: dict[str, str] = {}
    for run in runs:
        config = run.get("config") or {}
        created.update(config.get("task_created_at") or {})
        for model in (config.get("run") or {}).get("models") or []:
            if model.get("training_cutoff"):
                cutoffs[model["name"]] = model["training_cutoff"]
    return created, cutoffs


def cutoff_rows(df: pd.DataFrame, runs: list[dict[str, Any]], level: float) -> list[dict[str, Any]]:
    """Rows of ``stats.cutoff.cutoff_split`` as plain data (NaN as None); none when no model has a cutoff."""
    created, cutoffs = run_dates(runs)
    if not cutoffs or not len(df):
        return []
    table = cutoff_split(df, created, cutoffs, level=level)
    return [{k: (None if isinstance(v, float) and math.isnan(v) else (v.item() if hasattr(v, "item") else v))
             for k, v in row.items()} for row in table.to_dict(orient="records")]


def _side(row: dict[str, Any], side: str) -> str:
    return (f"{_pct(row[f'resolve_rate_{side}'])} [{_pct(row[f'ci_low_{side}'])}, {_pct(row[f'ci_high_{side}'])}] "
            f"({row[f'n_tasks_{side}']} tasks)")


def cutoff_table(report: dict[str, Any]) -> list[list[str]]:
    """The table renderers show: configuration, cutoff, the two sides, the difference, undated tasks."""
    level = int(round(report["level"] * 100))
    rows = [["configuration", "training cutoff", f"created on or before ({level}% interval)",
             f"created after ({level}% interval)", "after - before", "undated tasks"]]
    for r in report.get("cutoff_split") or []:
        diff = "n/a" if r["difference"] is None else f"{100 * r['difference']:+.1f} pts"
        if r["diff_low"] is not None:
            diff += f" [{100 * r['diff_low']:+.1f}, {100 * r['diff_high']:+.1f}] ({r['diff_method']})"
        rows.append([r["config"], r["cutoff"], _side(r, "before"), _side(r, "after"), diff, str(r["n_undated"])])
    return rows


CUTOFF_NOTE = ("A model may have trained on tasks created before its training cutoff; a lower score after it is "
               "what contamination predicts. The two sides are different tasks: unpaired intervals.")
