"""Drift monitoring of one stream (a configuration on a task sample, run daily): ``detect_drift``.

Steps (docs/statistics.md, "Drift"): freeze a baseline (>= 20 days and >= 1000 trials after a
version pin, with per-task counts) and calibrate its one-sided binomial CUSUM (Page 1954) to the
baseline's own uncertainty (stats/baseline.py: mean over posterior draws of 365 / ARL0 by the
Brook-Evans chain within the configured false alarms per year); alarm when the CUSUM reaches the
threshold, restarting after each alarm; report an always-valid p-value that counts the baseline's
error (two-sample mixture SPRT, stats/sequential.py); describe (never alarm on) 1/7/30-day Wilson
intervals and the Newcombe interval of the 30-day rate minus the baseline; watch mean cost and
tokens per trial with a two-sided normal CUSUM. After an alarm: report, re-baseline.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field, fields

import numpy as np
import pandas as pd

from evalharness.stats import drift, sequential
from evalharness.stats.baseline import KINDS, calibrate, disperse, mean_pmf
from evalharness.stats._frame import per_task, require_columns, usable_trials
from evalharness.stats.intervals import newcombe_difference, wilson_interval

MIN_DAYS, MIN_TRIALS = 20, 1000


class ShortBaselineError(ValueError):
    """A baseline below MIN_DAYS days or MIN_TRIALS trials, frozen without ``allow_short``."""


def short_baseline_problem(n_days: int, n_trials: int) -> str | None:
    """Why a baseline of this size is below the documented minimum, or None when it is not."""
    if n_days >= MIN_DAYS and n_trials >= MIN_TRIALS:
        return None
    return (f"a baseline of {n_days} days and {n_trials} trials is below the minimum of {MIN_DAYS} days and "
            f"{MIN_TRIALS:,} trials; below it the false alarms run above the promised rate (issue 27 simulated 10 "
            f"days x 20 trials: 1.17 a year where 0.95 was promised, 14% of streams above 3)")


@dataclass(frozen=True)
class DriftBaseline:
    """Frozen in-control reference of a stream, with its CUSUM calibrated to its own uncertainty."""

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
    task_trials: dict[str, int] = field(default_factory=dict)
    pmf: str = "panel"
    delta: float = 0.10
    target_false_alarms_per_year: float = 1.0
    threshold: float = float("nan")
    reference: float = float("nan")
    """R per day of ``trials_per_day`` trials, on the lattice."""
    p1: float = float("nan")
    false_alarms_per_year: float = float("nan")
    """Posterior mean of 365 / ARL0 at the threshold (stats/baseline.py)."""
    plugin_false_alarms_per_year: float = float("nan")
    delay_days: float = float("nan")
    """Median days from a ``delta`` drop to the alarm; ``delay_days_95`` its 95th percentile."""
    delay_days_95: float = float("nan")
    method: str = ""
    day_sd: float = 0.0
    """Day-level sd of the daily rate beyond the trials' own noise (long-run, from the baseline's days) that the
    threshold is calibrated with (stats/baseline.py ``day_variance``); 0 when the days show none."""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "DriftBaseline":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


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


def freeze_baseline(df: pd.DataFrame, *, delta: float = 0.10, false_alarms_per_year: float = 1.0,
                    pmf: str = "panel", draws: int = 200, seed: int = 0,
                    infra_as_failure: bool = False, allow_short: bool = False) -> DriftBaseline:
    """Baseline from the trials of the in-control period, its CUSUM threshold calibrated to its uncertainty.

    ``pmf``: "panel" (the same tasks every day) or "binomial" (tasks drawn afresh). A baseline where every
    task was always or never solved is degenerate but legal: the calibration keeps a finite threshold.
    Below MIN_DAYS days or MIN_TRIALS trials the promised false-alarm rate does not hold: ShortBaselineError,
    unless ``allow_short`` (then the baseline's ``note`` says so).
    """
    if pmf not in KINDS:
        raise ValueError(f"unknown pmf {pmf!r}; choose one of {', '.join(KINDS)}")
    trials, _ = usable_trials(df, infra_as_failure=infra_as_failure)
    if trials.empty:
        raise ValueError("a baseline needs at least one trial that is not an infrastructure failure")
    daily = daily_counts(df, infra_as_failure=infra_as_failure)
    ts = per_task(trials)
    cost = trials["cost_usd"].astype(float) if "cost_usd" in trials else pd.Series(dtype=float)
    tokens = trials["total_tokens"].astype(float) if "total_tokens" in trials else pd.Series(dtype=float)
    n_days, n_trials = len(daily), len(trials)
    n = int(round(daily["trials"].median()))
    short = short_baseline_problem(n_days, n_trials)
    if short and not allow_short:
        raise ShortBaselineError(f"{short}: collect more days, or accept it explicitly (allow_short=True; "
                                 "drift.yaml: short_baseline: true)")
    notes = [] if not short else [
        f"short baseline ({n_days} days, {n_trials} trials; want >= {MIN_DAYS} days and >= {MIN_TRIALS} trials), "
        "accepted by override: false alarms may run above the promised rate"]
    if ts["mean"].isin([0.0, 1.0]).all():
        notes.append("degenerate baseline: every task was always or never solved")
    cal = calibrate(pmf, ts["k"].to_numpy(float), ts["n"].to_numpy(float), n, delta=delta,
                    false_alarms_per_year=false_alarms_per_year, draws=draws, seed=seed,
                    daily=(daily["resolved"].to_numpy(float), daily["trials"].to_numpy(float)))
    return DriftBaseline(
        p0=float(trials["_y"].mean()), task_rates=dict(zip(ts["task_id"].astype(str), ts["mean"].astype(float))),
        task_trials=dict(zip(ts["task_id"].astype(str), ts["n"].astype(int))),
        trials_per_day=n, n_days=n_days, n_trials=n_trials,
        successes=int(trials["_y"].sum()), cost_mean=float(cost.mean()), cost_sd=float(cost.std()),
        tokens_mean=float(tokens.mean()), tokens_sd=float(tokens.std()), note="; ".join(notes), pmf=pmf,
        delta=delta, target_false_alarms_per_year=false_alarms_per_year, threshold=cal.threshold,
        reference=cal.reference, p1=cal.p1, false_alarms_per_year=cal.false_alarms_per_year,
        plugin_false_alarms_per_year=cal.plugin_false_alarms_per_year, delay_days=cal.delay_days,
        delay_days_95=cal.delay_days_95, day_sd=cal.day_sd,
        method=f"binomial CUSUM, threshold by predictive calibration over {cal.draws} posterior draws "
               f"({'beta-binomial panel' if pmf == 'panel' else 'Jeffreys binomial'}, day-level variance "
               f"{'sd %.2f points' % (100 * cal.day_sd) if cal.day_sd > 0 else 'none seen'}); two-sample mixture SPRT",
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
    """Verdict of one stream. Days are ISO dates; ``statistic`` is the CUSUM path (restarted after each alarm)."""

    alarm: bool
    alarm_day: str | None
    change_day: str | None
    p0: float
    """The in-control rate ``arl0_days`` and ``arl1_days`` are computed at: the mean of the posterior-mean rates
    (Jeffreys (S + 1/2)/(N + 1) for fresh tasks, the shrunken per-task rates for a panel)."""
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
    alarm_days: list[str] = field(default_factory=list)
    delay_days: float = float("nan")
    delay_days_95: float = float("nan")
    p_values: list[float] = field(default_factory=list)
    p0_observed: float = float("nan")
    """The baseline's raw share of resolved trials S / N (the baseline's ``p0``)."""

    def to_dict(self) -> dict:
        return asdict(self)


def detect_drift(daily: pd.DataFrame, baseline: DriftBaseline, *, h: float | None = None, alpha: float = 0.05,
                 level: float = 0.95, step: float = drift.STEP) -> DriftReport:
    """Run the drift checks on a daily series (``daily_counts``) against a frozen, calibrated baseline.

    Alarms when the CUSUM reaches the baseline's threshold (``h`` overrides it); after an alarm the
    statistic restarts from 0, so a change that persists alarms again. ``alarm_day`` is the first alarm.
    """
    baseline = _calibrated(baseline)
    n = baseline.trials_per_day
    h = baseline.threshold if h is None else h
    r_trial = baseline.reference / n
    counts = _task_counts(baseline)
    pmf0 = mean_pmf(baseline.pmf, *counts, n)
    p0_used = float(np.arange(n + 1) @ pmf0 / n)
    shift = (baseline.successes + 0.5) / (baseline.n_trials + 1.0) - baseline.p1  # as calibrate() shifts
    day_var = (n * baseline.day_sd) ** 2
    arl0 = drift.cusum_arl(h, disperse(pmf0, day_var)[0], baseline.reference, step)
    arl1 = drift.cusum_arl(h, disperse(mean_pmf(baseline.pmf, *counts, n, shift=shift), day_var)[0],
                           baseline.reference, step)
    r_day = np.round(r_trial * daily["trials"].to_numpy(float) / step) * step
    path, alarms = restarted_path(r_day - daily["resolved"].to_numpy(float), h)
    days = [d.date().isoformat() for d in pd.DatetimeIndex(daily.index)]
    alarm = alarms[0] if alarms else None
    change = drift.change_point(path, alarm) if alarm is not None else None
    p_av, lam = sequential.baseline_msprt(daily["resolved"], daily["trials"], baseline.successes,
                                          baseline.n_trials, tau=baseline.delta)
    arl_target = 365.0 / baseline.target_false_alarms_per_year
    return DriftReport(
        alarm=alarm is not None, alarm_day=days[alarm] if alarm is not None else None,
        change_day=days[change] if change is not None else None, p0=p0_used, p1=baseline.p1,
        reference=baseline.reference, threshold=float(h), arl0_days=arl0, arl1_days=arl1,
        false_alarms_per_year=baseline.false_alarms_per_year if h == baseline.threshold else 365.0 / arl0,
        days=days, statistic=path.tolist(),
        p_always_valid=float(p_av[-1]) if len(p_av) else 1.0,
        e_value=float(lam[-1]) if len(lam) else 1.0, e_alarm=bool(len(p_av) and p_av[-1] <= alpha),
        windows=_last_windows(daily, baseline, level),
        cost_alarm_day=_normal_alarm(daily, "cost", baseline.cost_mean, baseline.cost_sd, arl_target, days),
        tokens_alarm_day=_normal_alarm(daily, "tokens", baseline.tokens_mean, baseline.tokens_sd, arl_target, days),
        note=baseline.note, alarm_days=[days[a] for a in alarms], delay_days=baseline.delay_days,
        delay_days_95=baseline.delay_days_95, p_values=[float(v) for v in p_av], p0_observed=baseline.p0,
    )


def restarted_path(increments, h: float) -> tuple[np.ndarray, list[int]]:
    """Page's CUSUM that restarts from 0 the day after each alarm: (path, alarm indices)."""
    path, alarms, c = np.zeros(len(increments)), [], 0.0
    for i, x in enumerate(np.asarray(increments, dtype=float)):
        c = max(0.0, c + x)
        path[i] = c
        if c >= h - 1e-9:
            alarms.append(i)
            c = 0.0
    return path, alarms


