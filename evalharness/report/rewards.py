"""The report's mean-reward section, for packs whose verifier gives rewards between 0 and 1 (Harbor tasks with
continuous rewards): per configuration the task-level mean reward with its interval, each configuration against
the reference by the paired difference of means (``stats.rewards``, docs/statistics.md "Continuous rewards").
Packs with binary rewards only have no such section: their resolve rate says it all."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalharness.report.build import clean_row
from evalharness.stats.rewards import has_continuous_rewards, reward_comparisons, reward_difference, reward_table

NOTE = ("Mean reward: each task's trials averaged first, then the mean over tasks with a t interval over task means "
        "(clipped to the range); a trial the agent lost without a reward counts 0; task and verifier errors and "
        "infrastructure failures are left out.")


def reward_section(df: pd.DataFrame, level: float) -> dict[str, Any] | None:
    """``{"scores": [...], "comparisons": [...]}`` when some reward lies strictly between 0 and 1, else None."""
    if not has_continuous_rewards(df):
        return None
    return {"scores": [clean_row(r) for r in reward_table(df, level=level)],
            "comparisons": [clean_row(r) for r in reward_comparisons(df, level=level)] if df["config"].nunique() > 1
            else []}


def _num(x: Any, fmt: str = "{:.3f}") -> str:
    return "n/a" if x is None or x != x else fmt.format(x)


def _interval(row: dict[str, Any], fmt: str = "{:.3f}") -> str:
    return "n/a" if row.get("ci_low") is None or row["ci_low"] != row["ci_low"] else \
        f"[{fmt.format(row['ci_low'])}, {fmt.format(row['ci_high'])}]"


def reward_rows(report: dict[str, Any]) -> list[list[str]]:
    level = int(round(report["level"] * 100))
    rows = [["configuration", "tasks", "trials", "mean reward", f"{level}% interval (t, task means)", "SE", "note"]]
    for r in (report.get("rewards") or {}).get("scores", []):
        rows.append([r["config"], str(r["n_tasks"]), str(r["n_trials"]), _num(r["mean_reward"]), _interval(r),
                     _num(r["se"], "{:.4f}"), r.get("note") or ""])
    return rows


def reward_comparison_rows(report: dict[str, Any]) -> list[list[str]]:
    level = int(round(report["level"] * 100))
    rows = [["configuration", "reference", "shared tasks", "difference of mean reward", f"{level}% interval (paired t)",
             "p (paired t)"]]
    for c in (report.get("rewards") or {}).get("comparisons", []):
        rows.append([c["config"], c["reference"], str(c["n_shared"]), _num(c["diff"], "{:+.3f}"),
                     _interval(c, "{:+.3f}"), _num(c["p_t"], "{:.4f}")])
    return rows


def reward_ab_rows(side_a: pd.DataFrame, side_b: pd.DataFrame, level: float = 0.95) -> list[list[str]]:
    """`compare`'s mean-reward rows (A, B, A - B with its paired interval) when either side has continuous rewards."""
    if not (has_continuous_rewards(side_a) or has_continuous_rewards(side_b)):
        return []
    c = reward_difference(side_a, side_b, level=level)
    pct = int(round(level * 100))
    rows = [["mean reward A (task means)", _num(c["mean_a"])], ["mean reward B (task means)", _num(c["mean_b"])],
            ["mean reward A - B", _num(c["diff"], "{:+.3f}")],
            [f"{pct}% interval of mean reward A - B (paired t)", _interval(c, "{:+.3f}")],
            ["p (paired t, mean reward)", _num(c["p_t"], "{:.4f}")]]
    return rows + ([["note (mean reward)", c["note"]]] if c["note"] else [])
