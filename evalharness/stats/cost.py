"""Cost per resolved task: a ratio estimator with a task-clustered interval.

Method (Cochran 1977, "Sampling Techniques", ch. 6, ratio estimator with Taylor linearization):
per task i, c_i = mean cost of its trials with a known cost and y_i = mean resolved over the same
trials. R = sum c_i / sum y_i (dollars spent per resolved task when every trial is an attempt).
Linearized residuals z_i = c_i - R y_i; Var(R) = n/(n-1) * sum z_i^2 / (sum y_i)^2, tasks as
clusters, so seeds of one task are not treated as independent. The interval is t_{n-1} on the
log scale, R * exp(+-t * SE/R), which keeps it positive. Unknown costs (NaN) are left out and
counted, never read as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from evalharness.stats._frame import config_label, per_task, usable_trials


@dataclass(frozen=True)
class CostSummary:
    config: str
    mean_cost_usd: float
    cost_per_resolved: float
    se: float
    ci_low: float
    ci_high: float
    level: float
    n_tasks: int
    """Tasks with at least one known cost."""
    n_cost_unknown: int
    """Trials whose cost is unknown (left out)."""
    mean_tokens: float
    note: str

    def to_dict(self) -> dict:
        return asdict(self)


def cost_by_group(ts: pd.DataFrame, keys: Sequence[str] = (), level: float = 0.95) -> pd.DataFrame:
    """Vectorized cost columns per group from per-task rows (see _frame.per_task)."""
    keys = list(keys)
    t = ts.loc[ts["n_cost"] > 0].assign(_g=0)
    gkeys = keys or ["_g"]
    g = t.groupby(gkeys, sort=True, observed=True)
    out = g.agg(n_cost_tasks=("cost", "count"), sum_c=("cost", "sum"), sum_y=("y_cost", "sum"),
                mean_cost_usd=("cost", "mean"))
    ratio = out["sum_c"] / out["sum_y"].where(out["sum_y"] > 0)
    t = t.join(ratio.rename("_r"), on=gkeys)
    t["_z2"] = (t["cost"] - t["_r"] * t["y_cost"]) ** 2
    n = out["n_cost_tasks"].astype(float)
    var = n / (n - 1) * t.groupby(gkeys, sort=True, observed=True)["_z2"].sum() / out["sum_y"] ** 2
    out["cost_per_resolved"] = ratio
    out["cost_per_resolved_se"] = np.sqrt(var).where(n >= 2)
    q = stats.t.ppf(0.5 + level / 2, np.where(n >= 2, n - 1, np.nan))
    spread = np.exp(q * out["cost_per_resolved_se"] / ratio)
    out["cost_per_resolved_low"] = ratio / spread
    out["cost_per_resolved_high"] = ratio * spread
    out["cost_note"] = np.select(
        [n < 1, out["sum_y"] <= 0, n < 2],
        ["cost unknown", "no resolved trials: cost per resolved undefined", "fewer than 2 tasks with a cost"],
        default="")
    out = out.drop(columns=["sum_c", "sum_y"])
    tokens = ts.assign(_g=0).groupby(gkeys, sort=True, observed=True)["tokens"].mean().rename("mean_tokens")
    out = out.join(tokens, how="outer")
    out["n_cost_tasks"] = out["n_cost_tasks"].fillna(0).astype(int)
    out["cost_note"] = out["cost_note"].fillna("cost unknown")
    return out.reset_index(drop=not keys)


def ratio_estimate(cost, resolved, level: float = 0.95) -> dict[str, float]:
    """Single-group ratio estimator from per-task mean cost and mean resolved (NaN costs left out).

    Same numbers as ``cost_by_group`` for one group, in plain numpy (used per side by ``compare``).
    """
    c, y = np.asarray(cost, dtype=float), np.asarray(resolved, dtype=float)
    ok = np.isfinite(c) & np.isfinite(y)
    c, y = c[ok], y[ok]
    n, total = c.size, y.sum()
    ratio = c.sum() / total if n and total > 0 else float("nan")
    se = float(np.sqrt(n / (n - 1) * np.sum((c - ratio * y) ** 2)) / total) if n >= 2 and total > 0 else float("nan")
    q = stats.t.ppf(0.5 + level / 2, n - 1) if n >= 2 else float("nan")
    spread = np.exp(q * se / ratio) if np.isfinite(se) and ratio > 0 else float("nan")
    return {"ratio": float(ratio), "se": se, "low": float(ratio / spread), "high": float(ratio * spread), "n": n}


def cost_per_resolved(df: pd.DataFrame, *, level: float = 0.95, infra_as_failure: bool = False) -> CostSummary:
    """Cost per resolved task of ONE configuration with a task-clustered interval (module docstring)."""
    label = config_label(df)
    trials, _ = usable_trials(df, infra_as_failure=infra_as_failure)
    unknown = int(trials["cost_usd"].isna().sum()) if "cost_usd" in trials else len(trials)
    nan = float("nan")
    if trials.empty:
        return CostSummary(label, nan, nan, nan, nan, nan, level, 0, unknown, nan, "no usable trials")
    row = cost_by_group(per_task(trials), level=level).iloc[0]
    return CostSummary(
        config=label, mean_cost_usd=float(row["mean_cost_usd"]),
        cost_per_resolved=float(row["cost_per_resolved"]), se=float(row["cost_per_resolved_se"]),
        ci_low=float(row["cost_per_resolved_low"]), ci_high=float(row["cost_per_resolved_high"]),
        level=level, n_tasks=int(row["n_cost_tasks"]), n_cost_unknown=unknown,
        mean_tokens=float(row["mean_tokens"]), note=str(row["cost_note"]),
    )
