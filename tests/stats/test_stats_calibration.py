"""Simulations with known answers (fixed seeds, vectorized): do the intervals, tests and alarms
do what they claim?

Pins: intervals that under-cover because seeds were treated as independent trials, a paired test
that fires on A/A comparisons, and a drift alarm whose false-alarm rate is not the one promised.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalharness.stats import binomial_pmf, cusum_arl, cusum_path, paired_t, score_table
from evalharness.stats.drift import first_alarm, run_length_cdf

REPS = 2000


def _replicates(y: np.ndarray) -> pd.DataFrame:
    """Trials of REPS replicate configurations from a reps x tasks x seeds 0/1 array."""
    reps, tasks, seeds = y.shape
    r, t, s = (a.ravel() for a in np.meshgrid(np.arange(reps), np.arange(tasks), np.arange(seeds), indexing="ij"))
    return pd.DataFrame({"config": r, "task_id": t, "seed": s, "resolved": y.ravel().astype(bool)})


def test_task_level_interval_covers_95_percent_when_tasks_vary():
    rng = np.random.default_rng(2024)
    a, b = 1.5, 1.5
    p = rng.beta(a, b, (REPS, 50))
    y = rng.random((REPS, 50, 5)) < p[..., None]
    table = score_table(_replicates(y), by=("config",))
    assert len(table) == REPS and (table["interval"] == "t").all()
    truth = a / (a + b)
    coverage = ((table["ci_low"] <= truth) & (truth <= table["ci_high"])).mean()
    assert 0.93 <= coverage <= 0.97, coverage
    naive_low = table["resolve_rate"] - 1.96 * table["naive_se"]
    naive_high = table["resolve_rate"] + 1.96 * table["naive_se"]
    naive = ((naive_low <= truth) & (truth <= naive_high)).mean()
    assert naive < 0.90 and coverage - naive > 0.08  # 250 trials treated as independent under-cover


def test_paired_test_false_positive_rate_on_a_a_comparisons():
    """compare() delegates its t test to paired_t (test_stats_paired checks the two agree)."""
    rng = np.random.default_rng(77)
    p = rng.beta(1.2, 1.0, (REPS, 40))
    k = 3
    mean_a = rng.binomial(k, p) / k
    mean_b = rng.binomial(k, p) / k
    res = paired_t(mean_a - mean_b)
    rate = np.nanmean(res["p"] < 0.05)
    assert rate <= 0.06, rate
    assert rate >= 0.03  # and it is a test, not a constant "no difference"


def _run_lengths(p: float, streams: int, seed: int, n: int = 50, reference: float = 26.5,
                 h: float = 11.0, chunk: int = 100) -> np.ndarray:
    """Days to the first alarm of ``streams`` CUSUMs, simulated ``chunk`` days at a time.

    Each chunk continues from the last statistic c by prepending c as an increment (C_1 = max(0, c) = c).
    """
    rng = np.random.default_rng(seed)
    lengths = np.zeros(streams, dtype=int)
    state = np.zeros(streams)
    active = np.arange(streams)
    done = 0
    while active.size:
        y = rng.binomial(n, p, size=(active.size, chunk))
        path = cusum_path(np.column_stack([state[active], reference - y]))[:, 1:]
        alarms = first_alarm(path, h)
        hit = alarms >= 0
        lengths[active[hit]] = done + alarms[hit] + 1
        state[active[~hit]] = path[~hit, -1]
        active, done = active[~hit], done + chunk
    return lengths


def test_in_control_arl_matches_markov_chain():
    arl0 = cusum_arl(11, binomial_pmf(50, 0.58), 26.5)
    lengths = _run_lengths(0.58, streams=3000, seed=11)
    assert abs(lengths.mean() / arl0 - 1) < 0.10, (lengths.mean(), arl0)


def test_detection_delay_after_a_ten_point_drop():
    """Delay = days from the first changed day to the alarm, inclusive (the run length from C = 0).

    The run-length distribution is right-skewed: its median (4 days, P(L <= 4) = 0.524 by the
    chain) sits just under the mean ARL1 = 5.0009. "Within 1 day of ARL1" holds at the 0.1-day
    precision ARL1 is quoted to (5.0); the exact checks are median = chain median, mean = ARL1.
    """
    pmf = binomial_pmf(50, 0.48)
    arl1 = cusum_arl(11, pmf, 26.5)
    lengths = _run_lengths(0.48, streams=5000, seed=12, chunk=20)
    chain_median = int(np.argmax(run_length_cdf(11, pmf, 26.5, 60) >= 0.5)) + 1
    assert np.median(lengths) == chain_median == 4
    assert abs(np.median(lengths) - round(arl1, 1)) <= 1.0
    assert lengths.mean() == pytest.approx(arl1, rel=0.05)
    cdf = run_length_cdf(11, pmf, 26.5, 10)
    assert np.allclose([np.mean(lengths <= t) for t in range(1, 11)], cdf, atol=0.02)
