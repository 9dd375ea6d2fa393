"""Operating characteristics of a drift stream by simulation, the baseline estimated as in real use.

Each simulated stream freezes its own baseline (``baseline_days`` x ``n`` trials drawn from the true
rates), calibrates its threshold (stats/baseline.py), then runs ``days`` in-control days (false alarms
per stream-year, the CUSUM restarted after each alarm; always-valid p <= alpha in the year) or
``delay_horizon`` days after a drop of every rate by ``delta`` (days to the first alarm). The same
runs with a threshold computed as if the baseline estimate were exact ("plug-in") show what the
calibration buys. ``kind="binomial"``: every day's trials are fresh tasks at the one rate p;
``kind="panel"``: the same tasks (``rates``) every day, one trial each.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from evalharness.stats.baseline import calibrate
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
             alpha: float = 0.05, delay_horizon: int = 120, draws: int = 200, seed: int = 0) -> StreamSimulation:
    """Simulate ``streams`` independent streams (see the module docstring)."""
    rng = np.random.default_rng(seed)
    if kind == "panel":
        rates = np.asarray(rates, dtype=float)
        n = rates.size
        truth = rates
    else:
        truth = np.full(n, p)
    hs, rs, hp, rp, promised = (np.empty(streams) for _ in range(5))
    cache: dict = {}
    base_s, base_n = np.empty(streams), float(baseline_days * n)
    for i in range(streams):
        if kind == "binomial":
            s, m = np.array([rng.binomial(baseline_days * n, p)], float), np.array([baseline_days * n], float)
            key = int(s[0])
        else:
            s, m = rng.binomial(baseline_days, rates).astype(float), np.full(n, float(baseline_days))
            key = None
        if key is not None and key in cache:
            cal, plug = cache[key]
        else:
            cal = calibrate(kind, s, m, n, delta=delta, false_alarms_per_year=false_alarms_per_year, draws=draws,
                            seed=i)
            plug = _plugin(kind, s, m, n, delta, false_alarms_per_year)
            if key is not None:
                cache[key] = (cal, plug)
        hs[i], rs[i], promised[i] = cal.threshold, cal.reference, cal.false_alarms_per_year
        hp[i], rp[i] = plug
        base_s[i] = s.sum()
    stable = _counts(rng, kind, truth, streams, days)
    alarms = alarms_with_restart(stable, rs, hs) * 365.0 / days
    plugin = alarms_with_restart(stable, rp, hp) * 365.0 / days
    trials = np.full(days, n)
    below = np.array([baseline_msprt(stable[i], trials, base_s[i], base_n, tau=delta)[0][-1] <= alpha
                      for i in range(streams)])
    dropped = _counts(rng, kind, np.clip(truth - delta, 0.0, 1.0), streams, delay_horizon)
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
    )


def _counts(rng: np.random.Generator, kind: str, truth: np.ndarray, streams: int, days: int) -> np.ndarray:
    """Daily success counts, streams x days: binomial at the mean rate, or the panel's Bernoulli trials."""
    if kind == "binomial":
        return rng.binomial(truth.size, truth.mean(), size=(streams, days)).astype(float)
    out = np.empty((streams, days))
    for start in range(0, streams, 200):  # bounded memory: 200 streams x days x tasks at a time
        stop = min(streams, start + 200)
        out[start:stop] = (rng.random((stop - start, days, truth.size)) < truth).sum(-1)
    return out
