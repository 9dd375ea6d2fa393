"""Planning: how many tasks and seeds a paired A/B comparison needs (Miller 2024, arXiv 2411.00640, sec. 5).

n = (z_{1-alpha/2} + z_{power})^2 * (w^2 + s_A^2/K_A + s_B^2/K_B) / delta^2, where w^2 is the
variance of the true per-task differences and s^2 the mean within-task (seed) variance of each
side; MDE = (z_{1-alpha/2} + z_{power}) * sqrt((w^2 + s_A^2/K_A + s_B^2/K_B) / n).

From a pilot run: s^2 = mean per-task sample variance over seeds (binary: p(1-p)K/(K-1)); w^2 =
Var(d_i) - s_A^2 mean(1/K_A) - s_B^2 mean(1/K_B), truncated at 0. A pilot with one seed per task
cannot separate w^2 from s^2 (predictions for other K are NaN); a pilot with one configuration
has no differences, so w^2 = 2 Var(x) is used (tasks as if unpaired: conservative).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from evalharness.stats._frame import config_labels, per_task, usable_trials, within_variance

PLAN_SEEDS = (1, 3, 5, 10)


def _z(alpha: float, power: float) -> float:
    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


def _noise(var_between: float, var_within_a: float, var_within_b: float | None, k_a: float,
           k_b: float | None) -> float:
    var_within_b = var_within_a if var_within_b is None else var_within_b
    k_b = k_a if k_b is None else k_b
    return var_between + var_within_a / k_a + var_within_b / k_b


def tasks_needed(delta: float, var_between: float, var_within_a: float, var_within_b: float | None = None, *,
                 k_a: float = 1, k_b: float | None = None, alpha: float = 0.05, power: float = 0.8) -> float:
    """Tasks (not rounded) for a two-sided paired test at ``alpha`` to detect ``delta`` with ``power``."""
    if delta == 0:
        return float("inf")
    return _z(alpha, power) ** 2 * _noise(var_between, var_within_a, var_within_b, k_a, k_b) / delta**2


def mde(n_tasks: float, var_between: float, var_within_a: float, var_within_b: float | None = None, *,
        k_a: float = 1, k_b: float | None = None, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable difference with ``n_tasks`` shared tasks; NaN when n_tasks < 2."""
    if n_tasks < 2:
        return float("nan")
    return _z(alpha, power) * float(np.sqrt(_noise(var_between, var_within_a, var_within_b, k_a, k_b) / n_tasks))


@dataclass(frozen=True)
class PilotPlan:
    """Variance components estimated from a pilot run, for ``table``."""

    config_a: str
    config_b: str
    n_tasks: int
    seeds_pilot: float
    var_diff_between: float
    """w^2: variance of the true per-task differences A - B."""
    var_within_a: float
    var_within_b: float
    var_between_a: float
    """Var(x) of A's true task rates (for the SE of A's score alone)."""
    var_diff_total: float
    """Var(d_i) observed at the pilot's seeds (usable at K = pilot seeds even when not separable)."""
    var_score_total: float
    """Var(s_i) of A's task means at the pilot's seeds."""
    note: str

    def to_dict(self) -> dict:
        return asdict(self)

    def table(self, seeds: Sequence[int] = PLAN_SEEDS, *, delta: float = 0.05, alpha: float = 0.05,
              power: float = 0.8) -> pd.DataFrame:
        """One row per seed count K: tasks needed for ``delta``, trials per configuration, MDE and SEs at n."""
        rows = []
        for k in seeds:
            noise = self._noise_at(k)
            n_need = _z(alpha, power) ** 2 * noise / delta**2
            se_diff = np.sqrt(noise / self.n_tasks) if self.n_tasks >= 2 else np.nan
            se_score = np.sqrt(self._score_var_at(k) / self.n_tasks) if self.n_tasks >= 2 else np.nan
            rows.append({"seeds": k, "tasks_needed": n_need, "trials_per_config": n_need * k,
                         "mde_at_n": _z(alpha, power) * se_diff, "se_diff_at_n": se_diff,
                         "se_score_at_n": se_score})
        out = pd.DataFrame(rows)
        out.attrs.update(n_tasks=self.n_tasks, delta=delta, alpha=alpha, power=power, note=self.note)
        return out

    def _score_var_at(self, k: int) -> float:
        if np.isfinite(self.var_within_a):
            return self.var_between_a + self.var_within_a / k
        return self.var_score_total if k == self.seeds_pilot else float("nan")

    def _noise_at(self, k: int) -> float:
        if np.isfinite(self.var_within_a) and np.isfinite(self.var_within_b):
            return self.var_diff_between + self.var_within_a / k + self.var_within_b / k
        return self.var_diff_total if k == self.seeds_pilot else float("nan")


