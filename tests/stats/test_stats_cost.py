"""Cost per resolved task: ratio estimator with a task-clustered interval.

Pins: unknown costs read as $0 (flattering cheap-looking configurations) and a cost per
resolved of 0 or infinity when nothing resolved (it is undefined).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalharness.stats import cost_per_resolved, ratio_estimate, score_table


def test_ratio_and_linearized_se_by_hand(make_matrix):
    rng = np.random.default_rng(0)
    y = rng.random((25, 3)) < 0.6
    df = make_matrix(y).assign(cost_usd=rng.gamma(2, 0.1, 75))
    c = cost_per_resolved(df)
    per = df.assign(r=df["resolved"].astype(float)).groupby("task_id")[["cost_usd", "r"]].mean()
    ratio = per["cost_usd"].sum() / per["r"].sum()
    z = per["cost_usd"] - ratio * per["r"]
    se = math.sqrt(25 / 24 * (z**2).sum()) / per["r"].sum()
    q = stats.t.ppf(0.975, 24)
    assert c.cost_per_resolved == pytest.approx(ratio) and c.se == pytest.approx(se)
    assert (c.ci_low, c.ci_high) == pytest.approx((ratio * math.exp(-q * se / ratio), ratio * math.exp(q * se / ratio)))
    assert c.mean_cost_usd == pytest.approx(per["cost_usd"].mean())
    same = ratio_estimate(per["cost_usd"], per["r"])
    assert same["ratio"] == pytest.approx(ratio) and same["se"] == pytest.approx(se)


def test_unknown_cost_is_left_out_not_zero(make_matrix):
    df = make_matrix(np.ones((4, 2), dtype=bool)).assign(cost_usd=[1.0, np.nan, 1.0, 1.0, np.nan, np.nan, 1.0, 1.0])
    c = cost_per_resolved(df)
    assert c.cost_per_resolved == pytest.approx(1.0) and c.n_cost_unknown == 3 and c.n_tasks == 3


def test_nothing_resolved_is_nan_with_reason(make_matrix):
    c = cost_per_resolved(make_matrix(np.zeros((5, 2), dtype=bool)))
    assert math.isnan(c.cost_per_resolved) and "no resolved" in c.note


def test_all_cost_unknown(make_matrix):
    c = cost_per_resolved(make_matrix(np.ones((5, 2), dtype=bool)).assign(cost_usd=np.nan))
    assert math.isnan(c.mean_cost_usd) and c.note == "cost unknown"


def test_interval_coverage_in_simulation(make_matrix):
    """Tasks differ in difficulty and in cost; the interval should cover the true ratio ~95%."""
    rng = np.random.default_rng(3)
    reps, tasks, seeds = 1000, 60, 3
    p = rng.beta(2, 2, (reps, tasks))
    cost_mean = 0.05 + 0.3 * (1 - p)  # harder tasks cost more
    y = rng.random((reps, tasks, seeds)) < p[..., None]
    cost = rng.gamma(4, cost_mean[..., None] / 4, (reps, tasks, seeds))
    r, t, s = (a.ravel() for a in np.meshgrid(np.arange(reps), np.arange(tasks), np.arange(seeds), indexing="ij"))
    df = pd.DataFrame({"config": r, "task_id": t, "resolved": y.ravel(), "cost_usd": cost.ravel()})
    table = score_table(df, by=("config",))
    grid = np.linspace(0, 1, 200001)
    density = stats.beta.pdf(grid, 2, 2)
    truth = np.trapezoid(density * (0.05 + 0.3 * (1 - grid)), grid) / 0.5
    covered = ((table["cost_per_resolved_low"] <= truth) & (truth <= table["cost_per_resolved_high"])).mean()
    assert 0.93 <= covered <= 0.97, covered
