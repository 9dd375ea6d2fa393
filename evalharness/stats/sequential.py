"""Always-valid p-values and e-values for a resolve rate watched every day.

A daily z-test at 0.05 raises about 18 false alarms a year under no change; these statistics keep
the error rate over the whole monitoring run, at any (data-dependent) stopping day.

- Mixture SPRT (Robbins 1970; Johari, Koomen, Pekelis & Walsh 2017/2022, "Always valid inference",
  Operations Research 70): normal mixture N(0, tau^2) over the shift, sigma^2 = p0(1 - p0),
  N cumulative trials, Lambda_N = sqrt(sigma^2 / (sigma^2 + N tau^2))
  * exp(N^2 tau^2 (phat - p0)^2 / (2 sigma^2 (sigma^2 + N tau^2))); two-sided; p_N = min(p_{N-1}, 1/Lambda_N).
- Two-sample mixture SPRT against an estimated baseline (``baseline_msprt``; the p-value a drift report
  gives). The rate p0 is not known: it is estimated from S0 successes of N0 baseline trials, and a
  one-sample test at the estimate rejects far too often (p <= 0.05 in 40% of stable years with a
  30 x 50 baseline). In the normal approximation, X_N = S_N - N p0hat is a random walk whose drift
  theta = p - p0hat is, under no change, the baseline's own error: theta ~ N(0, v0), v0 = sigma^2 / N0.
  The alternative widens it by the shift mixture: theta ~ N(0, v1), v1 = v0 + tau^2. The likelihood
  ratio of the two Gaussian mixtures, with M(v) = sqrt(sigma^2 / (sigma^2 + N v)) exp(v X^2 /
  (2 sigma^2 (sigma^2 + N v))), is Lambda_N = M(v1) / M(v0): a martingale under no change (baseline
  error included), so P(ever p_N = 1 / max Lambda <= alpha) <= alpha over baselines and monitoring
  together (Ville). A fixed panel varies less than sigma^2 = p0(1 - p0) says: conservative there.
- One-sided Beta-mixture e-value for a drop (exact for Bernoulli trials): mixture of the
  likelihood ratio over p ~ Uniform(0, p0), E_N = [B(S+1, N-S+1) I_{p0}(S+1, N-S+1) / p0] /
  [p0^S (1 - p0)^{N-S}], computed in logs; a nonnegative supermartingale under p >= p0, so by
  Ville's inequality P(sup E_N >= 1/alpha) <= alpha (Ramdas et al. 2023, "Game-theoretic
  statistics and safe anytime-valid inference", Statistical Science 38).
"""

from __future__ import annotations

import numpy as np
from scipy import special


def msprt_pvalues(successes, trials, p0: float, tau: float = 0.1) -> np.ndarray:
    """Always-valid two-sided p-values after each day, from daily successes and trials (not cumulative)."""
    s = np.cumsum(np.asarray(successes, dtype=float))
    n = np.cumsum(np.asarray(trials, dtype=float))
    sigma2 = p0 * (1 - p0)
    with np.errstate(divide="ignore", invalid="ignore"):
        phat = np.where(n > 0, s / n, p0)
    log_lambda = 0.5 * np.log(sigma2 / (sigma2 + n * tau**2)) + (
        n**2 * tau**2 * (phat - p0) ** 2 / (2 * sigma2 * (sigma2 + n * tau**2)))
    p = np.minimum(1.0, np.exp(-log_lambda))
    return np.minimum.accumulate(p)


def log_beta_evalue(successes, trials, p0: float) -> np.ndarray:
    """log E_N of the one-sided Uniform(0, p0) Beta-mixture for a drop, from cumulative S and N."""
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    f = n - s
    with np.errstate(divide="ignore"):
        log_mix = special.betaln(s + 1, f + 1) + np.log(special.betainc(s + 1, f + 1, p0)) - np.log(p0)
    return log_mix - s * np.log(p0) - f * np.log1p(-p0)


def beta_evalues(successes, trials, p0: float) -> np.ndarray:
    """E-values after each day from daily successes and trials (running, cumulative counts)."""
    s = np.cumsum(np.asarray(successes, dtype=float))
    n = np.cumsum(np.asarray(trials, dtype=float))
    return np.exp(log_beta_evalue(s, n, p0))


def evalue_pvalues(evalues) -> np.ndarray:
    """Always-valid p-values from an e-process: min(1, 1 / running max of E)."""
    e = np.maximum.accumulate(np.asarray(evalues, dtype=float))
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, 1.0 / e)


def baseline_msprt(successes, trials, base_successes: float, base_trials: float,
                   tau: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(always-valid two-sided p-values, Lambda) after each day, against a baseline of ``base_successes`` of
    ``base_trials`` (both counted, not assumed exact). Daily successes and trials, not cumulative."""
    if base_trials <= 0:
        raise ValueError("a baseline needs at least one trial")
    p0 = base_successes / base_trials
    pj = (base_successes + 0.5) / (base_trials + 1.0)  # sigma^2 never 0, even for a degenerate baseline
    sigma2 = pj * (1 - pj)
    s = np.cumsum(np.asarray(successes, dtype=float))
    n = np.cumsum(np.asarray(trials, dtype=float))
    x = s - n * p0
    v0 = sigma2 / base_trials
    v1 = v0 + tau**2
    log_lambda = 0.5 * np.log((sigma2 + n * v0) / (sigma2 + n * v1)) + x**2 / (2 * sigma2) * (
        v1 / (sigma2 + n * v1) - v0 / (sigma2 + n * v0))
    lam = np.exp(np.minimum(log_lambda, 700.0))
    p = np.minimum(1.0, 1.0 / np.maximum.accumulate(lam)) if lam.size else lam
    return p, lam