def _task_counts(baseline: DriftBaseline) -> tuple[np.ndarray, np.ndarray]:
    """Per-task successes and trials of the baseline (panel), or its totals (binomial)."""
    if baseline.pmf == "binomial" or not baseline.task_trials:
        return np.array([float(baseline.successes)]), np.array([float(baseline.n_trials)])
    ids = list(baseline.task_trials)
    m = np.array([baseline.task_trials[i] for i in ids], dtype=float)
    return np.rint(np.array([baseline.task_rates[i] for i in ids]) * m), m


def _calibrated(baseline: DriftBaseline) -> DriftBaseline:
    """A baseline stored without a threshold (an older store) is calibrated now, with its own settings."""
    if np.isfinite(baseline.threshold):
        return baseline
    kind = baseline.pmf if baseline.task_trials else "binomial"
    s, m = _task_counts(dataclasses.replace(baseline, pmf=kind))
    cal = calibrate(kind, s, m, baseline.trials_per_day, delta=baseline.delta,
                    false_alarms_per_year=baseline.target_false_alarms_per_year, day_sd=baseline.day_sd)
    return dataclasses.replace(baseline, pmf=kind, threshold=cal.threshold, reference=cal.reference, p1=cal.p1,
                               false_alarms_per_year=cal.false_alarms_per_year, delay_days=cal.delay_days,
                               delay_days_95=cal.delay_days_95)


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
