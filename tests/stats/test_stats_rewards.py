"""Continuous rewards: task-level mean reward and the paired difference, checked against scipy and by simulation
with a known truth (seeds nested in tasks)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from evalharness.stats.rewards import has_continuous_rewards, mean_interval, reward_difference, reward_table


def _trials(rewards: np.ndarray, config: str = "h/m", outcome=None) -> pd.DataFrame:
    """One row per trial from a tasks x seeds array of rewards (NaN: no reward)."""
    tasks, seeds = rewards.shape
    t, s = (a.ravel() for a in np.meshgrid(np.arange(tasks), np.arange(seeds), indexing="ij"))
    r = rewards.ravel()
    return pd.DataFrame({"task_id": [f"t{i:02d}" for i in t], "seed": s, "config": config, "reward": r,
                         "resolved": r == 1.0, "infra": False,
                         "outcome": outcome if outcome is not None else np.where(r == 1.0, "resolved", "unresolved")})


def test_mean_reward_is_the_t_interval_of_task_means_as_scipy_computes_it():
    rng = np.random.default_rng(7)
    y = rng.beta(2, 1, (12, 3))
    row, = reward_table(_trials(y))
    s = y.mean(axis=1)
    ci = stats.ttest_1samp(s, 0.0).confidence_interval(0.95)
    assert row["n_tasks"] == 12 and row["n_trials"] == 36 and row["interval"] == "t"
    assert np.isclose(row["mean_reward"], s.mean()) and np.isclose(row["se"], stats.sem(s))
    assert np.isclose(row["ci_low"], ci.low) and np.isclose(row["ci_high"], min(ci.high, 1.0))
    naive = stats.sem(y.ravel())  # 36 trials treated as independent: not what the interval rests on
    assert not np.isclose(row["se"], naive)


def test_paired_difference_matches_scipy_ttest_rel_on_shared_task_means():
    rng = np.random.default_rng(3)
    a, b = rng.beta(3, 2, (15, 2)), rng.beta(2, 2, (16, 2))
    c = reward_difference(_trials(a, "A"), _trials(b, "B"))
    sa, sb = a.mean(axis=1), b[:15].mean(axis=1)  # task t15 only in B: not shared
    res = stats.ttest_rel(sa, sb)
    ci = res.confidence_interval(0.95)
    assert c["n_shared"] == 15 and np.isclose(c["diff"], (sa - sb).mean()) and np.isclose(c["p_t"], res.pvalue)
    assert np.isclose(c["ci_low"], max(ci.low, -1)) and np.isclose(c["ci_high"], min(ci.high, 1))
    assert (c["config_a"], c["config_b"]) == ("A", "B")


def test_verifier_and_task_errors_are_left_out_and_an_agent_loss_without_reward_counts_zero():
    y = np.array([[0.5, 0.5], [1.0, 0.2]])
    df = _trials(y)
    broken = pd.DataFrame({"task_id": ["t00", "t01", "t01"], "seed": [2, 2, 3], "config": "h/m",
                           "reward": [np.nan, np.nan, np.nan], "resolved": False, "infra": [False, False, True],
                           "outcome": ["verifier_error", "task_error", "sandbox_error"]})
    row, = reward_table(pd.concat([df, broken]))
    assert row["n_trials"] == 4 and np.isclose(row["mean_reward"], (0.5 + 0.6) / 2)
    lost = pd.DataFrame({"task_id": ["t00"], "seed": [4], "config": "h/m", "reward": [np.nan], "resolved": False,
                         "infra": False, "outcome": ["tampered"]})
    row, = reward_table(pd.concat([df, lost]))  # tampered: no verifier ran, the agent's 0
    assert row["n_trials"] == 5 and np.isclose(row["mean_reward"], (1.0 / 3 + 0.6) / 2)


def test_continuous_only_when_some_reward_lies_strictly_inside_0_1():
    assert not has_continuous_rewards(_trials(np.array([[0.0, 1.0]])))
    assert has_continuous_rewards(_trials(np.array([[0.0, 0.95]])))
    assert not has_continuous_rewards(pd.DataFrame({"task_id": ["t"], "resolved": [True]}))


def test_one_task_has_no_interval_and_equal_means_have_no_width():
    assert np.isnan(mean_interval([0.4])["ci_low"]) and "fewer than 2" in mean_interval([0.4])["note"]
    same = mean_interval([0.4, 0.4, 0.4])
    assert same["ci_low"] == same["ci_high"] == same["mean"] and same["se"] == 0 and "same mean" in same["note"]


def test_interval_covers_the_true_mean_reward_about_95_percent_with_seeds_nested_in_tasks():
    """Known truth: task means x_i ~ Beta(2, 2) (population mean 0.5), 3 seeds of Beta(4 x_i, 4 (1 - x_i)) each."""
    rng = np.random.default_rng(25)
    reps, tasks, seeds = 1000, 20, 3
    x = rng.beta(2, 2, (reps, tasks))
    y = rng.beta(4 * x[..., None], 4 * (1 - x[..., None]), (reps, tasks, seeds))
    covered = naive_covered = 0
    for rep in range(reps):
        row = mean_interval(y[rep].mean(axis=1))
        covered += row["ci_low"] <= 0.5 <= row["ci_high"]
        flat = y[rep].ravel()  # trials as if independent: under-covers, the seeds of a task are alike
        half = stats.t.ppf(0.975, flat.size - 1) * stats.sem(flat)
        naive_covered += abs(flat.mean() - 0.5) <= half
    assert 0.93 <= covered / reps <= 0.97, covered / reps
    assert naive_covered / reps < covered / reps - 0.05
