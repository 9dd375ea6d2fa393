"""Paired A/B comparison on shared tasks, checked against scipy/statsmodels.

Pins: comparing two configurations with a pooled z test on trials (ignores pairing and seeds),
and silently comparing different task sets (dropped tasks must be listed with a reason).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from evalharness.stats import adjust_pvalues, compare, compare_all, paired_t, signflip_pvalue


def _pair(make_trials, seed=0, n=30, seeds=3):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    a = rng.binomial(seeds, np.clip(p + 0.1, 0, 1))
    b = rng.binomial(seeds, p)
    return make_trials(a, seeds, model="a"), make_trials(b, seeds, model="b"), a / seeds, b / seeds


def test_compare_matches_scipy_ttest_rel(make_trials):
    df_a, df_b, sa, sb = _pair(make_trials)
    c = compare(df_a, df_b)
    ref = stats.ttest_rel(sa, sb)
    assert (c.t, c.p_t, c.df) == pytest.approx((ref.statistic, ref.pvalue, ref.df), rel=1e-10)
    ci = ref.confidence_interval(0.90)
    c90 = compare(df_a, df_b, level=0.90)
    assert (c90.ci_low, c90.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert c.rate_a - c.rate_b == pytest.approx(c.diff)
    assert c.ci_low <= c.diff <= c.ci_high


def test_paired_t_vectorized_equals_scipy():
    d = np.random.default_rng(2).normal(0.1, 1, (50, 25))
    r = paired_t(d)
    ref = stats.ttest_1samp(d, 0.0, axis=1)
    assert np.allclose(r["t"], ref.statistic) and np.allclose(r["p"], ref.pvalue)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_signflip_exact_matches_scipy_permutation_test(seed):
    rng = np.random.default_rng(seed)
    d = rng.integers(-3, 4, 14) / 3  # lattice values, some zeros
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
    p_lattice, how = signflip_pvalue(d, lattice=3)
    assert how.startswith("exact (lattice") and p_lattice == pytest.approx(ref, rel=1e-9)
    p_enum, how = signflip_pvalue(d)
    assert how.startswith("exact (enumeration") and p_enum == pytest.approx(ref, rel=1e-9)
    cont = rng.normal(0.2, 1, 12)
    ref = stats.permutation_test((cont,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
    assert signflip_pvalue(cont)[0] == pytest.approx(ref, rel=1e-9)


def test_signflip_monte_carlo_close_to_exact_and_reproducible():
    rng = np.random.default_rng(4)
    d = rng.integers(-4, 5, 300) / 4 + 0.02 * rng.random(300)  # off-lattice, too many to enumerate
    p_mc, how = signflip_pvalue(d, n_resamples=20000, seed=9)
    assert how.startswith("monte carlo")
    assert signflip_pvalue(d, n_resamples=20000, seed=9)[0] == p_mc
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=20000,
                                 rng=np.random.default_rng(1)).pvalue
    assert abs(p_mc - ref) < 0.02
    z = d * 4  # a large lattice problem is still exact
    p_exact, how = signflip_pvalue(np.round(z) / 4, lattice=4)
    assert how.startswith("exact (lattice") and 0.0 < p_exact <= 1.0


def test_dropped_tasks_have_reasons_and_unpaired_test(make_trials):
    a = make_trials([1, 0, 1, 1, 0, 1, 1, 1], 1, model="a")
    b = make_trials([0, 0, 1, 0, 1, 0, 1, 0, 1, 1], 1, model="b")
    a.loc[a["task_id"] == "task-001", "infra"] = True
    c = compare(a, b)
    assert c.n_shared == 7
    assert c.dropped == {"task-001": "only infrastructure failures in A", "task-008": "not run by A",
                         "task-009": "not run by A"}
    xa, xb = 6, 5  # all usable tasks of each side: A 6/7, B 5/10
    assert c.unpaired_method == "boschloo exact"
    assert c.p_unpaired == pytest.approx(stats.boschloo_exact([[xa, 1], [xb, 5]]).pvalue, rel=1e-9)
    assert c.n_infra_a == 1


def test_unpaired_with_seeds_is_welch_on_task_means(make_trials):
    a = make_trials([2, 1, 2, 0, 2, 1], 2, model="a")
    b = make_trials([1, 1, 0, 0, 2], 2, model="b")
    c = compare(a, b)
    ref = stats.ttest_ind(np.array([2, 1, 2, 0, 2, 1]) / 2, np.array([1, 1, 0, 0, 2]) / 2, equal_var=False)
    assert c.unpaired_method.startswith("welch") and c.p_unpaired == pytest.approx(ref.pvalue, rel=1e-10)


def test_no_shared_tasks_is_nan_with_reason(make_trials):
    a = make_trials([1, 1], 2, model="a")
    b = make_trials([0, 0, 1, 1], 2, model="b").query("task_id in ['task-002', 'task-003']")
    c = compare(a, b)
    assert c.n_shared == 0 and "no shared tasks" in c.note
    assert all(math.isnan(v) for v in (c.diff, c.se, c.ci_low, c.ci_high, c.p_t, c.p_signflip, c.p_a_better))


def test_one_shared_task_is_nan_not_zero(make_trials):
    c = compare(make_trials([2], 2, model="a"), make_trials([1], 2, model="b"))
    assert c.diff == 0.5 and math.isnan(c.se) and math.isnan(c.p_t) and "n < 2" in c.note


def test_identical_configurations(make_trials):
    a = make_trials([2, 1, 0, 2], 2, model="a")
    c = compare(a, a.assign(model="b", config="h/b"))
    assert c.diff == 0 and c.p_signflip == 1.0 and math.isnan(c.t) and "equal" in c.note


def test_bayes_probability_matches_monte_carlo(make_trials):
    df_a, df_b, sa, sb = _pair(make_trials, seed=3)
    c = compare(df_a, df_b)
    rng = np.random.default_rng(0)
    n = len(sa)
    draws_a = rng.beta(sa.sum() + 1, n - sa.sum() + 1, 1_000_000)
    draws_b = rng.beta(sb.sum() + 1, n - sb.sum() + 1, 1_000_000)
    assert c.p_a_better == pytest.approx(np.mean(draws_a > draws_b), abs=0.003)


def test_cost_per_resolved_per_side(make_trials):
    c = compare(make_trials([1, 1, 0, 1], 1, model="a", cost=0.3), make_trials([1, 0, 0, 1], 1, model="b", cost=0.1))
    assert c.cost_per_resolved_a == pytest.approx(0.3 * 4 / 3) and c.cost_per_resolved_b == pytest.approx(0.2)


def test_row_order_changes_nothing(make_trials):
    df_a, df_b, _, _ = _pair(make_trials, seed=5)
    c1 = compare(df_a, df_b).to_dict()
    c2 = compare(df_a.sample(frac=1, random_state=1), df_b.sample(frac=1, random_state=2)).to_dict()
    assert c1 == c2


def test_compare_all_with_holm(make_trials):
    rng = np.random.default_rng(8)
    p = rng.beta(2, 2, 40)
    frames = [make_trials(rng.binomial(3, np.clip(p + shift, 0, 1)), 3, model=f"m{i}")
              for i, shift in enumerate([0.0, 0.0, 0.1, -0.15])]
    df = pd.concat(frames, ignore_index=True)
    table = compare_all(df)
    assert list(table["config"]) == ["h/m1", "h/m2", "h/m3"] and (table["reference"] == "h/m0").all()
    direct = compare(frames[2], frames[0])
    row = table.set_index("config").loc["h/m2"]
    assert row["diff"] == pytest.approx(direct.diff) and row["p_t"] == pytest.approx(direct.p_t)
    assert np.allclose(table["p_adjusted"], multipletests(table["p_t"], method="holm")[1])


def test_adjust_keeps_nan_and_rejects_unknown_method():
    out = adjust_pvalues([0.01, np.nan, 0.04], "holm")
    assert math.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.04)
    with pytest.raises(ValueError, match="holm"):
        adjust_pvalues([0.1], "bogus")


def test_summaries_are_json_serializable(make_trials):
    import json

    from evalharness.stats import cost_per_resolved, score

    df_a, df_b, _, _ = _pair(make_trials, seed=6)
    for summary in (compare(df_a, df_b), score(df_a), score(df_a, cluster="repo"), cost_per_resolved(df_a)):
        back = json.loads(json.dumps(summary.to_dict()))
        assert set(back) == {str(k) for k in summary.to_dict()}
