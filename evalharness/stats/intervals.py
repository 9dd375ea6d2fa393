"""Confidence intervals for proportions and means, vectorized over arrays.

- Wilson score interval (Wilson 1927) and Clopper-Pearson exact interval (1934), both through
  ``statsmodels.stats.proportion.proportion_confint`` (methods "wilson" and "beta"). Bowyer et al.
  2025 (arXiv 2503.01747) show that CLT intervals under-cover with fewer than a few hundred
  binary items; Wilson is the small-n default here.
- Student-t interval mean +- t_{df, 1-a/2} * SE for task-level means (Miller 2024, arXiv 2411.00640).
- Newcombe's hybrid score interval for a difference of two independent proportions (Newcombe 1998),
  through ``statsmodels.stats.proportion.confint_proportions_2indep(method="newcomb")``.
- Beta posterior Beta(x+1, n-x+1) (uniform prior) and P(p_A > p_B) by numerical integration.
- Bonett-Price adjusted Wald interval for the difference of paired proportions (Bonett & Price 2012):
  the paired-samples interval ``compare`` uses below 300 tasks. statsmodels has no interval for paired
  proportions (``confint_proportions_2indep`` is for independent samples), so it is computed here.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.optimize import brentq
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

ArrayLike = float | np.ndarray


def wilson_interval(x: ArrayLike, n: ArrayLike, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for x successes in n trials; NaN where n < 1."""
    return _proportion(x, n, level, "wilson")


