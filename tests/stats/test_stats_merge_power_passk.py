"""Merge acceptance, planning and pass@k, against statsmodels, scipy and brute force.

Pins: a review rate computed over trials as if independent, a power calculation that ignores
seeds, and pass@k estimated by the biased 1 - (1 - c/n)^k.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalharness.stats import (
    acceptance_rate,
    acceptance_ratio,
    grader_human_gap,
    mde,
    pass_at_k,
    pass_hat_k,
    pass_k_table,
    plan_from_pilot,
    plan_table,
    tasks_needed,
    wilson_interval,
)


def _reviews(n_tasks=40, per_task=1, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_tasks):
        for k in range(per_task):
            resolved = rng.random() < 0.7
            rows.append({"task_id": f"t{i:02d}", "seed": k, "resolved": resolved,
                         "accepted": float(resolved and rng.random() < 0.6)})
    return pd.DataFrame(rows)


def test_acceptance_rate_one_review_per_task_is_wilson():
    df = _reviews()
    r = acceptance_rate(df)
    lo, hi = wilson_interval(df["accepted"].sum(), len(df))
    assert r["interval"] == "wilson" and (r["ci_low"], r["ci_high"]) == pytest.approx((float(lo), float(hi)))


def test_acceptance_rate_several_reviews_is_task_clustered():
    df = _reviews(n_tasks=30, per_task=3)
    r = acceptance_rate(df)
    means = df.groupby("task_id")["accepted"].mean()
    assert r["interval"] == "t" and r["se"] == pytest.approx(stats.sem(means))


def test_unreviewed_rows_are_left_out():
    df = _reviews()
    df.loc[:9, "accepted"] = np.nan
    assert acceptance_rate(df)["n_reviewed"] == 30


def test_grader_human_gap_against_scipy_and_mcnemar():
    df = _reviews(n_tasks=50)
    g = grader_human_gap(df)
    ref = stats.ttest_rel(df["resolved"].astype(float), df["accepted"])
    assert g.gap == pytest.approx(df["resolved"].mean() - df["accepted"].mean())
    assert g.p_t == pytest.approx(ref.pvalue, rel=1e-10)
    b = int((df["resolved"] & (df["accepted"] == 0)).sum())
    assert g.grader_only == b and g.human_only == 0
    assert g.p_mcnemar == pytest.approx(stats.binomtest(b, b, 0.5).pvalue)


def test_acceptance_ratio_katz_interval():
    r = acceptance_ratio(20, 50, 40, 50)
    se = math.sqrt(1 / 20 - 1 / 50 + 1 / 40 - 1 / 50)
    assert r["ratio"] == pytest.approx(0.5)
    z = stats.norm.ppf(0.975)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((0.5 * math.exp(-z * se), 0.5 * math.exp(z * se)), rel=1e-9)
    assert math.isnan(acceptance_ratio(3, 10, 0, 10)["ratio"])


def test_mde_inverts_tasks_needed():
    n = tasks_needed(0.05, 0.02, 0.2, 0.15, k_a=3, k_b=5)
    assert mde(n, 0.02, 0.2, 0.15, k_a=3, k_b=5) == pytest.approx(0.05)
    assert math.isnan(mde(1, 0.02, 0.2))


def test_plan_from_a_large_pilot_recovers_components(make_matrix):
    rng = np.random.default_rng(4)
    tasks, seeds = 3000, 4
    p = rng.beta(1.5, 1.5, tasks)
    q = np.clip(p + rng.normal(0, 0.1, tasks), 0, 1)
    a = make_matrix(rng.random((tasks, seeds)) < p[:, None], model="a")
    b = make_matrix(rng.random((tasks, seeds)) < q[:, None], model="b")
    plan = plan_from_pilot(pd.concat([a, b]))
    assert plan.var_within_a == pytest.approx(np.mean(p * (1 - p)), rel=0.03)
    assert plan.var_within_b == pytest.approx(np.mean(q * (1 - q)), rel=0.03)
    assert plan.var_diff_between == pytest.approx(np.var(p - q), rel=0.15)
    table = plan.table(delta=0.05)
    assert list(table["seeds"]) == [1, 3, 5, 10] and table["tasks_needed"].is_monotonic_decreasing
    row = table.set_index("seeds").loc[3]
    assert row["tasks_needed"] == pytest.approx(
        tasks_needed(0.05, plan.var_diff_between, plan.var_within_a, plan.var_within_b, k_a=3))
    assert row["trials_per_config"] == pytest.approx(3 * row["tasks_needed"])


def test_plan_with_one_seed_only_plans_that_seed_count(make_matrix):
    rng = np.random.default_rng(5)
    df = pd.concat([make_matrix(rng.random((50, 1)) < 0.5, model="a"),
                    make_matrix(rng.random((50, 1)) < 0.4, model="b")])
    table = plan_table(df)
    assert np.isfinite(table.loc[0, "tasks_needed"]) and table.loc[1:, "tasks_needed"].isna().all()
    s_a = df.loc[df["model"] == "a", "resolved"].astype(float)
    assert table.loc[0, "se_score_at_n"] == pytest.approx(stats.sem(s_a))
    assert "not identifiable" in table.attrs["note"]


def test_plan_with_one_configuration_is_conservative(make_trials):
    plan = plan_from_pilot(make_trials([4, 3, 1, 0, 2, 4, 1, 3, 2, 2], 4))
    assert plan.var_diff_between == pytest.approx(2 * plan.var_between_a) and "conservative" in plan.note


def test_pass_at_k_equals_brute_force_over_subsets():
    outcomes = [1, 0, 0, 1, 0, 0, 1]  # n = 7, c = 3
    for k in range(1, 8):
        subsets = list(itertools.combinations(outcomes, k))
        assert pass_at_k(7, 3, k) == pytest.approx(np.mean([any(s) for s in subsets]))
        assert pass_hat_k(7, 3, k) == pytest.approx(np.mean([all(s) for s in subsets]))
    assert math.isnan(pass_at_k(3, 1, 5)) and math.isnan(pass_hat_k(3, 1, 5))


def test_pass_k_table(make_trials):
    df = pd.concat([make_trials([2, 0, 1, 2], 2, model="a"), make_trials([1], 1, model="b")])
    table = pass_k_table(df, 2).set_index("config")
    assert table.loc["h/a", "pass_at_k"] == pytest.approx(np.mean([1, 0, 1, 1]))
    assert table.loc["h/a", "pass_hat_k"] == pytest.approx(np.mean([1, 0, 0, 1]))
    assert table.loc["h/b", "n_tasks"] == 0 and table.loc["h/b", "n_tasks_short"] == 1
