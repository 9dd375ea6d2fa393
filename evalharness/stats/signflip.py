"""Sign-flip (paired permutation) test of mean difference zero.

Under H0 each per-task difference d_i is symmetric about 0, so T = sum s_i d_i with independent
random signs s_i = +-1 is the null distribution (Fisher 1935; the paired case of
``scipy.stats.permutation_test(..., permutation_type="samples")``). Two-sided p = P(|T| >= |t_obs|).

Computed, in order of preference:
1. exact on a lattice: when d_i * D are integers (task means are k/K, so D = lcm of seed counts),
   the null distribution is a convolution of scaled Binomial(m, 1/2) pmfs, one per distinct |d|;
   exact for any number of tasks and fast;
2. exact by enumerating all 2^m sign vectors when m <= 16 nonzero differences;
3. Monte Carlo with a fixed seed, p = (1 + #{|T*| >= |t|}) / (1 + B) (Phipson & Smyth 2010).
Zero differences are dropped first: their sign does not change T.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

MAX_EXACT_OPS = 50_000_000
MAX_ENUMERATE = 16


def signflip_pvalue(d, *, lattice: int | None = None, n_resamples: int = 9999,
                    seed: int = 0) -> tuple[float, str]:
    """Two-sided sign-flip p-value of mean(d) = 0 and a description of how it was computed."""
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if d.size == 0:
        return 1.0, "exact (all differences are zero)"
    if lattice is not None:
        z = d * lattice
        if np.allclose(z, np.rint(z), atol=1e-9):
            p = _lattice_pvalue(np.rint(z).astype(np.int64))
            if p is not None:
                return p, "exact (lattice convolution)"
    if d.size <= MAX_ENUMERATE:
        return _enumerate_pvalue(d), "exact (enumeration)"
    return _monte_carlo_pvalue(d, n_resamples, seed), f"monte carlo ({n_resamples} sign flips, seed {seed})"


def _lattice_pvalue(z: np.ndarray) -> float | None:
    """Exact p for integer differences z; None when the support is too large to convolve."""
    mags, counts = np.unique(np.abs(z), return_counts=True)
    support = 2 * int(np.sum(mags * counts)) + 1
    if support * z.size > MAX_EXACT_OPS:
        return None
    pmf = np.ones(1)
    for v, m in zip(mags.tolist(), counts.tolist()):
        w = stats.binom.pmf(np.arange(m + 1), m, 0.5)  # j positive signs -> value v * (2j - m)
        out = np.zeros(pmf.size + 2 * m * v)
        for j in range(m + 1):
            out[2 * j * v: 2 * j * v + pmf.size] += w[j] * pmf
        pmf = out
    values = np.arange(pmf.size) - (pmf.size - 1) // 2
    t_obs = abs(int(z.sum()))
    return float(min(1.0, pmf[np.abs(values) >= t_obs].sum()))


def _enumerate_pvalue(d: np.ndarray) -> float:
    m = d.size
    bits = (np.arange(2**m)[:, None] >> np.arange(m)) & 1
    totals = (2 * bits - 1) @ d
    t_obs = abs(d.sum())
    return float(np.mean(np.abs(totals) >= t_obs - 1e-9 * np.abs(d).sum()))


def _monte_carlo_pvalue(d: np.ndarray, n_resamples: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    t_obs = abs(d.sum()) - 1e-9 * np.abs(d).sum()
    hits, done, batch = 0, 0, max(1, 2_000_000 // d.size)
    while done < n_resamples:
        b = min(batch, n_resamples - done)
        signs = rng.integers(0, 2, size=(b, d.size), dtype=np.int8) * 2 - 1
        hits += int(np.sum(np.abs(signs @ d) >= t_obs))
        done += b
    return (1 + hits) / (1 + n_resamples)
