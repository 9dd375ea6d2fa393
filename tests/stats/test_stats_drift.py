"""Drift monitoring: CUSUM path, Brook-Evans ARL, thresholds, always-valid p-values, the report.

Pins: daily z-tests at 0.05 (about 18 false alarms a year), a threshold calibrated on the binomial
pmf for a fixed panel (far too conservative), and an "always-valid" p-value that is not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from evalharness.stats import (
    beta_evalues,
    binomial_pmf,
    cusum_arl,
    cusum_path,
    cusum_reference,
    cusum_threshold,
    daily_counts,
    detect_drift,
    evalue_pvalues,
    freeze_baseline,
    msprt_pvalues,
    normal_cusum,
    normal_threshold,
    poisson_binomial_pmf,
    wilson_interval,
    window_intervals,
)
from evalharness.stats.baseline import beta_binomial_fit
from evalharness.stats.monitor import ShortBaselineError
from evalharness.stats.drift import change_point, first_alarm, siegmund_arl
from evalharness.stats.sequential import log_beta_evalue


def _reference_arl(h, pmf, r, step=0.5):
    """The loop version from the statistics reference (Brook & Evans 1972)."""
    states = np.arange(0, h, step)
    q = np.zeros((len(states), len(states)))
    for i, c in enumerate(states):
        for y, py in enumerate(pmf):
            c2 = max(0.0, c + r - y)
            if c2 < h - 1e-9:
                q[i, int(round(c2 / step))] += py
    return np.linalg.solve(np.eye(len(states)) - q, np.ones(len(states)))[0]


def test_cusum_path_equals_page_recursion():
    x = np.random.default_rng(0).normal(-0.2, 1, 500)
    c, expected = 0.0, []
    for v in x:
        c = max(0.0, c + v)
        expected.append(c)
    assert np.allclose(cusum_path(x), expected)


@pytest.mark.parametrize("h, p", [(11, 0.58), (7.5, 0.5), (20, 0.6)])
def test_vectorized_arl_equals_reference_loop(h, p):
    r = cusum_reference(0.58, 0.48, 50)
    pmf = binomial_pmf(50, p)
    assert cusum_arl(h, pmf, r) == pytest.approx(_reference_arl(h, pmf, round(r * 2) / 2), rel=1e-10)


def test_threshold_is_the_smallest_meeting_the_budget():
    pmf, r = binomial_pmf(50, 0.58), 26.5
    h, arl = cusum_threshold(pmf, r, 365 * 3)
    assert arl >= 365 * 3 and cusum_arl(h - 0.5, pmf, r) < 365 * 3


def test_poisson_binomial_pmf_moments_and_panel_arl():
    rates = np.random.default_rng(1).beta(0.6, 0.45, 50)
    pmf = poisson_binomial_pmf(rates)
    k = np.arange(pmf.size)
    assert pmf.sum() == pytest.approx(1.0)
    assert (k * pmf).sum() == pytest.approx(rates.sum())
    assert ((k - rates.sum()) ** 2 * pmf).sum() == pytest.approx((rates * (1 - rates)).sum())
    p0 = rates.mean()
    r = cusum_reference(p0, p0 - 0.1, 50)
    # the fixed panel varies less than fresh tasks: the binomial calibration is conservative there
    assert cusum_arl(8, pmf, r) > 2 * cusum_arl(8, binomial_pmf(50, p0), r)
    rng = np.random.default_rng(2)
    y = (rng.random((2000, 400, 50)) < rates).sum(-1)  # the same 50 tasks every day
    alarms = first_alarm(cusum_path(round(r * 2) / 2 - y), 3)
    assert (alarms >= 0).all()
    assert (alarms + 1).mean() == pytest.approx(cusum_arl(3, pmf, r), rel=0.1)


def test_change_point_is_day_after_last_zero():
    path = np.array([0.0, 1.0, 0.0, 0.0, 2.0, 5.0, 12.0])
    assert change_point(path, 6) == 4


def test_msprt_formula_and_running_minimum():
    successes, trials, p0, tau = np.array([29, 25, 20, 31]), np.array([50, 50, 50, 50]), 0.58, 0.1
    p = msprt_pvalues(successes, trials, p0, tau)
    s, n = np.cumsum(successes), np.cumsum(trials)
    sig2 = p0 * (1 - p0)
    v = sig2 + n * tau**2
    lam = np.sqrt(sig2 / v) * np.exp(n**2 * tau**2 * (s / n - p0) ** 2 / (2 * sig2 * v))
    assert np.allclose(p, np.minimum.accumulate(np.minimum(1, 1 / lam)))
    assert np.all(np.diff(p) <= 0)


def test_beta_evalue_equals_numerical_integral():
    for s, n, p0 in [(20, 50, 0.58), (300, 600, 0.58), (5, 10, 0.3)]:
        num = integrate.quad(lambda p, s=s, n=n, p0=p0: stats.binom.pmf(s, n, p) / p0, 0, p0)[0]
        assert np.exp(log_beta_evalue(s, n, p0)) == pytest.approx(num / stats.binom.pmf(s, n, p0), rel=1e-6)


def test_always_valid_under_daily_peeking():
    """Under no change, P(ever p <= 0.05 in a year of daily looks) <= 0.05; daily z-tests exceed it."""
    rng = np.random.default_rng(5)
    p0, days, streams = 0.58, 365, 2000
    y = rng.binomial(50, p0, size=(streams, days))
    n = np.full(days, 50)
    msprt_hits = np.mean([msprt_pvalues(row, n, p0)[-1] <= 0.05 for row in y[:500]])
    e_hits = np.mean([evalue_pvalues(beta_evalues(row, n, p0))[-1] <= 0.05 for row in y[:500]])
    z = (y - 50 * p0) / np.sqrt(50 * p0 * (1 - p0))
    naive_alarms_per_year = np.mean((2 * stats.norm.sf(np.abs(z)) < 0.05).sum(1))
    assert msprt_hits <= 0.05 and e_hits <= 0.05
    assert naive_alarms_per_year > 15  # 365 x 0.05, and more: the normal approximation at n = 50


def test_beta_evalue_detects_a_drop():
    y = np.random.default_rng(6).binomial(50, 0.45, 60)
    e = beta_evalues(y, np.full(60, 50), 0.58)
    assert e.max() >= 20


def test_normal_threshold_and_cost_cusum():
    assert siegmund_arl(normal_threshold(500), 0.5) == pytest.approx(500)
    assert siegmund_arl(4.0, 0.5) == pytest.approx(336, rel=0.01)  # the tabulated h = 4, k = 0.5 value
    h = normal_threshold(100)
    z = np.random.default_rng(7).normal(0, 1, (3000, 2000))
    alarms = first_alarm(cusum_path(z - 0.5), h)  # upper side in control
    assert (alarms >= 0).all() and (alarms + 1).mean() == pytest.approx(100, rel=0.1)
    shifted = np.random.default_rng(8).normal(1.5, 1, 30)
    upper, _, alarm = normal_cusum(shifted, normal_threshold(730))
    assert alarm is not None and alarm < 10 and upper[alarm] >= normal_threshold(730)


def _panel_trials(rates, days, start, shift=0.0, seed=0):
    rng = np.random.default_rng(seed)
    t = len(rates)
    y = rng.random((days, t)) < np.clip(rates - shift, 0, 1)
    return pd.DataFrame({
        "task_id": np.tile([f"t{i}" for i in range(t)], days), "config": "h/m", "resolved": y.ravel(),
        "infra": False, "cost_usd": rng.gamma(4, 0.05, days * t), "total_tokens": rng.normal(5000, 500, days * t),
        "started_at": np.repeat(pd.date_range(start, periods=days), t),
    })


def test_detect_drift_end_to_end():
    rates = np.random.default_rng(3).uniform(0.2, 0.95, 50)
    baseline = freeze_baseline(_panel_trials(rates, 30, "2025-01-01", seed=1))
    assert baseline.trials_per_day == 50 and baseline.n_days == 30 and baseline.note == ""
    quiet = detect_drift(daily_counts(_panel_trials(rates, 40, "2025-02-01", seed=2)), baseline)
    assert not quiet.alarm and quiet.arl0_days >= 365 and quiet.change_day is None
    monitored = pd.concat([_panel_trials(rates, 20, "2025-02-01", seed=2),
                           _panel_trials(rates, 20, "2025-02-21", shift=0.10, seed=3)])
    report = detect_drift(daily_counts(monitored), baseline)
    assert report.alarm and "2025-02-21" <= report.alarm_day <= "2025-03-05"
    assert "2025-02-14" <= report.change_day <= report.alarm_day
    assert report.arl1_days < 10 and report.false_alarms_per_year <= 1.0
    assert len(report.statistic) == len(report.days) == 40
    assert report.windows["diff_30d"] < 0 and report.windows["rate_7d_low"] < report.windows["rate_7d"]
    as_dict = report.to_dict()
    assert as_dict["threshold"] == report.threshold


def test_short_baseline_is_refused_unless_accepted():
    """Issue 27: below 20 days / 1,000 trials the promised false-alarm rate does not hold."""
    rates = np.full(50, 0.5)
    with pytest.raises(ShortBaselineError, match=r"19 days and 950 trials is below the minimum.*allow_short"):
        freeze_baseline(_panel_trials(rates, 19, "2025-01-01"))
    with pytest.raises(ShortBaselineError, match=r"25 days and 750 trials"):
        freeze_baseline(_panel_trials(rates[:30], 25, "2025-01-01"))
    assert "short baseline" in freeze_baseline(_panel_trials(rates, 19, "2025-01-01"), allow_short=True).note
    assert freeze_baseline(_panel_trials(rates, 20, "2025-01-01")).note == ""  # 20 days x 50 = 1,000: enough


def test_window_intervals_are_wilson_on_rolling_sums():
    daily = daily_counts(_panel_trials(np.full(20, 0.6), 10, "2025-01-01", seed=4))
    w = window_intervals(daily)
    last7 = daily.iloc[-7:]
    lo, hi = wilson_interval(last7["resolved"].sum(), last7["trials"].sum())
    assert w["rate_7d_low"].iloc[-1] == pytest.approx(float(lo))
    assert w["rate_7d_high"].iloc[-1] == pytest.approx(float(hi))


def test_cost_drift_alarms():
    rates = np.full(50, 0.6)
    baseline = freeze_baseline(_panel_trials(rates, 30, "2025-01-01", seed=1))
    later = _panel_trials(rates, 20, "2025-02-01", seed=5)
    later["cost_usd"] *= 1.5
    report = detect_drift(daily_counts(later), baseline)
    assert report.cost_alarm_day is not None and report.cost_alarm_day <= "2025-02-05"


@pytest.mark.parametrize("pmf", ["binomial", "panel"])
def test_report_p0_is_the_rate_its_arl_is_computed_at(pmf):
    """Issue 27: the report printed the raw share (0.58) beside an ARL computed at the posterior mean (0.57995)."""
    rates = np.r_[np.full(5, 0.95), np.full(5, 0.3)]
    baseline = freeze_baseline(_panel_trials(rates, 6, "2025-01-01", seed=4), pmf=pmf, allow_short=True)
    report = detect_drift(daily_counts(_panel_trials(rates, 5, "2025-02-01", seed=5)), baseline)
    s, m = baseline.successes, baseline.n_trials
    if pmf == "binomial":
        used = (s + 0.5) / (m + 1.0)
        pmf0 = stats.binom.pmf(np.arange(11), 10, used)
    else:
        ks = np.array([baseline.task_rates[t] * baseline.task_trials[t] for t in baseline.task_trials])
        ms = np.array(list(baseline.task_trials.values()), dtype=float)
        mu, phi = beta_binomial_fit(ks, ms)
        shrunk = (mu * phi + ks) / (phi + ms)
        used = float(shrunk.mean())
        pmf0 = poisson_binomial_pmf(shrunk)
    assert report.p0_observed == pytest.approx(s / m) and abs(used - s / m) > 1e-4
    assert report.p0 == pytest.approx(used, rel=1e-12)
    assert report.arl0_days == pytest.approx(cusum_arl(report.threshold, pmf0, baseline.reference), rel=1e-9)
