"""The merge section (merged_column, merge_table) against a worked example computed here with scipy/statsmodels.

Pins: several reviews of one task counted as independent (the interval must be task-level); a superseded verdict
counted; the golden baseline's normalisation by Katz's independent-counts interval although agent and gold
reviews of a task are correlated; undefined numbers printed as numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalharness.stats import compare, compare_all
from evalharness.stats.merge import merge_table, merged_column

def example():
    """h/a: 6 tasks x 2 trials, 2 reviewers each; h/b: 6 tasks x 1 trial, 1 reviewer, t5 unreviewed; gold: 2 each."""
    rows, reviews = [], []
    # config A: 6 tasks x 2 trials, each trial reviewed by reviewers r1, r2
    resolved_a = {0: (1, 1), 1: (1, 0), 2: (1, 1), 3: (0, 0), 4: (1, 1), 5: (1, 0)}
    verdict_a = {  # (task, seed) -> (r1, r2)
        (0, 0): ("merge", "merge"), (0, 1): ("merge", "merge_after_changes"),
        (1, 0): ("reject", "merge"), (1, 1): ("reject", "reject"),
        (2, 0): ("merge", "merge"), (2, 1): ("merge", "merge"),
        (3, 0): ("reject", "reject"), (3, 1): ("reject", "merge_after_changes"),
        (4, 0): ("merge_after_changes", "reject"), (4, 1): ("merge", "reject"),
        (5, 0): ("merge", "merge"), (5, 1): ("reject", "reject")}
    for t, res in resolved_a.items():
        for s in (0, 1):
            tid = f"a/t{t}/s{s}"
            rows.append(dict(run_id="run-a", trial_id=tid, pack="p", task_id=f"t{t}", config="h/a",
                             resolved=bool(res[s])))
            for r, v in zip(("r1", "r2"), verdict_a[(t, s)]):
                reasons = () if v == "merge" else (("code_quality",) if r == "r1" else ("tests", "out_of_scope"))
                reviews.append(dict(pack="p", task_id=f"t{t}", arm="agent", run_id="run-a", trial_id=tid, reviewer=r,
                                    verdict=v, reasons=reasons, seconds=30.0, reviewed_at=f"2026-01-01T00:0{t}:00"))
    # config B: 6 tasks x 1 trial, one reviewer; task t5 not reviewed
    res_b = [1, 1, 0, 1, 1, 0]; ver_b = ["merge", "reject", "reject", "merge", "reject", None]
    for t in range(6):
        tid = f"b/t{t}"
        rows.append(dict(run_id="run-b", trial_id=tid, pack="p", task_id=f"t{t}", config="h/b",
                         resolved=bool(res_b[t])))
        if ver_b[t]:
            reviews.append(dict(pack="p", task_id=f"t{t}", arm="agent", run_id="run-b", trial_id=tid, reviewer="r1",
                                verdict=ver_b[t], reasons=() if ver_b[t] == "merge" else ("core_functionality",),
                                seconds=20.0, reviewed_at="2026-01-02T00:00:00"))
    # an older verdict of r1 on b/t1, superseded by the later "reject"
    reviews.append(dict(pack="p", task_id="t1", arm="agent", run_id="run-b", trial_id="b/t1", reviewer="r1",
                        verdict="merge", reasons=(), seconds=5.0, reviewed_at="2026-01-01T00:00:00"))
    # gold: tasks t0..t5, reviewers r1 and r2
    gold = {0: ("merge", "merge"), 1: ("merge", "reject"), 2: ("merge", "merge"), 3: ("reject", "merge"),
            4: ("merge", "merge"), 5: ("merge", "merge_after_changes")}
    for t, vs in gold.items():
        for r, v in zip(("r1", "r2"), vs):
            reviews.append(dict(pack="p", task_id=f"t{t}", arm="gold", run_id=None, trial_id=None, reviewer=r,
                                verdict=v, reasons=() if v == "merge" else ("code_quality",), seconds=10.0,
                                reviewed_at="2026-01-03T00:00:00"))
    return pd.DataFrame(rows), pd.DataFrame(reviews)


MERGED_A = {0: (1.0, 0.5), 1: (0.5, 0.0), 2: (1.0, 1.0), 3: (0.0, 0.0), 4: (0.0, 0.5), 5: (1.0, 0.0)}
GOLD = {0: 1.0, 1: 0.5, 2: 1.0, 3: 0.5, 4: 1.0, 5: 0.5}


def test_merged_column_is_the_share_of_latest_merge_verdicts():
    trials, reviews = example()
    m = merged_column(trials, reviews)
    expected = [v for t in range(6) for v in MERGED_A[t]] + [1.0, 0.0, 0.0, 1.0, 0.0, np.nan]
    assert m.index.equals(trials.index)
    np.testing.assert_array_equal(m.to_numpy(), np.array(expected))
    either = merged_column(trials, reviews, accept=("merge", "merge_after_changes"))
    assert either.iloc[1] == 1.0 and either.iloc[7] == 0.5


def test_merge_table_reproduces_the_worked_example():
    trials, reviews = example()
    rows = {r["config"]: r for r in merge_table(trials, reviews)}
    a, b = rows["h/a"], rows["h/b"]
    # config A: task means of the per-trial shares, t over 6 tasks (clipped to [0, 1])
    task_a = np.array([np.mean(MERGED_A[t]) for t in range(6)])
    lo, hi = stats.t.interval(0.95, 5, loc=task_a.mean(), scale=stats.sem(task_a))
    assert (a["n_reviewed_trials"], a["n_reviewed_tasks"], a["n_reviews"]) == (12, 6, 24)
    assert a["merge_rate"] == pytest.approx(11 / 24) and a["interval"] == "t"
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((max(lo, 0), min(hi, 1)), rel=1e-12)
    assert a["merge_or_changes_rate"] == pytest.approx(np.mean([1, 0.25, 1, 0.25, 0.5, 0.5]))
    # config B: one review per task, 2 of 5 merged (the superseded "merge" of t1 not counted): Wilson
    assert (b["n_reviewed_trials"], b["n_reviewed_tasks"], b["n_reviews"]) == (5, 5, 5)
    assert b["interval"] == "wilson" and (b["ci_low"], b["ci_high"]) == pytest.approx(
        proportion_confint(2, 5, alpha=0.05, method="wilson"), rel=1e-12)
    # gold: 2 reviewers per task, t over 6 task means
    g = np.array([GOLD[t] for t in range(6)])
    glo, ghi = stats.t.interval(0.95, 5, loc=g.mean(), scale=stats.sem(g))
    assert (a["gold_rate"], a["gold_n_tasks"], a["gold_n_reviews"]) == (pytest.approx(0.75), 6, 12)
    assert (a["gold_ci_low"], a["gold_ci_high"]) == pytest.approx((glo, min(ghi, 1.0)), rel=1e-12)
    assert b["gold_rate"] == a["gold_rate"]
    # normalised: delta method on log(mean_a / mean_gold) with the task-clustered covariance of the two means
    for row, agent in ((a, task_a), (b, np.array([1.0, 0.0, 0.0, 1.0, 0.0]))):
        ratio, se = _delta_log_ratio(agent, g)
        q = stats.t.ppf(0.975, 5)
        assert row["normalised"] == pytest.approx(agent.mean() / 0.75, rel=1e-12)
        assert (row["norm_ci_low"], row["norm_ci_high"]) == pytest.approx(
            (ratio * math.exp(-q * se), ratio * math.exp(q * se)), rel=1e-9)
    # gap: grader minus reviewers on the reviewed trials, per task
    res_a = np.array([1, 0.5, 1, 0, 1, 0.5])
    d = res_a - task_a
    dlo, dhi = stats.ttest_1samp(d, 0).confidence_interval(0.95)
    assert a["resolve_rate_reviewed"] == pytest.approx(4 / 6) and a["gap"] == pytest.approx(d.mean())
    assert a["gap_interval"] == "t" and (a["gap_ci_low"], a["gap_ci_high"]) == pytest.approx((dlo, dhi), rel=1e-12)
    # B: binary on 5 tasks: grader-only 2 (t1, t4), reviewer-only 0 -> Bonett-Price: (2 + 1)/7 - (0 + 1)/7
    assert b["gap"] == pytest.approx(0.4) and b["gap_interval"] == "bonett-price"
    p10, p01 = 3 / 7, 1 / 7
    half = stats.norm.ppf(0.975) * math.sqrt((p10 + p01 - (p10 - p01) ** 2) / 7)
    assert (b["gap_ci_low"], b["gap_ci_high"]) == pytest.approx((2 / 7 - half, min(2 / 7 + half, 1.0)), rel=1e-12)
    # resolved but not merged by most reviewers, with the reasons of their non-merge reviews
    assert (a["resolved_rejected"], a["rejected_reasons"]) == (1, {"code_quality": 1, "out_of_scope": 1, "tests": 1})
    assert (b["resolved_rejected"], b["rejected_reasons"]) == (2, {"core_functionality": 2})
    for row in rows.values():
        assert 0 <= row["ci_low"] <= row["merge_rate"] <= row["ci_high"] <= 1
        assert -1 <= row["gap_ci_low"] <= row["gap_ci_high"] <= 1


def _delta_log_ratio(agent: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """Stacked OLS y = mean_agent * [agent] + mean_gold * [gold] clustered by task (statsmodels), delta method."""
    y = np.r_[agent, gold]
    x = np.c_[np.r_[np.ones(agent.size), np.zeros(gold.size)], np.r_[np.zeros(agent.size), np.ones(gold.size)]]
    groups = np.r_[np.arange(agent.size), np.arange(gold.size)]
    fit = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    c = np.unique(groups).size
    cov = fit.cov_params() * c / (c - 1)
    ma, mg = fit.params
    grad = np.array([1 / ma, -1 / mg])
    return ma / mg, float(np.sqrt(grad @ cov @ grad))


def test_undefined_numbers_are_nan_with_a_note():
    trials, reviews = example()
    no_gold = merge_table(trials, reviews.loc[reviews["arm"] == "agent"])
    assert all(math.isnan(r["gold_rate"]) and math.isnan(r["normalised"]) for r in no_gold)
    assert all("no gold reviews" in r["note"] for r in no_gold)
    zero_gold = reviews.assign(verdict=np.where(reviews["arm"] == "gold", "reject", reviews["verdict"]))
    rows = merge_table(trials, zero_gold)
    assert all(r["gold_rate"] == 0 and math.isnan(r["normalised"]) and "gold rate is 0" in r["note"] for r in rows)
    one = trials.loc[trials["task_id"] == "t0"]
    row = merge_table(one, reviews)[0]
    assert math.isnan(row["ci_low"]) and math.isnan(row["gap_ci_low"]) and "fewer than 2" in row["note"]
    assert merge_table(trials, reviews.iloc[:0]) == []


def test_compare_on_merged_pairs_reviewed_tasks_only():
    trials, reviews = example()
    frame = trials.assign(merged=merged_column(trials, reviews))
    a, b = frame.loc[frame["config"] == "h/a"], frame.loc[frame["config"] == "h/b"]
    c = compare(a, b, value="merged")
    task_a = np.array([np.mean(MERGED_A[t]) for t in range(5)])
    d = task_a - np.array([1.0, 0.0, 0.0, 1.0, 0.0])
    ref = stats.ttest_rel(task_a, np.array([1.0, 0.0, 0.0, 1.0, 0.0]))
    assert c.n_shared == 5 and c.diff == pytest.approx(d.mean()) and c.p_t == pytest.approx(ref.pvalue, rel=1e-10)
    assert "1 trial(s) without a 'merged' value (not reviewed) left out" in c.note
    assert c.interval == "t" and -1 <= c.ci_low <= c.ci_high <= 1
    table = compare_all(frame, reference="h/b", value="merged")
    row = table.iloc[0]
    assert row["diff"] == pytest.approx(c.diff) and row["interval"] == c.interval and "not reviewed" in row["note"]
    default = compare(a, b)
    assert default.n_shared == 6 and "not reviewed" not in default.note
    assert c.dropped == {"t5": "no trial with a 'merged' value in B"}
    assert compare_all(frame, reference="h/b", value="merged")["n_dropped"].iloc[0] == 1
    with pytest.raises(ValueError, match="no trial with a 'merged' value"):
        compare_all(frame.assign(merged=np.where(frame["config"] == "h/b", np.nan, frame["merged"])),
                    reference="h/b", value="merged")
