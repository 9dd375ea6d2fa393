"""Continuous rewards (Harbor verifiers that write a number in [0, 1]): the task-level mean reward per
configuration and the paired difference of two configurations' means, each with a t interval over task means.

The task is the unit, as for rates: a task's seeds are averaged first (s_i = mean reward of its trials), and the
interval is t_{n-1} over the n task means, clipped to the range ([0, 1] for a mean, [-1, 1] for a difference).
A trial the agent lost without a reward (tampered, a harness error, an agent time-out) counts 0, as it counts not
resolved in rates; task and verifier errors and infrastructure failures are left out (``_frame.usable_trials``).
Why t and not a bootstrap over tasks, and its measured coverage: docs/statistics.md, "Continuous rewards".
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from evalharness.stats._frame import _Y, config_labels, usable_trials
from evalharness.stats.intervals import t_interval

NAN = float("nan")


def has_continuous_rewards(df: pd.DataFrame) -> bool:
    """True when some trial's reward lies strictly between 0 and 1 (a pack with non-binary rewards)."""
    if "reward" not in df.columns or not len(df):
        return False
    r = pd.to_numeric(df["reward"], errors="coerce")
    return bool(((r > 0) & (r < 1)).any())


def task_rewards(df: pd.DataFrame, *, infra_as_failure: bool = False) -> pd.DataFrame:
    """Per (config, task): ``reward`` (mean over its usable trials, a missing reward as 0) and ``n`` trials."""
    frame = df.assign(_r=pd.to_numeric(df["reward"], errors="coerce") if "reward" in df.columns else np.nan)
    usable, _ = usable_trials(frame.assign(config=config_labels(frame)), infra_as_failure=infra_as_failure,
                              value="_r")
    usable[_Y] = usable[_Y].fillna(0.0)
    g = usable.groupby(["config", "task_id"], sort=True, observed=True)[_Y]
    return g.agg(reward="mean", n="count").reset_index()


def mean_interval(values, *, level: float = 0.95, low: float = 0.0, high: float = 1.0) -> dict:
    """Mean of ``values`` (one per task) with SE and the clipped t interval; NaN and a note below 2 values."""
    x = np.asarray(values, dtype=float)
    n = x.size
    mean = float(x.mean()) if n else NAN
    if n < 2:
        return {"mean": mean, "se": NAN, "ci_low": NAN, "ci_high": NAN, "n_tasks": n,
                "note": "fewer than 2 tasks: no interval"}
    se = float(x.std(ddof=1) / math.sqrt(n)) if np.ptp(x) > 0 else 0.0
    if not se > 0:
        return {"mean": mean, "se": se, "ci_low": mean, "ci_high": mean, "n_tasks": n,
                "note": "every task has the same mean: the t interval has no width"}
    lo, hi = t_interval(mean, se, n - 1, level)
    return {"mean": mean, "se": se, "ci_low": max(float(lo), low), "ci_high": min(float(hi), high),
            "n_tasks": n, "note": ""}


def reward_table(df: pd.DataFrame, *, level: float = 0.95, infra_as_failure: bool = False) -> list[dict]:
    """One row per configuration: mean reward over tasks, SE, t interval in [0, 1], tasks and trials."""
    per_task = task_rewards(df, infra_as_failure=infra_as_failure)
    rows = []
    for config, part in per_task.groupby("config", sort=True):
        row = mean_interval(part["reward"], level=level)
        rows.append({"config": str(config), "mean_reward": row.pop("mean"), **row, "n_trials": int(part["n"].sum()),
                     "interval": "t", "level": level})
    return rows


def reward_difference(df_a: pd.DataFrame, df_b: pd.DataFrame, *, level: float = 0.95,
                      infra_as_failure: bool = False) -> dict:
    """Paired A - B of task mean rewards on the tasks both have: mean, SE, t interval in [-1, 1], paired t p."""
    a = task_rewards(df_a, infra_as_failure=infra_as_failure).groupby("task_id")["reward"].mean()
    b = task_rewards(df_b, infra_as_failure=infra_as_failure).groupby("task_id")["reward"].mean()
    shared = a.index.intersection(b.index)
    d = (a.loc[shared] - b.loc[shared]).to_numpy(dtype=float)
    row = mean_interval(d, level=level, low=-1.0, high=1.0)
    p = float(stats.ttest_rel(a.loc[shared], b.loc[shared]).pvalue) if len(d) >= 2 and row["se"] > 0 else NAN
    return {"config_a": _label(df_a), "config_b": _label(df_b), "n_shared": int(len(shared)),
            "mean_a": float(a.loc[shared].mean()) if len(shared) else NAN,
            "mean_b": float(b.loc[shared].mean()) if len(shared) else NAN,
            "diff": row["mean"], "se": row["se"], "ci_low": row["ci_low"], "ci_high": row["ci_high"], "p_t": p,
            "interval": "t", "level": level, "note": row["note"]}


def reward_comparisons(df: pd.DataFrame, *, level: float = 0.95) -> list[dict]:
    """Each configuration against the reference (the first, sorted), as ``compare_all`` does for rates."""
    labels = config_labels(df)
    configs = sorted(labels.unique())
    return [{**reward_difference(df[labels == c], df[labels == configs[0]], level=level), "reference": configs[0],
             "config": c} for c in configs[1:]]


def _label(df: pd.DataFrame) -> str:
    labels = config_labels(df).unique()
    return str(labels[0]) if len(labels) else ""
