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
from evalharness.stats.drift import first_alarm

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
    assert naive < 0.80  # treating 250 trials as independent badly under-covers


def test_paired_test_false_positive_rate_on_a_a_comparisons():
    """compare() delegates its t test to paired_t (test_stats_paired checks the two agree)."""
    rng = np.random.default_rng(77)
    p = rng.beta(1.2, 1.0, (REPS, 40))
    k = 3
    mean_a = rng.binomial(k, p[..., None].repeat(1, -1)[..., 0]) / k
    mean_b = rng.binomial(k, p) / k
    res = paired_t(mean_a - mean_b)
    rate = np.nanmean(res["p"] < 0.05)
    assert rate <= 0.06, rate
    assert rate >= 0.03  # and it is a test, not a constant "no difference"


def _run_lengths(p: float, streams: int, days: int, seed: int, n: int = 50, reference: float = 26.5,
                 h: float = 11.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = rng.binomial(n, p, size=(streams, days))
    alarms = first_alarm(cusum_path(reference - y), h)
    assert (alarms >= 0).all(), "a stream never alarmed; lengthen the horizon"
    return alarms + 1  # run length in days


def test_in_control_arl_matches_markov_chain():
    arl0 = cusum_arl(11, binomial_pmf(50, 0.58), 26.5)
    lengths = _run_lengths(0.58, streams=2500, days=5000, seed=11)
    assert abs(lengths.mean() / arl0 - 1) < 0.10, (lengths.mean(), arl0)


def test_detection_delay_after_a_ten_point_drop():
    arl1 = cusum_arl(11, binomial_pmf(50, 0.48), 26.5)
    lengths = _run_lengths(0.48, streams=5000, days=60, seed=12)
    assert abs(np.median(lengths) - arl1) <= 1.0, (np.median(lengths), arl1)
    assert lengths.mean() == pytest.approx(arl1, rel=0.05)