def clopper_pearson_interval(x: ArrayLike, n: ArrayLike, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson ("exact", conservative) interval; NaN where n < 1."""
    return _proportion(x, n, level, "beta")


def _proportion(x: ArrayLike, n: ArrayLike, level: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    n = np.asarray(n, dtype=float)
    ok = n >= 1
    safe_n = np.where(ok, n, 1.0)
    safe_x = np.clip(np.where(ok, x, 0.0), 0.0, safe_n)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = proportion_confint(safe_x, safe_n, alpha=1 - level, method=method)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if method == "beta":  # statsmodels returns NaN at the edges; the exact bounds are 0 and 1 there
        lo = np.where(safe_x <= 0, 0.0, lo)
        hi = np.where(safe_x >= safe_n, 1.0, hi)
    return np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)


def t_interval(
    mean: ArrayLike, se: ArrayLike, df: ArrayLike, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """mean +- t_{df,(1+level)/2} * se; NaN where df < 1 or se is NaN."""
    mean, se, df = (np.asarray(a, dtype=float) for a in (mean, se, df))
    with np.errstate(invalid="ignore"):
        q = stats.t.ppf(0.5 + level / 2, np.where(df >= 1, df, np.nan))
    return mean - q * se, mean + q * se


def newcombe_difference(
    x1: float, n1: float, x2: float, n2: float, level: float = 0.95
) -> tuple[float, float]:
    """Newcombe hybrid score interval for p1 - p2 (independent samples); NaN if a side is empty."""
    if n1 < 1 or n2 < 1:
        return float("nan"), float("nan")
    lo, hi = confint_proportions_2indep(x1, n1, x2, n2, method="newcomb", compare="diff", alpha=1 - level)
    return float(lo), float(hi)


def prob_greater(x_a: float, n_a: float, x_b: float, n_b: float, grid: int = 4001) -> float:
    """P(p_A > p_B) under independent Beta(x+1, n-x+1) posteriors (uniform priors).

    Computed as the integral of f_A(t) F_B(t) dt (trapezoid rule) on a grid over the range where
    f_A has mass (between its 1e-12 and 1 - 1e-12 quantiles). NaN if a side is empty.
    """
    if n_a <= 0 or n_b <= 0:
        return float("nan")
    a = stats.beta(x_a + 1, n_a - x_a + 1)
    b = stats.beta(x_b + 1, n_b - x_b + 1)
    t = np.linspace(a.ppf(1e-12), a.isf(1e-12), grid)
    return float(np.clip(np.trapezoid(a.pdf(t) * b.cdf(t), t), 0.0, 1.0))


JEFFREYS_GRID = 2000


def paired_jeffreys_interval(b: float, c: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Equal-tailed interval for p10 - p01 of paired binary data from the Jeffreys posterior.

    ``b`` pairs are 1/0 (A only), ``c`` are 0/1 (B only), ``n`` pairs in all. With a Dirichlet(1/2, 1/2,
    1/2) prior on (p10, p01, rest) the posterior of D = p10 - p01 is S (2W - 1) with independent
    S = p10 + p01 ~ Beta(b + c + 1, n - b - c + 1/2) and W = p10 / S ~ Beta(b + 1/2, c + 1/2); its CDF is
    an average over S quantiles (midpoint rule) and the bounds are its (1 -+ level)/2 quantiles. Always
    inside [-1, 1] and of positive width. Chosen over Tango (1998) and Agresti-Min (2005) by the coverage
    simulation in tests/stats/test_stats_range_coverage.py (docs/statistics.md, section 2).
    When every pair is discordant one way (b = n or c = n) the bound on that side is the range's end, so the
    interval holds its estimate. Counts may be fractional. NaN when n < 1.
    """
    if n < 1:
        return float("nan"), float("nan")
    s = stats.beta.ppf((np.arange(JEFFREYS_GRID) + 0.5) / JEFFREYS_GRID, b + c + 1.0, n - b - c + 0.5)
    s = np.maximum(s, 1e-300)
    w = stats.beta(b + 0.5, c + 0.5)

    def cdf(t: float) -> float:
        return float(np.mean(w.cdf(np.clip((1.0 + t / s) / 2.0, 0.0, 1.0))))

    tail = (1.0 - level) / 2.0
    lo = brentq(lambda t: cdf(t) - tail, -1.0, 1.0, xtol=1e-10)
    hi = brentq(lambda t: cdf(t) - (1.0 - tail), -1.0, 1.0, xtol=1e-10)
    # At the edge of the range (every pair discordant one way) the equal-tailed bound stops short of the
    # estimate itself; as for the one-sample Jeffreys interval (Brown, Cai & DasGupta 2001) it is the range's end.
    if b >= n:
        hi = 1.0
    if c >= n:
        lo = -1.0
    return float(lo), float(hi)


def bonett_price_interval(b: float, c: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Bonett-Price adjusted Wald interval for p10 - p01 of paired binary data, clipped to [-1, 1].

    ``b`` pairs are 1/0 (A only), ``c`` are 0/1 (B only), ``n`` pairs in all. One pseudo-pair is added to
    each discordant cell and two to n (a Laplace adjustment): p10~ = (b + 1)/(n + 2), p01~ = (c + 1)/(n + 2),
    D~ = p10~ - p01~, SE = sqrt((p10~ + p01~ - D~^2)/(n + 2)), bounds D~ -+ z SE (Bonett & Price 2012,
    J. Educ. Behav. Stat. 37; recommended by Fagerland, Lydersen & Laake 2014, Stat. Med. 33). Always of
    positive width. Chosen over the Jeffreys posterior interval, which under-covers when nearly every pair
    is discordant one way (81.5% at n = 2 for per-task rates 0.95 vs 0.05), by the exact coverage grid of
    benchmarks/paired_coverage.py (docs/statistics.md, section 2). Counts may be fractional. NaN when n < 1.
    """
    if n < 1:
        return float("nan"), float("nan")
    p10, p01 = (b + 1.0) / (n + 2.0), (c + 1.0) / (n + 2.0)
    d = p10 - p01
    se = np.sqrt(max(p10 + p01 - d * d, 0.0) / (n + 2.0))
    z = stats.norm.ppf(0.5 + level / 2)
    return float(max(d - z * se, -1.0)), float(min(d + z * se, 1.0))
