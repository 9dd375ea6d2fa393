"""pass@k and pass^k from n trials of a task with c successes, and their task-level averages.

- pass@k = 1 - C(n-c, k) / C(n, k): probability that at least one of k trials drawn without
  replacement from the n resolves (Chen et al. 2021, "Evaluating Large Language Models Trained on
  Code", arXiv 2107.03374, unbiased estimator); 1 when n - c < k.
- pass^k = C(c, k) / C(n, k): probability that all k drawn trials resolve (Yao et al. 2024,
  tau-bench, arXiv 2406.12045), a reliability measure.
Both are NaN when n < k (not enough trials to estimate). The score over tasks is the mean of
per-task values with a task-level SE and t interval, as for the resolve rate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalharness.stats._frame import per_task, usable_trials
from evalharness.stats.intervals import t_interval


def _ratio_of_combinations(top: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """C(top, k) / C(n, k) as prod_{i<k} (top - i) / (n - i), stable for large n; 0 when top < k."""
    i = np.arange(k, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        factors = (top[..., None] - i) / (n[..., None] - i)
    return np.where(top >= k, np.prod(np.clip(factors, 0.0, None), axis=-1), 0.0)


def pass_at_k(n, c, k: int) -> np.ndarray | float:
    """Unbiased pass@k for n trials with c successes; NaN where n < k."""
    n, c = np.asarray(n, dtype=float), np.asarray(c, dtype=float)
    value = np.where(n >= k, 1.0 - _ratio_of_combinations(n - c, n, k), np.nan)
    return float(value) if value.ndim == 0 else value


def pass_hat_k(n, c, k: int) -> np.ndarray | float:
    """pass^k (all k of k drawn trials resolve) for n trials with c successes; NaN where n < k."""
    n, c = np.asarray(n, dtype=float), np.asarray(c, dtype=float)
    value = np.where(n >= k, _ratio_of_combinations(c, n, k), np.nan)
    return float(value) if value.ndim == 0 else value


def pass_k_table(df: pd.DataFrame, k: int, *, by: tuple[str, ...] = ("config",), level: float = 0.95,
                 infra_as_failure: bool = False) -> pd.DataFrame:
    """Per configuration: mean pass@k and pass^k over tasks with task-level SE and t interval.

    Tasks with fewer than k usable trials are left out and counted in ``n_tasks_short``.
    """
    trials, _ = usable_trials(df, infra_as_failure=infra_as_failure)
    ts = per_task(trials, list(by))
    ts["pass_at_k"] = pass_at_k(ts["n"].to_numpy(), ts["k"].to_numpy(), k)
    ts["pass_hat_k"] = pass_hat_k(ts["n"].to_numpy(), ts["k"].to_numpy(), k)
    g = ts.groupby(list(by), sort=True)
    out = g.agg(n_tasks=("pass_at_k", "count"), n_tasks_short=("pass_at_k", lambda v: int(v.isna().sum())))
    for col in ("pass_at_k", "pass_hat_k"):
        mean, sd = g[col].mean(), g[col].std()
        se = (sd / np.sqrt(out["n_tasks"])).where(out["n_tasks"] >= 2)
        lo, hi = t_interval(mean, se, out["n_tasks"] - 1, level)
        out[col], out[f"{col}_se"] = mean, se
        out[f"{col}_low"], out[f"{col}_high"] = np.clip(lo, 0, 1), np.clip(hi, 0, 1)
    out["k"] = k
    out["note"] = np.where(out["n_tasks"] < 2, f"fewer than 2 tasks with at least {k} trials", "")
    return out.reset_index()
