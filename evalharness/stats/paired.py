"""Paired A/B comparison of two configurations on their shared tasks: ``compare(df_a, df_b)``.

Methods (Miller 2024, arXiv 2411.00640, section 3; docs/statistics.md):
- d_i = s_A,i - s_B,i (task means) over shared tasks; mean d, SE = sd(d)/sqrt(n) and the paired t
  p-value (equals ``scipy.stats.ttest_rel`` on the task means);
- the interval of the difference stays in [-1, 1] (``interval`` names it, chosen by the coverage
  grid of benchmarks/paired_coverage.py): with n >= SMALL_N shared tasks the t_{n-1} interval clipped to
  [-1, 1] ("t"); below, one binary seed per task on both sides gets the Bonett-Price adjusted Wald
  interval on the counts of discordant tasks ("bonett-price", intervals.py); fractional task means get
  the clipped t ("t") unless every difference is equal (zero width), then the Bonett-Price interval on
  fractional discordance counts sum a(1-b), sum (1-a)b ("bonett-price (equal differences)");
- exact sign-flip permutation p (see signflip.py);
- one binary seed per task on both sides: exact McNemar (``statsmodels`` ``mcnemar(exact=True)``)
  and the paired Wald interval of (b - c)/N with SE = sqrt((b + c) - (b - c)^2/N)/N, clipped to [-1, 1];
- task sets differ: an unpaired test on all tasks of each side, Fisher exact and Boschloo
  (``scipy.stats.fisher_exact`` / ``boschloo_exact``) with one seed, Welch t on task means otherwise;
- P(A > B) from independent Beta(x+1, n-x+1) posteriors with x = sum of task means on shared tasks
  (ignores pairing: a descriptive Bayesian view, not a test);
- cost per resolved task per side (cost.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from evalharness.stats._frame import config_label, per_task, require_columns, usable_trials
from evalharness.stats.cost import ratio_estimate
from evalharness.stats.intervals import bonett_price_interval, prob_greater, t_interval
from evalharness.stats.signflip import signflip_pvalue
from evalharness.stats.summary import SMALL_N, join_notes

NAN = float("nan")
BOSCHLOO_MAX_N = 400


@dataclass(frozen=True)
class PairedComparison:
    """A minus B on shared tasks. Undefined numbers are NaN and ``note`` says why."""

    config_a: str
    config_b: str
    n_shared: int
    rate_a: float
    rate_b: float
    diff: float
    se: float
    ci_low: float
    ci_high: float
    level: float
    interval: str
    """Method of [ci_low, ci_high]: t, bonett-price, bonett-price (equal differences), none."""
    t: float
    df: float
    p_t: float
    p_signflip: float
    signflip_method: str
    mcnemar_b: int | None = None
    """Shared tasks resolved by A only (one binary seed each)."""
    mcnemar_c: int | None = None
    """Shared tasks resolved by B only."""
    p_mcnemar: float = NAN
    mcnemar_ci_low: float = NAN
    mcnemar_ci_high: float = NAN
    unpaired_method: str = ""
    p_unpaired: float = NAN
    p_a_better: float = NAN
    cost_per_resolved_a: float = NAN
    cost_per_resolved_b: float = NAN
    n_infra_a: int = 0
    n_infra_b: int = 0
    dropped: dict[str, str] = field(default_factory=dict)
    """Task id -> why it is not in the paired comparison."""
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def paired_t(d, level: float = 0.95) -> dict[str, np.ndarray]:
    """Paired t statistics of differences ``d`` along the last axis (vectorized over leading axes)."""
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    mean = d.mean(axis=-1) if n else np.full(d.shape[:-1], np.nan)
    sd = d.std(axis=-1, ddof=1) if n >= 2 else np.full(d.shape[:-1], np.nan)
    se = sd / math.sqrt(n) if n >= 2 else sd
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean / se, np.nan)
    df = float(n - 1) if n >= 2 else NAN
    p = 2 * stats.t.sf(np.abs(t), df) if n >= 2 else np.full_like(t, np.nan)
    lo, hi = t_interval(mean, np.where(se > 0, se, np.nan), df, level)
    return {"diff": mean, "se": se, "t": t, "df": df, "p": p, "ci_low": lo, "ci_high": hi}


def difference_interval(a: np.ndarray, b: np.ndarray, n_a: np.ndarray, n_b: np.ndarray, *, level: float = 0.95,
                        small_n: int = SMALL_N) -> tuple[float, float, str]:
    """Interval of mean(a - b) over paired tasks (task means a, b with n_a, n_b trials), inside [-1, 1].

    See the module docstring for which method is used when.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = a.size
    if n < 2:
        return NAN, NAN, "none"
    d = a - b
    binary = _one_binary(a, n_a) and _one_binary(b, n_b)
    if n < small_n and (binary or np.ptp(d) == 0):
        lo, hi = bonett_price_interval(float(np.sum(a * (1 - b))), float(np.sum((1 - a) * b)), n, level)
        return lo, hi, "bonett-price" if binary else "bonett-price (equal differences)"
    se = d.std(ddof=1) / math.sqrt(n)
    if not se > 0:
        return NAN, NAN, "none"
    lo, hi = t_interval(d.mean(), se, n - 1, level)
    return max(float(lo), -1.0), min(float(hi), 1.0), "t"


