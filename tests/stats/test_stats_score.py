"""Score of one configuration: task-level interval, infra handling, NaN with reasons, tables.

Pins: a standard error of 0 when n < 2 (an undefined number shown as certainty), and infra
failures silently counted as agent failures.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalharness.stats import cost_per_resolved, per_task_table, score, score_table, wilson_interval

COUNTS = [4, 4, 3, 4, 2, 0, 4, 1, 3, 4, 0, 2, 4, 3, 0, 4, 1, 4, 2, 3]


def test_row_order_changes_nothing(make_trials):
    df = make_trials(COUNTS, 4)
    shuffled = df.sample(frac=1.0, random_state=7)
    assert score(shuffled).to_dict() == score(df).to_dict()
    assert score(shuffled, cluster="repo").to_dict() == score(df, cluster="repo").to_dict()
    pd.testing.assert_frame_equal(score_table(shuffled), score_table(df))
    pd.testing.assert_frame_equal(per_task_table(shuffled), per_task_table(df))


@pytest.mark.parametrize("method", ["t", "wilson", "clopper-pearson", "bootstrap"])
def test_interval_contains_estimate(make_trials, method):
    rng = np.random.default_rng(1)
    for seeds in (1, 3):
        s = score(make_trials(rng.integers(0, seeds + 1, 40), seeds), method=method, n_resamples=999)
        assert s.ci_low <= s.resolve_rate <= s.ci_high
        assert 0.0 <= s.ci_low and s.ci_high <= 1.0


def test_fewer_than_two_tasks_is_nan_with_reason(make_trials):
    s = score(make_trials([3], 4))
    assert s.resolve_rate == 0.75 and s.n_tasks == 1
    assert math.isnan(s.se) and math.isnan(s.ci_low) and math.isnan(s.ci_high)
    assert "n < 2" in s.note
    assert all(math.isnan(v) for v in s.predicted_se.values())


def test_no_usable_trials_is_nan_with_reason(make_trials):
    df = make_trials([1, 1], 2).assign(infra=True)
    s = score(df)
    assert math.isnan(s.resolve_rate) and s.n_infra == 4 and "no usable trials" in s.note


def test_one_cluster_is_nan_not_zero(make_trials):
    s = score(make_trials(COUNTS, 4, repo="only-repo"), cluster="repo")
    assert math.isnan(s.se) and "cluster" in s.note


def test_few_clusters_are_flagged(make_trials):
    s = score(make_trials(COUNTS, 4), cluster="repo")  # 5 repositories
    assert s.n_clusters == 5 and np.isfinite(s.se) and "few clusters" in s.note


def test_empty_cluster_key_makes_each_task_its_own_cluster(make_trials):
    clustered = score(make_trials(COUNTS, 4, repo=""), cluster="repo")
    assert clustered.n_clusters == 20
    plain = score(make_trials(COUNTS, 4))
    assert clustered.se == pytest.approx(plain.se, rel=1e-12)  # CR1 with singletons = ordinary SE


def test_infra_excluded_by_default_and_counted(make_trials):
    df = make_trials(COUNTS, 4)
    failed = df.index[(df["resolved"] == False) & (df["seed"] == 3)][:5]  # noqa: E712
    df.loc[failed, "infra"] = True
    s = score(df)
    assert s.n_infra == 5 and s.n_trials == 75
    as_fail = score(df, infra_as_failure=True)
    assert as_fail.n_trials == 80 and as_fail.resolve_rate == pytest.approx(0.65)
    resolved_infra = df.index[df["resolved"]][:3]
    df.loc[resolved_infra, "infra"] = True
    assert score(df, infra_as_failure=True).resolve_rate == pytest.approx((52 - 3) / 80)


def test_one_seed_small_n_uses_wilson(make_trials):
    s = score(make_trials([1] * 9 + [0] * 3, 1))
    lo, hi = wilson_interval(9, 12)
    assert s.interval == "wilson" and (s.ci_low, s.ci_high) == pytest.approx((float(lo), float(hi)))
    assert "Wilson" in s.note
    assert s.se == pytest.approx(stats.sem([1] * 9 + [0] * 3))


def test_all_tasks_equal_gets_wilson_not_zero_width(make_trials):
    s = score(make_trials([4] * 30, 4))
    assert s.resolve_rate == 1.0 and s.ci_low < 1.0 and s.interval == "wilson"


def test_bootstrap_matches_scipy_on_task_means(make_trials):
    s = score(make_trials(COUNTS, 4), method="bootstrap", n_resamples=2000, seed=3)
    ref = stats.bootstrap((np.array(COUNTS) / 4,), np.mean, n_resamples=2000, method="BCa",
                          rng=np.random.default_rng(3))
    assert (s.ci_low, s.ci_high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=0.01)
    again = score(make_trials(COUNTS, 4), method="bootstrap", n_resamples=2000, seed=3)
    assert again.to_dict() == s.to_dict()  # same seed, same interval


def test_variance_components_recover_simulated_truth(make_matrix):
    """s_ik = x_i + e_ik: E[var_between] = Var(p), E[var_within] = E[p(1-p)] (Miller 2024, sec. 4)."""
    rng = np.random.default_rng(11)
    a, b = 2.0, 3.0
    true_between = a * b / ((a + b) ** 2 * (a + b + 1))
    true_within = a / (a + b) - (a * (a + 1)) / ((a + b) * (a + b + 1))
    reps = 40
    p = rng.beta(a, b, (reps, 200))
    y = rng.random((reps, 200, 5)) < p[..., None]
    df = pd.concat([make_matrix(y[r], model=f"rep{r}") for r in range(reps)], ignore_index=True)
    table = score_table(df)
    assert table["var_between"].mean() == pytest.approx(true_between, rel=0.06)
    assert table["var_within"].mean() == pytest.approx(true_within, rel=0.02)
    s = score(df.loc[df["model"] == "rep0"])
    k = 3
    assert s.predicted_se[k] == pytest.approx(math.sqrt((s.var_between + s.var_within / k) / 200))


def test_score_table_equals_score_per_configuration(make_trials):
    rng = np.random.default_rng(5)
    parts = [make_trials(rng.integers(0, 4, 30), 3, model=m, harness=h, cost=c)
             for m, h, c in [("m1", "h1", 0.2), ("m2", "h1", 0.5), ("m1", "h2", 0.1)]]
    parts.append(make_trials(rng.integers(0, 2, 12), 1, model="m2", harness="h2"))
    df = pd.concat(parts, ignore_index=True)
    df.loc[df.sample(n=9, random_state=2).index, "cost_usd"] = np.nan
    df.loc[df.sample(n=4, random_state=3).index, "infra"] = True
    table = score_table(df).set_index("config")
    for config, part in df.groupby("config"):
        s, c, row = score(part), cost_per_resolved(part), table.loc[config]
        for col in ("resolve_rate", "se", "ci_low", "ci_high", "naive_se", "var_between", "var_within"):
            assert row[col] == pytest.approx(getattr(s, col), nan_ok=True, rel=1e-12), col
        assert (row["n_tasks"], row["n_trials"], row["n_infra"], row["interval"]) == (
            s.n_tasks, s.n_trials, s.n_infra, s.interval)
        assert row["cost_per_resolved"] == pytest.approx(c.cost_per_resolved, rel=1e-12)
        assert row["cost_per_resolved_low"] == pytest.approx(c.ci_low, rel=1e-12)
        assert row["mean_cost_usd"] == pytest.approx(c.mean_cost_usd, rel=1e-12)


def test_score_table_keeps_configurations_with_only_infra_failures(make_trials):
    df = pd.concat([make_trials(COUNTS, 2, model="ok"), make_trials([1, 1], 2, model="broken").assign(infra=True)])
    table = score_table(df).set_index("model")
    assert table.loc["broken", "n_infra"] == 4 and math.isnan(table.loc["broken", "resolve_rate"])
    assert "no usable trials" in table.loc["broken", "note"]


def test_per_task_table_counts(make_trials):
    df = pd.concat([make_trials([2, 0, 1], 2, model="a"), make_trials([1, 1], 2, model="b")])
    table = per_task_table(df)
    assert table.loc["task-000", "h/a"] == "2/2" and table.loc["task-002", "h/a"] == "1/2"
    assert table.loc["task-001", "h/b"] == "1/2" and table.loc["task-002", "h/b"] == ""


def test_several_configurations_rejected(make_trials):
    df = pd.concat([make_trials([1, 2], 2, model="a"), make_trials([1, 2], 2, model="b")])
    with pytest.raises(ValueError, match="one configuration"):
        score(df)
