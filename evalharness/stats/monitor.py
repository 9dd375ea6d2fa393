"""Drift monitoring of one stream (a configuration on a task panel, run daily): ``detect_drift``.

Steps (docs/statistics.md, "Drift"): freeze a baseline (>= 20 days and >= 1000 trials after a
version pin, with per-task rates); alarm on a one-sided binomial CUSUM (Page 1954) whose threshold
gives ARL0 >= 365 * M days for M streams by the Brook-Evans (1972) Markov chain on the
Poisson-binomial pmf of the fixed panel; report an always-valid p-value (mixture SPRT, Johari et
al. 2022) and a one-sided Beta-mixture e-value; describe (never alarm on) 1/7/30-day Wilson
intervals and the Newcombe interval of the 30-day rate minus the baseline; watch mean cost and
tokens per trial with a two-sided normal CUSUM. After an alarm: report, re-baseline, reset.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from evalharness.stats import drift, sequential
from evalharness.stats._frame import per_task, require_columns, usable_trials
from evalharness.stats.intervals import newcombe_difference, wilson_interval

MIN_DAYS, MIN_TRIALS = 20, 1000


@dataclass(frozen=True)
class DriftBaseline:
    """Frozen in-control reference of a stream."""

    p0: float
    task_rates: dict[str, float]
    trials_per_day: int
    n_days: int
    n_trials: int
    successes: int
    cost_mean: float = float("nan")
    cost_sd: float = float("nan")
    tokens_mean: float = float("nan")
    tokens_sd: float = float("nan")
    note: str = ""


def daily_counts(df: pd.DataFrame, *, infra_as_failure: bool = False) -> pd.DataFrame:
    """Daily series of a stream from its trials: trials, resolved, and mean/count of cost and tokens."""
    require_columns(df, ["started_at"], "drift")
    trials, _ = usable_trials(df, infra_as_failure=infra_as_failure)
    day = pd.to_datetime(trials["started_at"]).dt.floor("D").rename("day")
    cost = trials["cost_usd"].astype(float) if "cost_usd" in trials else pd.Series(np.nan, index=trials.index)
    tokens = trials["total_tokens"].astype(float) if "total_tokens" in trials else cost * np.nan
    frame = pd.DataFrame({"y": trials["_y"], "cost": cost, "tokens": tokens}).groupby(day, sort=True)
    return frame.agg(trials=("y", "count"), resolved=("y", "sum"), cost_mean=("cost", "mean"),
                     cost_n=("cost", "count"), tokens_mean=("tokens", "mean"), tokens_n=("tokens", "count"))


def freeze_baseline(df: pd.DataFrame, *, infra_as_failure: bool = False) -> DriftBaseline:
    """Baseline from the trials of the in-control period (per-task rates, typical trials a day)."""
    trials, _ = usable_trials(df, infra_as_failure=infra_as_failure)
    daily = daily_counts(df, infra_as_failure=infra_as_failure)
    ts = per_task(trials)
    cost = trials["cost_usd"].astype(float) if "cost_usd" in trials else pd.Series(dtype=float)
    tokens = trials["total_tokens"].astype(float) if "total_tokens" in trials else pd.Series(dtype=float)
    n_days, n_trials = len(daily), len(trials)
    note = "" if n_days >= MIN_DAYS and n_trials >= MIN_TRIALS else (
        f"short baseline ({n_days} days, {n_trials} trials; want >= {MIN_DAYS} days and >= {MIN_TRIALS} trials)")
    return DriftBaseline(
        p0=float(trials["_y"].mean()), task_rates=dict(zip(ts["task_id"].astype(str), ts["mean"])),
        trials_per_day=int(round(daily["trials"].median())), n_days=n_days, n_trials=n_trials,
        successes=int(trials["_y"].sum()), cost_mean=float(cost.mean()), cost_sd=float(cost.std()),
        tokens_mean=float(tokens.mean()), tokens_sd=float(tokens.std()), note=note,
    )


def window_intervals(daily: pd.DataFrame, windows=(1, 7, 30), level: float = 0.95) -> pd.DataFrame:
    """Rolling calendar-window rates with Wilson intervals (descriptive only; never alarm on these)."""
    out = pd.DataFrame(index=daily.index)
    for w in windows:
        roll = daily[["trials", "resolved"]].rolling(f"{w}D").sum()
        lo, hi = wilson_interval(roll["resolved"], roll["trials"], level)
        out[f"rate_{w}d"] = roll["resolved"] / roll["trials"]
        out[f"rate_{w}d_low"], out[f"rate_{w}d_high"] = lo, hi
        out[f"trials_{w}d"] = roll["trials"]
    return out


@dataclass(frozen=True)
class DriftReport:
    """Verdict of one stream. Days are ISO dates; ``statistic`` is the CUSUM path."""

    alarm: bool
    alarm_day: str | None
    change_day: str | None
    p0: float
    p1: float
    reference: float
    threshold: float
    arl0_days: float
    arl1_days: float
    false_alarms_per_year: float
    days: list[str]
    statistic: list[float]
    p_always_valid: float
    e_value: float
    e_alarm: bool
    windows: dict[str, float] = field(default_factory=dict)
    cost_alarm_day: str | None = None
    tokens_alarm_day: str | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def detect_drift(daily: pd.DataFrame, baseline: DriftBaseline, *, delta: float = 0.10, streams: int = 1,
                 arl0_days: float | None = None, h: float | None = None, pmf: str = "panel",
                 step: float = drift.STEP, alpha: float = 0.05, level: float = 0.95) -> DriftReport:
    """Run the drift checks on a daily series (``daily_counts``) against a frozen baseline."""
    p0, p1, n = baseline.p0, baseline.p0 - delta, baseline.trials_per_day
    r_trial = drift.cusum_reference(p0, p1, 1.0)
    pmf_in, pmf_out = _pmfs(baseline, delta, pmf)
    arl0_target = 365.0 * streams if arl0_days is None else arl0_days
    if h is None:
        h, arl0 = drift.cusum_threshold(pmf_in, r_trial * n, arl0_target, step)
    else:
        arl0 = drift.cusum_arl(h, pmf_in, r_trial * n, step)
    arl1 = drift.cusum_arl(h, pmf_out, r_trial * n, step)
    r_day = np.round(r_trial * daily["trials"].to_numpy(float) / step) * step
    path = drift.cusum_path(r_day - daily["resolved"].to_numpy(float))
    alarm = drift.first_alarm(path, h)
    days = [d.date().isoformat() for d in pd.DatetimeIndex(daily.index)]
    change = drift.change_point(path, alarm) if alarm is not None else None
    p_av = sequential.msprt_pvalues(daily["resolved"], daily["trials"], p0, tau=delta)
    e = sequential.beta_evalues(daily["resolved"], daily["trials"], p0)
    return DriftReport(
        alarm=alarm is not None, alarm_day=days[alarm] if alarm is not None else None,
        change_day=days[change] if change is not None else None, p0=p0, p1=p1,
        reference=float(np.round(r_trial * n / step) * step), threshold=float(h), arl0_days=arl0,
        arl1_days=arl1, false_alarms_per_year=365.0 / arl0, days=days, statistic=path.tolist(),
        p_always_valid=float(p_av[-1]) if len(p_av) else float("nan"),
        e_value=float(e.max()) if len(e) else float("nan"), e_alarm=bool(len(e) and e.max() >= 1 / alpha),
        windows=_last_windows(daily, baseline, level),
        cost_alarm_day=_normal_alarm(daily, "cost", baseline.cost_mean, baseline.cost_sd, arl0_target, days),
        tokens_alarm_day=_normal_alarm(daily, "tokens", baseline.tokens_mean, baseline.tokens_sd, arl0_target, days),
        note=baseline.note,
    )


def _pmfs(baseline: DriftBaseline, delta: float, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """In-control and shifted daily-count pmfs: fixed panel (Poisson-binomial) or fresh tasks (binomial)."""
    n = baseline.trials_per_day
    if kind == "binomial" or not baseline.task_rates:
        return drift.binomial_pmf(n, baseline.p0), drift.binomial_pmf(n, baseline.p0 - delta)
    if kind != "panel":
        raise ValueError(f"unknown pmf {kind!r}; choose 'panel' or 'binomial'")
    rates = np.resize(np.array(list(baseline.task_rates.values()), dtype=float), n)
    return drift.poisson_binomial_pmf(rates), drift.poisson_binomial_pmf(np.clip(rates - delta, 0.0, 1.0))


def _last_windows(daily: pd.DataFrame, baseline: DriftBaseline, level: float) -> dict[str, float]:
    if daily.empty:
        return {}
    w = window_intervals(daily, level=level).iloc[-1]
    out = {k: float(v) for k, v in w.items()}
    lo, hi = newcombe_difference(w["rate_30d"] * w["trials_30d"], w["trials_30d"], baseline.successes,
                                 baseline.n_trials, level)
    out.update(diff_30d=float(w["rate_30d"] - baseline.p0), diff_30d_low=lo, diff_30d_high=hi)
    return out


def _normal_alarm(daily: pd.DataFrame, what: str, mean: float, sd: float, arl0: float,
                  days: list[str]) -> str | None:
    """First alarm day of a two-sided normal CUSUM on the daily mean of ``what`` (None if none or unknown)."""
    col, count = f"{what}_mean", f"{what}_n"
    if col not in daily or not (np.isfinite(mean) and np.isfinite(sd) and sd > 0):
        return None
    known = daily[count].to_numpy(float) > 0
    z = (daily[col].to_numpy(float) - mean) / (sd / np.sqrt(np.maximum(daily[count].to_numpy(float), 1)))
    _, _, alarm = drift.normal_cusum(np.where(known, z, 0.0), drift.normal_threshold(2 * arl0))
    return days[alarm] if alarm is not None else None