def _one_binary(mean: np.ndarray, n: np.ndarray) -> bool:
    """One trial per task with a 0/1 outcome (a merged share of several reviewers may be fractional)."""
    mean = np.asarray(mean, dtype=float)
    return bool(np.all(np.asarray(n) == 1) and np.all((mean == 0) | (mean == 1)))


def compare(df_a: pd.DataFrame, df_b: pd.DataFrame, *, level: float = 0.95, infra_as_failure: bool = False,
            n_resamples: int = 9999, seed: int = 0, value: str = "resolved") -> PairedComparison:
    """Compare configuration A with B, pairing on shared tasks (see the module docstring).

    ``value`` is the 0/1 (or fractional) outcome column: "resolved" (the grader), or "merged" (reviewers,
    see merge.merged_column); rows with NaN in it (not reviewed) are left out and the note says how many.
    """
    sides, unreviewed = [], 0
    for frame in (df_a, df_b):
        seen, unusable = pd.Index(frame["task_id"].unique()), "only infrastructure failures"
        if value != "resolved":
            require_columns(frame, ["task_id", value], f"compare on {value!r}")
            unreviewed += int(frame[value].isna().sum())
            frame, unusable = frame.loc[frame[value].notna()], f"no trial with a {value!r} value"
        trials, n_infra = usable_trials(frame, infra_as_failure=infra_as_failure, value=value)
        sides.append(TaskSide(config_label(frame), per_task(trials).set_index("task_id"), seen, n_infra, unusable))
    c = compare_tasks(sides[0], sides[1], level=level, n_resamples=n_resamples, seed=seed)
    if unreviewed:
        c = replace(c, note=join_notes(c.note, unreviewed_note(unreviewed, value)))
    return c


def unreviewed_note(count: int, value: str) -> str:
    """Note for trials left out of a comparison on ``value`` because they have no value (not reviewed)."""
    return f"{count} trial(s) without a {value!r} value (not reviewed) left out"


@dataclass(frozen=True)
class TaskSide:
    """One side of a comparison: per-task rows indexed by task_id, tasks seen, infrastructure count."""

    config: str
    tasks: pd.DataFrame
    seen: pd.Index
    n_infra: int
    unusable: str = "only infrastructure failures"
    """Why a task seen but without per-task rows is left out (with value="merged": not reviewed)."""


def compare_tasks(a: TaskSide, b: TaskSide, *, level: float = 0.95, n_resamples: int = 9999,
                  seed: int = 0) -> PairedComparison:
    """``compare`` on per-task rows (lets ``compare_all`` aggregate trials once)."""
    ta, tb = a.tasks, b.tasks
    shared = ta.index.intersection(tb.index).sort_values()
    sa, sb = ta.loc[shared], tb.loc[shared]
    d = sa["mean"].to_numpy() - sb["mean"].to_numpy()
    r = {k: (float(v) if np.ndim(v) == 0 else v) for k, v in paired_t(d, level).items()}
    p_flip, how = NAN, "none (no shared tasks)"
    if len(d):
        lattice = math.lcm(*np.unique(np.concatenate([sa["n"], sb["n"]]).astype(int)).tolist())
        p_flip, how = signflip_pvalue(d, lattice=lattice, n_resamples=n_resamples, seed=seed)
    dropped = _dropped(a, b, shared)
    lo, hi, interval = difference_interval(sa["mean"].to_numpy(), sb["mean"].to_numpy(), sa["n"].to_numpy(),
                                           sb["n"].to_numpy(), level=level)
    out = dict(
        config_a=a.config, config_b=b.config, n_shared=len(shared),
        rate_a=float(sa["mean"].mean()) if len(d) else NAN, rate_b=float(sb["mean"].mean()) if len(d) else NAN,
        diff=r["diff"], se=r["se"], ci_low=lo, ci_high=hi, level=level, interval=interval, t=r["t"],
        df=r["df"], p_t=r["p"], p_signflip=p_flip, signflip_method=how, n_infra_a=a.n_infra,
        n_infra_b=b.n_infra, dropped=dropped, note=_note(d),
    )
    out.update(_mcnemar(sa, sb, level))
    if dropped:
        out.update(_unpaired(ta, tb))
    out["p_a_better"] = prob_greater(sa["mean"].sum(), len(d), sb["mean"].sum(), len(d))
    out["cost_per_resolved_a"] = ratio_estimate(sa["cost"], sa["y_cost"], level)["ratio"]
    out["cost_per_resolved_b"] = ratio_estimate(sb["cost"], sb["y_cost"], level)["ratio"]
    return PairedComparison(**out)


