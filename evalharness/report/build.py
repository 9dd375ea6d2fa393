"""Assemble a report (plain data) from trials; renderers turn it into text, JSON, Markdown or HTML."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evalharness.report.cutoff import cutoff_rows
from evalharness.report.flags import flag_summary, flag_warnings, flagged_trials
from evalharness.report.task_errors import task_errors
from evalharness.stats import compare_all, per_task_table, score_table

INFRA_NAMES = {"model_unavailable": "model endpoint unavailable", "sandbox_error": "sandbox (Docker) failed",
               "infra_error": "image build or evalharness failed"}
"""Each infrastructure outcome as a report names it: whose failure it was (none is the agent's)."""

SCORE_FIELDS = ["config", "n_tasks", "n_trials", "n_infra", "resolve_rate", "ci_low", "ci_high", "se",
                "interval", "mean_cost_usd", "cost_per_resolved", "mean_tokens", "note"]


def _clean(value: Any) -> Any:
    """JSON-clean: NaN as None, numpy scalars as Python ones, dicts, lists and tuples cleaned inside."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def clean_row(row: dict[str, Any]) -> dict[str, Any]:
    """One table row as plain JSON data (``_clean`` of every value)."""
    return _clean(row)


def build_report(df: pd.DataFrame, runs: list[dict[str, Any]], *, level: float = 0.95) -> dict[str, Any]:
    """The report's content: per configuration the resolve rate with a task-clustered interval,
    per-task solve counts, outcome counts (infrastructure failures apart), broken tasks with their reason, flag counts (all of them, zeros
    too) with the flagged trials and a warning per configuration with tampered trials, and run metadata."""
    table = score_table(df, by=("harness", "model"), level=level)
    scores = [{k: _clean(row[k]) for k in SCORE_FIELDS if k in row} for _, row in table.iterrows()]
    per_task = per_task_table(df)
    outcomes = (df.groupby(["config", "outcome"]).size().unstack(fill_value=0)
                if len(df) else pd.DataFrame())
    comparisons = []
    if df["config"].nunique() > 1:
        cmp = compare_all(df, adjust="holm", level=level)
        comparisons = [{k: _clean(v) for k, v in row.items()} for row in cmp.to_dict(orient="records")]
    report = {
        "comparisons": comparisons,
        "runs": [{k: str(v) for k, v in r.items() if k in ("run_id", "created_at", "status", "pack")} for r in runs],
        "level": level,
        "scores": scores,
        "per_task": {"columns": [str(c) for c in per_task.columns],
                     "rows": [[str(v) for v in row] for row in per_task.reset_index().values.tolist()],
                     "index": per_task.index.name or "task_id"},
        "outcomes": {cfg: {k: int(v) for k, v in row.items() if v} for cfg, row in outcomes.iterrows()},
        "n_trials": int(len(df)),
        "n_infra": int(df["infra"].sum()) if len(df) else 0,
        "infra": infra_counts(df),
        "task_errors": task_errors(df),
        "flags": flag_summary(df),
        "flagged_trials": flagged_trials(df),
        "cutoff_split": cutoff_rows(df, runs, level),
    }
    report["flag_warnings"] = flag_warnings(report)
    return report


def infra_counts(df: pd.DataFrame) -> dict[str, int]:
    """Infrastructure failures by outcome (``model_unavailable``: the model endpoint's), most first."""
    if not len(df):
        return {}
    counts = df.loc[df["infra"].astype(bool), "outcome"].astype(str).value_counts()
    return {str(k): int(v) for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def infra_line(report: dict[str, Any]) -> str:
    """'3 (model endpoint unavailable 2, sandbox (Docker) failed 1)': the left-out trials and whose failure."""
    parts = [f"{INFRA_NAMES.get(k, k)} {n}" for k, n in (report.get("infra") or {}).items()]
    return f"{report['n_infra']}" + (f" ({', '.join(parts)})" if parts else "")
