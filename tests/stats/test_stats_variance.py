"""Variance decomposition: EMS against statsmodels ANOVA and MixedLM.

Pins: testing a harness or model effect against the seed residual (pseudo-replication), which
overstates significance; the F test must use the task x configuration mean square.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

from evalharness.stats import mixed_components, variance_components


def _grid(seed=0, tasks=40, seeds=3, sd_task=0.2, sd_tc=0.15, sd_seed=0.3, model_effect=0.05):
    rng = np.random.default_rng(seed)
    u = rng.normal(0, sd_task, tasks)
    frames = []
    for m in ("m1", "m2"):
        for h in ("h1", "h2"):
            v = rng.normal(0, sd_tc, tasks)
            for s in range(seeds):
                y = 0.5 + u + v + rng.normal(0, sd_seed, tasks) + (model_effect if m == "m2" else 0.0)
                frames.append(pd.DataFrame({"task_id": [f"t{i:02d}" for i in range(tasks)], "model": m,
                                            "harness": h, "config": f"{h}/{m}", "seed": s, "resolved": y}))
    return pd.concat(frames, ignore_index=True)


def test_sums_of_squares_equal_statsmodels_anova():
    df = _grid()
    res = variance_components(df)
    ref = sm.stats.anova_lm(smf.ols("resolved ~ C(task_id) * C(config)", df).fit())
    table = res.anova.set_index("source")
    assert table.loc["task", "ss"] == pytest.approx(ref.loc["C(task_id)", "sum_sq"], rel=1e-9)
    assert table.loc["config", "ss"] == pytest.approx(ref.loc["C(config)", "sum_sq"], rel=1e-9)
    assert table.loc["task:config", "ss"] == pytest.approx(ref.loc["C(task_id):C(config)", "sum_sq"], rel=1e-9)
    assert table.loc["seed (residual)", "ss"] == pytest.approx(ref.loc["Residual", "sum_sq"], rel=1e-9)
    split = table.loc[["model", "harness", "model:harness"], "ss"].sum()
    assert split == pytest.approx(table.loc["config", "ss"], rel=1e-9)


def test_effects_are_tested_against_task_by_config():
    df = _grid(model_effect=0.08)
    table = variance_components(df).anova.set_index("source")
    ms_tc, df_tc = table.loc["task:config", "ms"], table.loc["task:config", "df"]
    f = table.loc["model", "ms"] / ms_tc
    assert table.loc["model", "f"] == pytest.approx(f)
    assert table.loc["model", "p"] == pytest.approx(stats.f.sf(f, 1, df_tc))
    wrong_p = stats.f.sf(table.loc["model", "ms"] / table.loc["seed (residual)", "ms"], 1,
                         table.loc["seed (residual)", "df"])
    assert wrong_p < table.loc["model", "p"]  # the seed residual overstates significance


def test_components_match_mixedlm_on_balanced_data():
    df = _grid(seed=3)
    ems = variance_components(df)
    reml = mixed_components(df)
    assert ems.method == "balanced EMS" and reml.method.startswith("REML")
    assert reml.var_task == pytest.approx(ems.var_task, rel=0.02)
    assert reml.var_task_config == pytest.approx(ems.var_task_config, rel=0.05, abs=1e-4)
    assert reml.var_seed == pytest.approx(ems.var_seed, rel=0.01)


def test_components_recover_simulated_truth():
    est = [variance_components(_grid(seed=s, tasks=60, seeds=4)) for s in range(10)]
    assert np.mean([e.var_task for e in est]) == pytest.approx(0.2**2, rel=0.25)
    assert np.mean([e.var_task_config for e in est]) == pytest.approx(0.15**2, rel=0.25)
    assert np.mean([e.var_seed for e in est]) == pytest.approx(0.3**2, rel=0.05)


def test_unbalanced_design_uses_mixedlm():
    df = _grid(seed=4, tasks=30)
    df = df.drop(df.index[(df["config"] == "h1/m1") & (df["seed"] == 2)])
    res = variance_components(df)
    assert res.method.startswith("REML")
    assert set(res.anova["source"]) >= {"C(model, Sum)", "C(harness, Sum)"}
    assert res.var_seed == pytest.approx(0.09, rel=0.25)


def test_one_seed_per_cell_says_what_is_not_separable():
    res = variance_components(_grid(seeds=1))
    assert np.isnan(res.var_seed) and np.isnan(res.var_task_config) and "not separable" in res.note
