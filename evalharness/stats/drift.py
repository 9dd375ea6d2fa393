"""CUSUM charts for a daily task panel and their average run length (ARL).

- Binomial CUSUM (Page 1954, "Continuous inspection schemes", Biometrika 41) for a drop from
  p0 to p1: a = ln[p0(1-p1) / (p1(1-p0))], reference R = n ln((1-p1)/(1-p0)) / a per day of n
  trials, C_t = max(0, C_{t-1} + R - y_t), alarm when C_t >= h. The path is computed without a
  loop: C_t = S_t - min(0, min_{s<=t} S_s) with S the cumulative sum of R - y.
  Change-day estimate: the day after the last day with C = 0 before the alarm.
- ARL by Markov chain (Brook & Evans 1972, Biometrika 59): states 0, step, ..., h - step on a
  lattice (R rounded to ``step``), Q[i, j] = P(next state j | i) from the daily count pmf,
  ARL = [(I - Q)^{-1} 1]_0; the run-length distribution is P(L > t) = [Q^t 1]_0. The pmf is
  Binomial(n, p) for freshly sampled tasks or Poisson-binomial (a convolution of per-trial
  Bernoulli pmfs) for the same fixed panel every day.
- Threshold h: the smallest lattice value with ARL0 >= target (default 365 * M days for M streams,
  about one false alarm a year across all streams).
- Normal-scale two-sided CUSUM for cost and tokens (Page 1954; k = 0.5 sd), h from Siegmund's
  ARL approximation ARL0 = (e^{2kb} - 2kb - 1) / (2k^2), b = h + 1.166 (Siegmund 1985, p. 27).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats

STEP = 0.5


def cusum_reference(p0: float, p1: float, n: float = 1.0) -> float:
    """Reference value R of the Bernoulli CUSUM for a drop p0 -> p1 (per ``n`` trials)."""
    if not 0 < p1 < p0 < 1:
        raise ValueError(f"need 0 < p1 < p0 < 1 for a downward CUSUM, got p0={p0}, p1={p1}")
    a = np.log(p0 * (1 - p1) / (p1 * (1 - p0)))
    return float(n * np.log((1 - p1) / (1 - p0)) / a)


def cusum_path(increments) -> np.ndarray:
    """Page's C_t = max(0, C_{t-1} + x_t), C_0 = 0, along the last axis (vectorized)."""
    s = np.cumsum(np.asarray(increments, dtype=float), axis=-1)
    return s - np.minimum(np.minimum.accumulate(s, axis=-1), 0.0)


def first_alarm(path: np.ndarray, h: float) -> np.ndarray | int | None:
    """Index of the first C_t >= h along the last axis (-1 / None when none)."""
    hit = np.asarray(path) >= h - 1e-9
    idx = np.where(hit.any(axis=-1), hit.argmax(axis=-1), -1)
    if idx.ndim == 0:
        return None if idx < 0 else int(idx)
    return idx


def change_point(path: np.ndarray, alarm: int) -> int:
    """Estimated first day of the change: the day after the last C = 0 at or before the alarm."""
    zeros = np.flatnonzero(np.asarray(path[: alarm + 1]) <= 1e-12)
    return int(zeros[-1] + 1) if zeros.size else 0


def binomial_pmf(n: int, p: float) -> np.ndarray:
    """pmf of the daily success count for n freshly sampled Bernoulli(p) trials."""
    return stats.binom.pmf(np.arange(n + 1), n, p)


def poisson_binomial_pmf(rates) -> np.ndarray:
    """pmf of a sum of independent Bernoulli(rate_i) trials (convolution of their pmfs)."""
    pmf = np.ones(1)
    for r in np.asarray(rates, dtype=float):
        pmf = np.convolve(pmf, [1.0 - r, r])
    return pmf


def _transition(h: float, pmf: np.ndarray, reference: float, step: float) -> np.ndarray:
    """Brook-Evans sub-stochastic matrix Q over the non-alarm states 0, step, ..., h - step."""
    r = round(reference / step) * step
    states = np.arange(0.0, h - 1e-9, step)
    nxt = np.maximum(0.0, states[:, None] + r - np.arange(pmf.size)[None, :])
    inside = nxt < h - 1e-9
    rows = np.broadcast_to(np.arange(states.size)[:, None], nxt.shape)[inside]
    cols = np.rint(nxt[inside] / step).astype(int)
    q = np.zeros((states.size, states.size))
    np.add.at(q, (rows, cols), np.broadcast_to(pmf, nxt.shape)[inside])
    return q


def cusum_arl(h: float, pmf, reference: float, step: float = STEP) -> float:
    """ARL (days until C >= h, from C = 0) of the downward CUSUM by the Brook-Evans Markov chain."""
    if h <= step / 2:
        return 1.0
    q = _transition(h, np.asarray(pmf, dtype=float), reference, step)
    return float(np.linalg.solve(np.eye(len(q)) - q, np.ones(len(q)))[0])


def run_length_cdf(h: float, pmf, reference: float, days: int, step: float = STEP) -> np.ndarray:
    """P(alarm on or before day t), t = 1..days, from the same Markov chain (e_0 Q^t 1 survives)."""
    q = _transition(h, np.asarray(pmf, dtype=float), reference, step)
    state = np.zeros(len(q))
    state[0] = 1.0
    alive = np.empty(days)
    for t in range(days):
        state = state @ q
        alive[t] = state.sum()
    return 1.0 - alive


def cusum_threshold(pmf, reference: float, arl0: float, step: float = STEP,
                    h_max: float | None = None) -> tuple[float, float]:
    """Smallest h on the lattice with in-control ARL >= ``arl0``; returns (h, ARL0 at h)."""
    h_max = h_max if h_max is not None else 40 * max(reference, 1.0)
    h = step
    while h <= h_max:
        arl = cusum_arl(h, pmf, reference, step)
        if arl >= arl0:
            return h, arl
        h += step
    raise ValueError(f"no threshold up to {h_max} reaches ARL0 {arl0:g}; lower the target or the step")


def siegmund_arl(h: float, k: float, shift: float = 0.0) -> float:
    """Siegmund's approximation of the ARL of a one-sided normal CUSUM (standardized, drift ``shift``)."""
    delta = shift - k
    b = h + 1.166
    if abs(delta) < 1e-12:
        return b**2
    return float((np.exp(-2 * delta * b) + 2 * delta * b - 1) / (2 * delta**2))


def normal_threshold(arl0: float, k: float = 0.5) -> float:
    """h of a one-sided standardized normal CUSUM with in-control ARL ``arl0`` (Siegmund)."""
    return float(optimize.brentq(lambda h: siegmund_arl(h, k) - arl0, 1e-6, 100.0))


def normal_cusum(z, h: float, k: float = 0.5) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Two-sided tabular CUSUM of standardized daily values z: (upper path, lower path, first alarm)."""
    z = np.asarray(z, dtype=float)
    upper, lower = cusum_path(z - k), cusum_path(-z - k)
    alarms = [a for a in (first_alarm(upper, h), first_alarm(lower, h)) if a is not None]
    return upper, lower, (min(alarms) if alarms else None)
