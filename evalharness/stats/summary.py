"""Vectorized per-configuration summary of task means (used by ``score`` and ``score_table``).

Method (Miller 2024, arXiv 2411.00640, sections 2-4):
- score = mean of task means s_i; SE = sd(s_i, ddof=1) / sqrt(n); Student t interval with n-1 df.
- seeds: s_ik = x_i + e_ik; within-task variance E[sigma^2] = mean of per-task sample variances
  (binary: p(1-p)K/(K-1)); between-task variance Var(x) = Var(s_i) - E[sigma^2] * mean(1/K_i),
  truncated at 0; predicted SE with K' seeds = sqrt((Var(x) + E[sigma^2]/K') / n).
- t intervals are clipped to [0, 1], the range of a rate.
- one seed per task and n below ``small_n``: Wilson interval instead of t (Bowyer et al. 2025,
  arXiv 2503.01747); also when every task mean is equal (the t interval would have zero width).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from evalharness.stats._frame import within_variance
from evalharness.stats.intervals import t_interval, wilson_interval

SMALL_N = 300
"""Below this many tasks, one-seed binary scores get a Wilson interval (Bowyer et al. 2025)."""

PREDICT_SEEDS = (1, 3, 5, 10)


def summarize(ts: pd.DataFrame, keys: Sequence[str] = (), *, level: float = 0.95,
              small_n: int = SMALL_N) -> pd.DataFrame:
    """One row per group of ``keys`` from per-task rows (columns k, n, ss, mean; see _frame.per_task)."""
    keys = list(keys)
    ts = ts.assign(_w=within_variance(ts), _inv=1.0 / ts["n"], _g=0)
    g = ts.groupby(keys or ["_g"], sort=True, observed=True)
    out = g.agg(
        n_tasks=("mean", "count"), resolve_rate=("mean", "mean"), sd=("mean", "std"),
        n_seeds_min=("n", "min"), n_seeds_max=("n", "max"), n_trials=("n", "sum"),
        successes=("k", "sum"), var_within=("_w", "mean"), inv_k=("_inv", "mean"),
    )
    out = out.reset_index(drop=not keys)
    n = out["n_tasks"].astype(float)
    out["se"] = (out["sd"] / np.sqrt(n)).where(n >= 2)
    out["df"] = (n - 1).where(n >= 2)
    pooled = out["successes"] / out["n_trials"]
    out["naive_se"] = np.sqrt(pooled * (1 - pooled) / out["n_trials"]).where((pooled > 0) & (pooled < 1))
    out["var_between"] = (out["sd"] ** 2 - out["var_within"] * out["inv_k"]).clip(lower=0.0)
    _add_interval(out, level, small_n)
    _notes(out, small_n)
    return out.drop(columns=["inv_k"])


def _add_interval(out: pd.DataFrame, level: float, small_n: int) -> None:
    n = out["n_tasks"].astype(float)
    lo, hi = t_interval(out["resolve_rate"], out["se"], out["df"], level)
    wilson = ((out["n_seeds_max"] == 1) & (n < small_n)) | (out["sd"] == 0)
    wlo, whi = wilson_interval(out["resolve_rate"] * n, n, level)
    ok = n >= 2
    out["ci_low"] = np.where(ok, np.where(wilson, wlo, np.maximum(lo, 0.0)), np.nan)
    out["ci_high"] = np.where(ok, np.where(wilson, whi, np.minimum(hi, 1.0)), np.nan)
    out["interval"] = np.where(ok, np.where(wilson, "wilson", "t"), "none")


def _notes(out: pd.DataFrame, small_n: int) -> None:
    """Columns data_note (why numbers are NaN), interval_note (why Wilson) and note (both)."""
    n = out["n_tasks"]
    data = np.select(
        [n == 0, n < 2, out["var_within"].isna()],
        ["no usable trials", "fewer than 2 tasks (n < 2): no standard error",
         "one seed per task: within-task variance not identifiable"], default="")
    interval = np.select(
        [n < 2, out["sd"] == 0, (out["n_seeds_max"] == 1) & (n < small_n)],
        ["", "every task mean is equal: t interval would have zero width, Wilson on tasks shown",
         f"one seed per task and n < {small_n}: Wilson interval (Bowyer et al. 2025)"], default="")
    out["data_note"] = data
    out["interval_note"] = interval
    out["note"] = [join_notes(a, b) for a, b in zip(data, interval)]


def join_notes(*notes: str) -> str:
    """Join the non-empty notes with '; '."""
    return "; ".join(n for n in notes if n)


def predicted_se(var_between: float, var_within: float, n_tasks: int,
                 seeds: Sequence[int] = PREDICT_SEEDS) -> dict[int, float]:
    """SE of the score with K seeds per task: sqrt((Var(x) + E[sigma^2]/K) / n) (Miller 2024, eq. 4)."""
    if n_tasks < 2 or not np.isfinite(var_within):
        return {int(k): float("nan") for k in seeds}
    return {int(k): float(np.sqrt((var_between + var_within / k) / n_tasks)) for k in seeds}