def plan_from_pilot(df: pd.DataFrame, *, a: str | None = None, b: str | None = None,
                    infra_as_failure: bool = False) -> PilotPlan:
    """Estimate w^2, s_A^2, s_B^2 from a pilot run (first two configurations in sorted order by default)."""
    frame = df.assign(config=config_labels(df))
    trials, _ = usable_trials(frame, infra_as_failure=infra_as_failure)
    ts = per_task(trials, ["config"])
    ts["w"] = within_variance(ts)
    configs = sorted(ts["config"].unique())
    a = a or (configs[0] if configs else "")
    b = b or (configs[1] if len(configs) > 1 else None)
    ta = ts.loc[ts["config"] == a].set_index("task_id")
    s2a, inv_a = float(ta["w"].mean()), float((1 / ta["n"]).mean())
    var_x = max(float(ta["mean"].var()) - s2a * inv_a, 0.0) if np.isfinite(s2a) else float("nan")
    seeds = float(ta["n"].mean()) if len(ta) else float("nan")
    if b is None:
        note = "one configuration: w^2 = 2 Var(x) (tasks as if unpaired, conservative)"
        var_s = float(ta["mean"].var())
        return PilotPlan(a, a, len(ta), seeds, 2 * var_x, s2a, s2a, var_x, 2 * var_s, var_s, note)
    tb = ts.loc[ts["config"] == b].set_index("task_id")
    shared = ta.index.intersection(tb.index)
    d = ta.loc[shared, "mean"] - tb.loc[shared, "mean"]
    s2b, inv_b = float(tb.loc[shared, "w"].mean()), float((1 / tb.loc[shared, "n"]).mean())
    inv_a_shared = float((1 / ta.loc[shared, "n"]).mean())
    w2 = max(float(d.var()) - s2a * inv_a_shared - s2b * inv_b, 0.0)
    note = "" if np.isfinite(s2a) and np.isfinite(s2b) else (
        "one seed per task in the pilot: within-task variance not identifiable; only K = pilot seeds planned")
    if len(shared) >= 2 and float(d.var()) == 0 and s2a == 0 and s2b == 0:
        note = ("the pilot shows no variation at all (every task difference equal, every seed alike): "
                "the variance estimates are 0, so these numbers are degenerate; pilot on more varied tasks")
    if len(shared) < 2:
        note = "fewer than 2 shared tasks in the pilot: nothing to plan from"
    return PilotPlan(a, b, len(shared), seeds, w2, s2a, s2b, var_x, float(d.var()), float(ta["mean"].var()), note)


def plan_table(df: pd.DataFrame, *, seeds: Sequence[int] = PLAN_SEEDS, delta: float = 0.05, alpha: float = 0.05,
               power: float = 0.8, a: str | None = None, b: str | None = None) -> pd.DataFrame:
    """The table ``evalharness plan RUN_ID`` prints: K = 1, 3, 5, 10 seeds (``PilotPlan.table``)."""
    return plan_from_pilot(df, a=a, b=b).table(seeds, delta=delta, alpha=alpha, power=power)
