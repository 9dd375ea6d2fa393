"""Operating characteristics of a drift stream by simulation, the baseline estimated as in real use.

Each simulated stream freezes its own baseline (``baseline_days`` x ``n`` trials drawn from the true
rates), calibrates its threshold (stats/baseline.py), then runs ``days`` in-control days (false alarms
per stream-year, the CUSUM restarted after each alarm; always-valid p <= alpha in the year) or
``delay_horizon`` days after a drop of every rate by ``delta`` (days to the first alarm). The same
runs with a threshold computed as if the baseline estimate were exact ("plug-in") show what the
calibration buys. ``kind="binomial"``: every day's trials are fresh tasks at the one rate p;
``kind="panel"``: the same tasks (``rates``) every day, one trial each. ``day_sd``/``day_rho``: a day effect
shared by every trial of a day (logit AR(1)), in the baseline and the monitored days alike.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

from evalharness.stats.baseline import batched_arl, calibrate, day_variance, disperse, within_day_variance
from evalharness.stats.drift import STEP, binomial_pmf, cusum_reference, cusum_threshold, poisson_binomial_pmf
from evalharness.stats.sequential import baseline_msprt


@dataclass(frozen=True)
class StreamSimulation:
    kind: str
    streams: int
    days: int
    baseline_days: int
    trials_per_day: int
    p: float
    false_alarms_per_year: float
    false_alarms_se: float
    promised_false_alarms_per_year: float
    plugin_false_alarms_per_year: float
    plugin_false_alarms_se: float
    p_below_alpha: float
    p_below_alpha_se: float
    delay_median: float
    delay_mean: float
    plugin_delay_median: float
    above_promise: float = float("nan")
    """Share of streams whose own false-alarm rate, 365 / ARL0 of their threshold under the true daily pmf (Brook-
    Evans; with a day effect the pmf carries its long-run variance, an approximation), exceeds the configured
    rate: the promise is an average over baselines."""

    def to_dict(self) -> dict:
        return asdict(self)


def alarms_with_restart(counts: np.ndarray, reference: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Alarms per stream over the days of ``counts`` (streams x days), the CUSUM restarted after each alarm."""
    c = np.zeros(counts.shape[0])
    alarms = np.zeros(counts.shape[0])
    for t in range(counts.shape[1]):
        c = np.maximum(0.0, c + reference - counts[:, t])
        hit = c >= h - 1e-9
        alarms += hit
        c[hit] = 0.0
    return alarms


