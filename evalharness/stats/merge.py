"""Merge acceptance (capability 6): would a maintainer merge the patches the grader calls resolved?

- Acceptance rate among reviewed trials: task-level mean and interval exactly as for the resolve
  rate (summary.py): Wilson with one reviewed trial per task and few tasks (Wilson 1927; Bowyer et
  al. 2025), otherwise task-clustered t, so several reviewed trials of one task are not counted
  as independent.
- Grader-vs-human gap on the same trials: per-task mean of (grader - human) with a paired t
  interval over tasks (Miller 2024), plus an exact McNemar test (``statsmodels``) of "grader passes,
  human rejects" against "grader fails, human accepts" when each task has one reviewed trial.
- Rate relative to a golden human baseline (e.g. acceptance of the gold patches): ratio of two
  independent proportions with the Katz log interval, ``statsmodels``
  ``confint_proportions_2indep(compare="ratio", method="log")`` (Katz et al. 1978).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep

from evalharness.stats._frame import per_task, require_columns, usable_trials
from evalharness.stats.paired import paired_t
from evalharness.stats.summary import summarize


def acceptance_rate(df: pd.DataFrame, *, column: str = "accepted", level: float = 0.95) -> dict:
    """Share of reviewed trials a human would merge (rows with NaN in ``column`` were not reviewed)."""
    require_columns(df, ["task_id", column], "merge acceptance")
    reviewed = df.loc[df[column].notna()]
    trials, _ = usable_trials(reviewed, value=column)
    if trials.empty:
        return {"rate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n_tasks": 0, "n_reviewed": 0,
                "interval": "none", "note": "no reviewed trials"}
    row = summarize(per_task(trials), level=level).iloc[0]
    return {"rate": float(row["resolve_rate"]), "se": float(row["se"]), "ci_low": float(row["ci_low"]),
            "ci_high": float(row["ci_high"]), "n_tasks": int(row["n_tasks"]), "n_reviewed": int(row["n_trials"]),
            "interval": str(row["interval"]), "note": str(row["note"])}


@dataclass(frozen=True)
class GraderGap:
    grader_rate: float
    human_rate: float
    gap: float
    """Grader pass rate minus human acceptance rate (task-level means, same trials)."""
    se: float
    ci_low: float
    ci_high: float
    level: float
    p_t: float
    n_tasks: int
    n_trials: int
    grader_only: int
    human_only: int
    p_mcnemar: float
    note: str

    def to_dict(self) -> dict:
        return asdict(self)


def grader_human_gap(df: pd.DataFrame, *, grader: str = "resolved", human: str = "accepted",
                     level: float = 0.95) -> GraderGap:
    """Paired gap between the grader and human reviewers on the reviewed trials."""
    require_columns(df, ["task_id", grader, human], "grader-vs-human gap")
    rows = df.loc[df[grader].notna() & df[human].notna()]
    g, h = rows[grader].astype(float).to_numpy(), rows[human].astype(float).to_numpy()
    frame = pd.DataFrame({"task_id": rows["task_id"].to_numpy(), "g": g, "h": h, "d": g - h})
    per = frame.groupby("task_id", sort=True).agg(g=("g", "mean"), h=("h", "mean"), d=("d", "mean"), n=("d", "size"))
    r = paired_t(per["d"].to_numpy(), level)
    b, c = int(np.sum((g > 0.5) & (h < 0.5))), int(np.sum((g < 0.5) & (h > 0.5)))
    one_each = len(per) > 0 and bool((per["n"] == 1).all())
    p_mc = (float(mcnemar([[0, b], [c, 0]], exact=True).pvalue) if b + c else 1.0) if one_each else np.nan
    note = "" if len(per) >= 2 else "fewer than 2 reviewed tasks (n < 2): no standard error"
    return GraderGap(
        grader_rate=float(per["g"].mean()) if len(per) else np.nan,
        human_rate=float(per["h"].mean()) if len(per) else np.nan,
        gap=float(r["diff"]), se=float(r["se"]), ci_low=float(r["ci_low"]), ci_high=float(r["ci_high"]),
        level=level, p_t=float(r["p"]), n_tasks=len(per), n_trials=len(rows), grader_only=b, human_only=c,
        p_mcnemar=p_mc, note=note,
    )


def acceptance_ratio(x: float, n: float, x_ref: float, n_ref: float, *, level: float = 0.95) -> dict[str, float]:
    """(x/n) / (x_ref/n_ref) with the Katz log interval; NaN (with a note) when undefined."""
    if n < 1 or n_ref < 1 or x_ref <= 0:
        return {"ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                "note": "reference rate is 0 or a side is empty: ratio undefined"}
    lo, hi = confint_proportions_2indep(x, n, x_ref, n_ref, compare="ratio", method="log", alpha=1 - level)
    return {"ratio": float((x / n) / (x_ref / n_ref)), "ci_low": float(lo), "ci_high": float(hi), "note": ""}