def _dropped(a: TaskSide, b: TaskSide, shared: pd.Index) -> dict[str, str]:
    """Task -> reason for every task seen on either side but not usable on both."""
    seen_a, seen_b = a.seen.astype(str), b.seen.astype(str)
    out: dict[str, str] = {}
    for task in seen_a.union(seen_b).difference(shared.astype(str)):
        reasons = []
        for side, seen, usable in (("A", seen_a, a.tasks.index), ("B", seen_b, b.tasks.index)):
            if task not in seen:
                reasons.append(f"not run by {side}")
            elif task not in usable:
                reasons.append(f"{(a if side == 'A' else b).unusable} in {side}")
        out[str(task)] = "; ".join(reasons)
    return out


def _note(d: np.ndarray) -> str:
    if d.size == 0:
        return "no shared tasks: no paired comparison"
    if d.size < 2:
        return "fewer than 2 shared tasks (n < 2): no standard error"
    if np.ptp(d) == 0:
        return "every per-task difference is equal: t statistic undefined"
    return ""


def _mcnemar(sa: pd.DataFrame, sb: pd.DataFrame, level: float) -> dict:
    """Exact McNemar and paired Wald interval when every shared task has one binary trial per side."""
    if len(sa) == 0 or not (_one_binary(sa["mean"], sa["n"]) and _one_binary(sb["mean"], sb["n"])):
        return {}
    ya, yb = sa["mean"].to_numpy() > 0.5, sb["mean"].to_numpy() > 0.5
    b, c, n = int(np.sum(ya & ~yb)), int(np.sum(~ya & yb)), len(ya)
    table = [[int(np.sum(ya & yb)), b], [c, int(np.sum(~ya & ~yb))]]
    p = float(mcnemar(table, exact=True).pvalue) if b + c > 0 else 1.0
    se = math.sqrt(max((b + c) - (b - c) ** 2 / n, 0.0)) / n
    z = stats.norm.ppf(0.5 + level / 2)
    lo, hi = (max(float((b - c) / n - z * se), -1.0), min(float((b - c) / n + z * se), 1.0)) if se > 0 else (NAN, NAN)
    return {"mcnemar_b": b, "mcnemar_c": c, "p_mcnemar": p, "mcnemar_ci_low": lo, "mcnemar_ci_high": hi}


def _unpaired(ta: pd.DataFrame, tb: pd.DataFrame) -> dict:
    """Unpaired test on all tasks of each side (task sets differ)."""
    if len(ta) < 2 or len(tb) < 2:
        return {"unpaired_method": "none (fewer than 2 tasks on a side)"}
    if (ta["n"] == 1).all() and (tb["n"] == 1).all():
        xa, xb = int(ta["k"].sum()), int(tb["k"].sum())
        table = [[xa, len(ta) - xa], [xb, len(tb) - xb]]
        if len(ta) + len(tb) <= BOSCHLOO_MAX_N:
            return {"unpaired_method": "boschloo exact", "p_unpaired": float(stats.boschloo_exact(table).pvalue)}
        return {"unpaired_method": "fisher exact", "p_unpaired": float(stats.fisher_exact(table)[1])}
    if ta["mean"].std() == 0 and tb["mean"].std() == 0:
        return {"unpaired_method": "none (every task mean equal on both sides)"}
    res = stats.ttest_ind(ta["mean"], tb["mean"], equal_var=False)
    return {"unpaired_method": "welch t on task means", "p_unpaired": float(res.pvalue)}