def first_alarm_day(counts: np.ndarray, reference: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Day (1-based) of each stream's first alarm, inf when none within the horizon."""
    c = np.zeros(counts.shape[0])
    first = np.full(counts.shape[0], np.inf)
    for t in range(counts.shape[1]):
        c = np.maximum(0.0, c + reference - counts[:, t])
        first[(c >= h - 1e-9) & ~np.isfinite(first)] = t + 1
    return first


def _plugin(kind: str, s: np.ndarray, m: np.ndarray, n: int, delta: float, rate: float) -> tuple[float, float]:
    """Threshold and reference computed as if the baseline's estimate were the truth (the uncalibrated rule)."""
    p0 = min(max(s.sum() / m.sum(), 1e-6), 1 - 1e-6)
    r = round(cusum_reference(p0, max(p0 - delta, p0 / 2), n) / STEP) * STEP
    pmf = binomial_pmf(n, p0) if kind == "binomial" else poisson_binomial_pmf(np.resize(s / m, n))
    return cusum_threshold(pmf, r, 365.0 / rate)[0], r


def simulate(kind: str = "binomial", *, streams: int = 2000, p: float = 0.58, rates=None, n: int = 50,
             baseline_days: int = 30, days: int = 365, delta: float = 0.10, false_alarms_per_year: float = 1.0,
             alpha: float = 0.05, delay_horizon: int = 120, draws: int = 200, seed: int = 0,
             day_sd: float = 0.0, day_rho: float = 0.0, day_variance: bool = True) -> StreamSimulation:
    """Simulate ``streams`` independent streams (see the module docstring).

    ``day_sd`` > 0 adds a day effect shared by every trial of a day: on the logit scale, a stationary AR(1)
    with standard deviation ``day_sd`` and lag-1 correlation ``day_rho`` (a provider's slow day moves every
    task a little), in the baseline and in the monitored days alike. ``day_variance=False`` calibrates as
    if days were independent given the rates (the rule before issue 27).
    """
    rng = np.random.default_rng(seed)
    truth = np.asarray(rates, dtype=float) if kind == "panel" else np.full(n, p)
    n = truth.size
    days_of = _DayEffect(day_sd, day_rho)
    hs, rs, hp, rp, promised = (np.empty(streams) for _ in range(5))
    base_s, base_n = np.empty(streams), float(baseline_days * n)
    cache: dict = {}
    for i in range(streams):
        daily = _counts(rng, kind, truth, 1, baseline_days, days_of, per_task=True)[0]  # days x tasks
        s, m = _baseline_counts(kind, daily)
        days_seen = (daily.sum(axis=1), np.full(baseline_days, float(n))) if day_variance else None
        key = _cache_key(kind, s, m, days_seen)
        if key not in cache:
            cache[key] = (calibrate(kind, s, m, n, delta=delta, false_alarms_per_year=false_alarms_per_year,
                                    draws=draws, seed=i, daily=days_seen), _plugin(kind, s, m, n, delta,
                                                                                   false_alarms_per_year))
        cal, (hp[i], rp[i]) = cache.pop(key) if key is None else cache[key]
        hs[i], rs[i], promised[i] = cal.threshold, cal.reference, cal.false_alarms_per_year
        base_s[i] = s.sum()
    own = 365.0 / np.array([batched_arl(h, days_of.true_pmf(truth), r)[0] for h, r in zip(hs, rs)])
    stable = _counts(rng, kind, truth, streams, days, days_of)
    alarms = alarms_with_restart(stable, rs, hs) * 365.0 / days
    plugin = alarms_with_restart(stable, rp, hp) * 365.0 / days
    trials = np.full(days, n)
    below = np.array([baseline_msprt(stable[i], trials, base_s[i], base_n, tau=delta)[0][-1] <= alpha
                      for i in range(streams)])
    dropped = _counts(rng, kind, np.clip(truth - delta, 0.0, 1.0), streams, delay_horizon, days_of)
    delay, plugin_delay = first_alarm_day(dropped, rs, hs), first_alarm_day(dropped, rp, hp)
    return StreamSimulation(
        kind=kind, streams=streams, days=days, baseline_days=baseline_days, trials_per_day=n,
        p=float(truth.mean()), false_alarms_per_year=float(alarms.mean()),
        false_alarms_se=float(alarms.std(ddof=1) / np.sqrt(streams)),
        promised_false_alarms_per_year=float(promised.mean()), plugin_false_alarms_per_year=float(plugin.mean()),
        plugin_false_alarms_se=float(plugin.std(ddof=1) / np.sqrt(streams)),
        p_below_alpha=float(below.mean()), p_below_alpha_se=float(np.sqrt(below.mean() * (1 - below.mean()) / streams)),
        delay_median=float(np.median(delay)), delay_mean=float(np.mean(np.minimum(delay, delay_horizon))),
        plugin_delay_median=float(np.median(plugin_delay)),
        above_promise=float(np.mean(own > false_alarms_per_year)),
    )


def _cache_key(kind: str, s: np.ndarray, m: np.ndarray, days_seen) -> tuple | None:
    """Fresh tasks: baselines with the same successes and no day-level variance calibrate alike. None: no reuse."""
    if kind != "binomial":
        return None
    if days_seen is not None and day_variance(*days_seen, within_day_variance(kind, s, m)) > 0:
        return None
    return int(s.sum()), int(m.sum())


def _baseline_counts(kind: str, daily: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-task successes and trials of a baseline (days x tasks), or its totals for fresh tasks."""
    if kind == "binomial":
        return np.array([daily.sum()], float), np.array([float(daily.size)])
    return daily.sum(axis=0).astype(float), np.full(daily.shape[1], float(daily.shape[0]))


@dataclass(frozen=True)
class _DayEffect:
    """A stationary logit AR(1) day effect (sd, lag-1 correlation); sd 0 is no day effect."""

    sd: float = 0.0
    rho: float = 0.0

    def true_pmf(self, truth: np.ndarray) -> np.ndarray:
        """The daily-count pmf of these rates, widened by the day effect's long-run variance (delta method)."""
        pmf = poisson_binomial_pmf(truth)
        slope = float(np.sum(truth * (1 - truth)))  # d count / d logit shift
        return disperse(pmf, (slope * self.sd) ** 2 * (1 + self.rho) / (1 - self.rho))[0]

    def draw(self, rng: np.random.Generator, streams: int, days: int) -> np.ndarray:
        u = np.zeros((streams, days))
        if self.sd <= 0:
            return u
        u[:, 0] = rng.normal(0.0, self.sd, streams)
        innovation = self.sd * np.sqrt(1.0 - self.rho**2)
        for t in range(1, days):
            u[:, t] = self.rho * u[:, t - 1] + rng.normal(0.0, innovation, streams)
        return u


def _counts(rng: np.random.Generator, kind: str, truth: np.ndarray, streams: int, days: int,
            day: _DayEffect = _DayEffect(), per_task: bool = False) -> np.ndarray:
    """Daily success counts, streams x days: binomial at the mean rate, or the panel's Bernoulli trials, each day's
    rates moved by the day effect on the logit scale. ``per_task``: streams x days x tasks 0/1 outcomes instead."""
    u = day.draw(rng, streams, days)
    if kind == "binomial" and not per_task:
        return rng.binomial(truth.size, _shifted(np.array([truth.mean()]), u)[..., 0]).astype(float)
    if kind == "binomial":
        truth = np.full(truth.size, truth.mean())
    out = np.empty((streams, days, truth.size) if per_task else (streams, days))
    for start in range(0, streams, 200):  # bounded memory: 200 streams x days x tasks at a time
        stop = min(streams, start + 200)
        y = rng.random((stop - start, days, truth.size)) < _shifted(truth, u[start:stop])
        out[start:stop] = y if per_task else y.sum(-1)
    return out


def _shifted(rates: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Rates (tasks) moved by day effects u (streams x days) on the logit scale: streams x days x tasks."""
    if not np.any(u):
        return np.broadcast_to(rates, u.shape + rates.shape)
    with np.errstate(divide="ignore"):
        return special.expit(special.logit(rates)[None, None, :] + u[..., None])
