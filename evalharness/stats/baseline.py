"""A drift baseline's uncertainty, and a CUSUM threshold calibrated to it (predictive calibration).

A baseline of 30 days x 50 trials estimates the in-control rate to about +-2.5 points (95%). A CUSUM
threshold computed as if that estimate were the truth gives too many false alarms whenever the
truth lies below the estimate, and the loss is not symmetric: it is 1.3 alarms a year on average
where 1 was asked. So the threshold is chosen for the rates the baseline is compatible with:

- **Posterior of the in-control rates.** Fresh tasks every day (``kind="binomial"``): the stream rate
  p ~ Beta(S + 1/2, N - S + 1/2) (Jeffreys). A fixed panel (``kind="panel"``): each task's rate
  r_i ~ Beta(a + s_i, b + m_i - s_i), with (a, b) the beta-binomial maximum-likelihood fit over the
  panel's tasks (empirical Bayes; a, b >= 1/2). Shrinking per-task rates matters: raw rates of 30
  trials each spread more than the true ones, understate the daily count's variance and so set the
  threshold too low. A degenerate baseline (every task always or never solved) gets the floor
  a = b = 1/2 and a finite threshold, never a singular matrix.
- **Predictive calibration.** For D posterior draws, the in-control ARL of the chart (reference R
  fixed from the point estimate) is computed by the Brook-Evans chain; the threshold h is the
  smallest lattice value whose posterior mean false-alarm rate, mean over draws of 365 / ARL0(h),
  is at most the target. Averaged over baselines, that is the rate a user gets (tests: simulation).
- **Promised delay**: the median and 95th percentile of the run length after a ``delta`` drop of
  every rate, at the posterior-mean rates.
- **Day-level variance** (``day_variance``): a day effect shared by every trial of a day (a provider's
  slow day) makes days vary more than the rates say. The baseline's days give its long-run variance
  beyond the trials' own noise (Bartlett weights over DAY_LAGS lags, floored at 0); every daily-count
  pmf above is widened by it (``disperse``). The promise stays an average over baselines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from evalharness.stats.drift import STEP, cusum_reference, run_length_cdf

KINDS = ("panel", "binomial")
FLOOR = 0.5  # least beta-binomial hyperparameter (Jeffreys' 1/2): a degenerate panel keeps some spread
MAX_PRECISION = 1e5  # a + b at most: a panel of equal tasks


@dataclass(frozen=True)
class Calibration:
    threshold: float
    reference: float
    """R per day of ``n`` trials on the lattice."""
    p0: float
    p1: float
    false_alarms_per_year: float
    """Posterior mean of 365 / ARL0 at ``threshold``."""
    plugin_false_alarms_per_year: float
    """The same at the point estimate (what a calibration ignoring the baseline's error would promise)."""
    delay_days: float
    """Median days from a ``delta`` drop to the alarm."""
    delay_days_95: float
    hyper: tuple[float, float] | None
    draws: int
    day_sd: float = 0.0
    """Square root of the day-level long-run variance of the daily rate calibrated with (0: none, or not asked)."""


def beta_binomial_fit(successes, trials) -> tuple[float, float]:
    """(mean, precision) of the beta-binomial over tasks: the mean is the pooled rate (Jeffreys), the precision
    a + b its maximum-likelihood value given that mean, kept where a, b >= FLOOR and a + b <= MAX_PRECISION."""
    s, m = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    mu = (s.sum() + 0.5) / (m.sum() + 1.0)
    low = np.log(FLOOR / min(mu, 1 - mu))

    def nll(log_phi):
        a, b = mu * np.exp(log_phi), (1 - mu) * np.exp(log_phi)
        return -np.sum(special.betaln(a + s, b + m - s) - special.betaln(a, b))

    fit = optimize.minimize_scalar(nll, bounds=(low, np.log(MAX_PRECISION)), method="bounded")
    return float(mu), float(np.exp(fit.x))


def _mean_draws(s: np.ndarray, m: np.ndarray, mu: float, phi: float, draws: int,
                rng: np.random.Generator) -> np.ndarray:
    """Draws of the panel's mean rate: its sampling spread, inflated by the design effect of m trials per task."""
    deff = 1.0 + (m.mean() - 1.0) / (phi + 1.0)
    n_eff = m.sum() / deff
    return rng.beta(mu * n_eff + 0.5, (1 - mu) * n_eff + 0.5, size=draws)


def posterior_pmfs(kind: str, successes, trials, n: int, draws: int, rng: np.random.Generator,
                   shift: float = 0.0, hyper: tuple[float, float] | None = None) -> np.ndarray:
    """(draws, n + 1) daily-count pmfs for ``n`` trials a day under posterior draws of the rates, every rate
    lowered by ``shift`` (clipped at 0). ``successes``/``trials``: per task for a panel, totals for binomial."""
    if kind == "binomial":
        s, m = float(np.sum(successes)), float(np.sum(trials))
        p = np.clip(rng.beta(s + 0.5, m - s + 0.5, size=draws) - shift, 0.0, 1.0)
        return stats.binom.pmf(np.arange(n + 1)[None, :], n, p[:, None])
    if kind != "panel":
        raise ValueError(f"unknown pmf kind {kind!r}; choose one of {', '.join(KINDS)}")
    s, m = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    mu, phi = hyper or beta_binomial_fit(s, m)
    means = _mean_draws(s, m, mu, phi, draws, rng)[:, None]
    rates = rng.beta(means * phi + s, (1 - means) * phi + m - s)
    rates = np.clip(rates - shift, 0.0, 1.0)
    return poisson_binomial_rows(np.resize(rates.T, (n, draws)).T)  # the panel repeated to n trials a day


def mean_pmf(kind: str, successes, trials, n: int, shift: float = 0.0,
             hyper: tuple[float, float] | None = None) -> np.ndarray:
    """The daily-count pmf at the posterior-mean rates (each lowered by ``shift``)."""
    if kind == "binomial":
        s, m = float(np.sum(successes)), float(np.sum(trials))
        return stats.binom.pmf(np.arange(n + 1), n, max(0.0, (s + 0.5) / (m + 1.0) - shift))
    s, m = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    mu, phi = hyper or beta_binomial_fit(s, m)
    rates = np.clip((mu * phi + s) / (phi + m) - shift, 0.0, 1.0)
    return poisson_binomial_rows(np.resize(rates, n)[None, :])[0]


def poisson_binomial_rows(rates: np.ndarray) -> np.ndarray:
    """Row-wise Poisson-binomial pmfs of a (rows, n) array of Bernoulli rates (dynamic programming)."""
    rows, n = rates.shape
    pmf = np.zeros((rows, n + 1))
    pmf[:, 0] = 1.0
    for j in range(n):
        r = rates[:, j : j + 1]
        pmf[:, 1 : j + 2] = pmf[:, 1 : j + 2] * (1 - r) + pmf[:, : j + 1] * r
        pmf[:, :1] *= 1 - r
    return pmf


def _assignment(h: float, size: int, reference: float, step: float) -> tuple[np.ndarray, np.ndarray, int]:
    """For each (state, count) the next state's flat index in Q, or -1 when it alarms."""
    states = np.arange(0.0, h - 1e-9, step)
    nxt = np.maximum(0.0, states[:, None] + reference - np.arange(size)[None, :])
    col = np.where(nxt < h - 1e-9, np.rint(nxt / step).astype(int), -1)
    flat = np.where(col >= 0, np.arange(states.size)[:, None] * states.size + col, -1)
    return flat, states, states.size


def batched_arl(h: float, pmfs: np.ndarray, reference: float, step: float = STEP) -> np.ndarray:
    """In-control ARL (from C = 0) of the downward CUSUM for each row of ``pmfs`` (Brook-Evans chain)."""
    pmfs = np.atleast_2d(np.asarray(pmfs, dtype=float))
    if h <= step / 2:
        return np.ones(len(pmfs))
    r = round(reference / step) * step
    flat, _, k = _assignment(h, pmfs.shape[1], r, step)
    keep = flat >= 0
    q = np.zeros((len(pmfs), k * k))
    counts = np.broadcast_to(np.arange(pmfs.shape[1])[None, :], flat.shape)[keep]
    np.add.at(q, (slice(None), flat[keep]), pmfs[:, counts])
    q = q.reshape(len(pmfs), k, k)
    eye = np.eye(k)[None]
    with np.errstate(all="ignore"):
        try:
            arl = np.linalg.solve(eye - q, np.ones((len(pmfs), k, 1)))[:, 0, 0]
        except np.linalg.LinAlgError:  # a chain that never alarms (a draw with no spread): ARL infinite
            arl = np.array([_one_arl(eye[0] - qi) for qi in q])
    return np.where(np.isfinite(arl) & (arl > 0), arl, np.inf)


def _one_arl(m: np.ndarray) -> float:
    try:
        return float(np.linalg.solve(m, np.ones(len(m)))[0])
    except np.linalg.LinAlgError:
        return float("inf")


DAY_LAGS = 2  # Bartlett-weighted autocovariances in the day-level long-run variance


def within_day_variance(kind: str, successes, trials) -> float:
    """Bernoulli variance of one trial around its task's rate, unbiased from the baseline: mean of r(1-r) m/(m-1)."""
    s, m = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    if kind == "binomial":
        s, m = np.array([s.sum()]), np.array([m.sum()])
    r = s / np.maximum(m, 1.0)
    return float(np.sum(m * r * (1 - r) * m / np.maximum(m - 1.0, 1.0)) / m.sum())


def day_variance(day_successes, day_trials, within: float, lags: int = DAY_LAGS) -> float:
    """Long-run variance of the daily rate beyond the trials' own noise (rate units squared; may be negative).

    e_d = y_d / n_d - pooled rate; LRV = gamma_0 + 2 sum_{k <= lags} (1 - k/(lags + 1)) gamma_k (Bartlett
    weights, Newey & West 1987), minus the binomial part mean(within / n_d). A shared day effect (a provider's
    slow day) shows up here, and a persistent one (autocorrelated days) counts more, as it does in a CUSUM.
    """
    y, m = np.asarray(day_successes, dtype=float), np.asarray(day_trials, dtype=float)
    keep = m > 0
    y, m = y[keep], m[keep]
    if y.size < 3:
        return 0.0
    e = y / m - y.sum() / m.sum()
    t = e.size
    lrv = float(e @ e) / (t - 1)
    for k in range(1, min(lags, t - 1) + 1):
        lrv += 2.0 * (1.0 - k / (lags + 1.0)) * float(e[k:] @ e[:-k]) / (t - 1)
    return lrv - float(np.mean(within / m))


def disperse(pmfs: np.ndarray, variance: float) -> np.ndarray:
    """Daily-count pmfs (rows over 0..n) with a shared day effect of ``variance`` (counts squared) added: each row
    convolved with a discretized normal, the mass beyond 0 and n kept at the ends."""
    pmfs = np.atleast_2d(pmfs)
    if variance <= 1e-12:
        return pmfs
    sd = np.sqrt(variance)
    k = np.arange(-int(np.ceil(6 * sd)) - 1, int(np.ceil(6 * sd)) + 2)
    kernel = np.diff(stats.norm.cdf((np.r_[k, k[-1] + 1] - 0.5) / sd))
    wide = np.apply_along_axis(lambda row: np.convolve(row, kernel), 1, pmfs)
    size, lead = pmfs.shape[1], -k[0]
    out = wide[:, lead:lead + size].copy()
    out[:, 0] += wide[:, :lead].sum(axis=1)
    out[:, -1] += wide[:, lead + size:].sum(axis=1)
    return out / out.sum(axis=1, keepdims=True)


def calibrate(kind: str, successes, trials, n: int, *, delta: float = 0.10, false_alarms_per_year: float = 1.0,
              draws: int = 200, seed: int = 0, step: float = STEP, h_max: float | None = None,
              daily=None, day_sd: float | None = None) -> Calibration:
    """The smallest threshold whose posterior mean false-alarm rate is within ``false_alarms_per_year``.

    ``daily``: (successes, trials) per baseline day; the day-level variance they show beyond the trials' own
    noise (``day_variance``) is added to every daily-count pmf (``disperse``). None: days independent given
    the rates. ``day_sd``: that day-level sd given instead of estimated (a stored baseline recalibrated)."""
    if false_alarms_per_year <= 0:
        raise ValueError(f"false_alarms_per_year must be > 0, got {false_alarms_per_year}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    s_tot, m_tot = float(np.sum(successes)), float(np.sum(trials))
    if m_tot <= 0 or n <= 0:
        raise ValueError("a baseline needs at least one trial")
    hyper = beta_binomial_fit(successes, trials) if kind == "panel" else None
    p0 = (s_tot + 0.5) / (m_tot + 1.0)  # Jeffreys: inside (0, 1) even when every trial went one way
    p1 = max(p0 - delta, p0 / 2)
    reference = round(cusum_reference(p0, p1, n) / step) * step
    rng = np.random.default_rng(seed)
    day_var = 0.0 if day_sd is None else day_sd**2
    if daily is not None and day_sd is None:
        day_var = max(0.0, day_variance(*daily, within_day_variance(kind, successes, trials)))
    pmfs = disperse(posterior_pmfs(kind, successes, trials, n, draws, rng, hyper=hyper), n * n * day_var)
    point = disperse(mean_pmf(kind, successes, trials, n, hyper=hyper)[None, :], n * n * day_var)
    h_max = h_max if h_max is not None else 60 * max(reference, 1.0)
    h, rate = _smallest_threshold(lambda h: float(np.mean(365.0 / batched_arl(h, pmfs, reference, step))),
                                  false_alarms_per_year, step, h_max)
    plugin = float(365.0 / batched_arl(h, point, reference, step)[0])
    dropped = disperse(mean_pmf(kind, successes, trials, n, shift=p0 - p1, hyper=hyper), n * n * day_var)[0]
    median, p95 = _delays(h, dropped, reference, step)
    return Calibration(threshold=h, reference=reference, p0=p0, p1=p1, false_alarms_per_year=rate,
                       plugin_false_alarms_per_year=plugin, delay_days=median, delay_days_95=p95,
                       hyper=hyper, draws=draws, day_sd=float(np.sqrt(day_var)))


def _smallest_threshold(rate_at, target: float, step: float, h_max: float) -> tuple[float, float]:
    """The smallest lattice h (step, 2 step, ...) with rate_at(h) <= target, and that rate. The rate falls as h
    grows (a higher threshold is reached later), so a doubling search then bisection finds the same h as a scan."""
    top = int(np.floor(h_max / step + 1e-9))
    lo, hi = 0, 1  # lattice indices: rate(lo * step) > target (index 0: h = 0 always alarms), rate(hi * step)?
    while True:
        if hi > top:
            if lo >= top or rate_at(top * step) > target:
                raise ValueError(f"no threshold up to {h_max} keeps false alarms within {target:g} a year")
            hi = top
            break
        if rate_at(hi * step) <= target:
            break
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if rate_at(mid * step) <= target else (mid, hi)
    return hi * step, rate_at(hi * step)


def _delays(h: float, pmf: np.ndarray, reference: float, step: float, days: int = 400) -> tuple[float, float]:
    """Median and 95th-percentile run length (days, from C = 0) under ``pmf``."""
    cdf = run_length_cdf(h, pmf, reference, days, step)
    return tuple(float(np.searchsorted(cdf, q) + 1) if cdf[-1] >= q else float("inf") for q in (0.5, 0.95))
