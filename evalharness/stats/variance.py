"""Where the variance comes from: tasks, task x configuration, seeds (capability 8).

Model: y = mu + alpha_model + beta_harness + (alpha beta) + u_task + v_{task,cfg} + e, tasks random,
configurations (model x harness) fixed, seeds as replicates.

Balanced data (every task x configuration has S seeds), expected mean squares of the two-way
mixed ANOVA (Montgomery, "Design and Analysis of Experiments", ch. 13): MS_w estimates
sigma_seed^2; sigma_tc^2 = (MS_tc - MS_w) / S; sigma_task^2 = (MS_task - MS_tc) / (C S), each
truncated at 0. Configuration effects (and their model / harness / interaction split when the
configurations form a full model x harness grid) are tested against MS_task x cfg, not the seed
residual: seeds are pseudo-replicates, and F against MS_w overstates significance.

Unbalanced data: REML fit of ``statsmodels`` MixedLM with a random task intercept and a task x
configuration variance component (``mixed_components``).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats

from evalharness.stats._frame import config_labels, usable_trials


@dataclass(frozen=True)
class VarianceDecomposition:
    method: str
    var_task: float
    var_task_config: float
    var_seed: float
    anova: pd.DataFrame
    """Source, df, SS, MS, F, p (effects tested against task x configuration)."""
    note: str = ""

    def to_dict(self) -> dict:
        out = asdict(self)
        out["anova"] = self.anova.to_dict(orient="records")
        return out


def _cells(df: pd.DataFrame, infra_as_failure: bool) -> pd.DataFrame:
    trials, _ = usable_trials(df.assign(config=config_labels(df)), infra_as_failure=infra_as_failure)
    return trials


def is_balanced(trials: pd.DataFrame) -> bool:
    """Every task x configuration cell present with the same number of trials."""
    counts = trials.groupby(["task_id", "config"]).size().unstack()
    return bool(counts.notna().all().all() and counts.stack().nunique() == 1)


def variance_components(df: pd.DataFrame, *, infra_as_failure: bool = False) -> VarianceDecomposition:
    """EMS decomposition and ANOVA for balanced data; MixedLM (REML) otherwise."""
    trials = _cells(df, infra_as_failure)
    if not is_balanced(trials):
        return mixed_components(df, infra_as_failure=infra_as_failure)
    y = trials["_y"].to_numpy(float)
    cell = trials.groupby(["task_id", "config"], sort=True)["_y"].mean().unstack()
    t_n, c_n = cell.shape
    s_n = len(trials) // (t_n * c_n)
    grand = cell.to_numpy().mean()
    task_m, cfg_m = cell.mean(axis=1), cell.mean(axis=0)
    ss_task = c_n * s_n * float(((task_m - grand) ** 2).sum())
    ss_cfg = t_n * s_n * float(((cfg_m - grand) ** 2).sum())
    inter = cell.sub(task_m, axis=0).sub(cfg_m, axis=1) + grand
    ss_tc = s_n * float((inter.to_numpy() ** 2).sum())
    ss_w = float(((y - trials.join(cell.stack().rename("_cm"), on=["task_id", "config"])["_cm"]) ** 2).sum())
    df_task, df_cfg, df_tc, df_w = t_n - 1, c_n - 1, (t_n - 1) * (c_n - 1), t_n * c_n * (s_n - 1)
    ms_task, ms_tc = ss_task / df_task, ss_tc / df_tc if df_tc else np.nan
    ms_w = ss_w / df_w if df_w else np.nan
    rows = [("task", df_task, ss_task), ("config", df_cfg, ss_cfg), ("task:config", df_tc, ss_tc),
            ("seed (residual)", df_w, ss_w)]
    anova = pd.DataFrame(rows, columns=["source", "df", "ss"])
    anova["ms"] = anova["ss"] / anova["df"].where(anova["df"] > 0)
    extra = _factorial_split(trials, cfg_m, t_n * s_n)
    if extra is not None:
        anova = pd.concat([anova.iloc[:2], extra, anova.iloc[2:]], ignore_index=True)
    fixed = ~anova["source"].isin(["task", "task:config", "seed (residual)"])
    anova["f"] = np.where(fixed, anova["ms"] / ms_tc, np.nan)
    anova["p"] = np.where(fixed, stats.f.sf(anova["f"], anova["df"], df_tc), np.nan)
    note = "" if s_n >= 2 else "one seed per cell: seed and task x configuration variance not separable"
    var_seed = ms_w if s_n >= 2 else np.nan
    var_tc = max((ms_tc - ms_w) / s_n, 0.0) if s_n >= 2 else np.nan
    return VarianceDecomposition("balanced EMS", max((ms_task - ms_tc) / (c_n * s_n), 0.0), var_tc, var_seed,
                                 anova, note)


def _factorial_split(trials: pd.DataFrame, cfg_m: pd.Series, reps: int) -> pd.DataFrame | None:
    """Model, harness and model:harness rows when configurations form a full model x harness grid."""
    if not {"model", "harness"} <= set(trials.columns):
        return None
    keys = trials.groupby("config")[["model", "harness"]].first()
    grid = pd.DataFrame({"m": cfg_m}).join(keys).pivot(index="model", columns="harness", values="m")
    if grid.shape[0] < 2 or grid.shape[1] < 2 or grid.isna().any().any():
        return None
    grand = grid.to_numpy().mean()
    row_m, col_m = grid.mean(axis=1), grid.mean(axis=0)
    a, b = grid.shape
    ss_m = reps * b * float(((row_m - grand) ** 2).sum())
    ss_h = reps * a * float(((col_m - grand) ** 2).sum())
    ss_mh = reps * float(((grid.sub(row_m, axis=0).sub(col_m, axis=1) + grand) ** 2).to_numpy().sum())
    out = pd.DataFrame([("model", a - 1, ss_m), ("harness", b - 1, ss_h),
                        ("model:harness", (a - 1) * (b - 1), ss_mh)], columns=["source", "df", "ss"])
    out["ms"] = out["ss"] / out["df"]
    return out


def mixed_components(df: pd.DataFrame, *, infra_as_failure: bool = False) -> VarianceDecomposition:
    """REML MixedLM: random task intercept + task x configuration component; seed = residual."""
    data = _cells(df, infra_as_failure).rename(columns={"_y": "y"}).reset_index(drop=True)
    data = data.assign(task=data["task_id"].astype(str), cfg=data["config"].astype(str))
    factorial = {"model", "harness"} <= set(data.columns) and data["model"].nunique() > 1 \
        and data["harness"].nunique() > 1
    fixed = "y ~ C(model, Sum) * C(harness, Sum)" if factorial else "y ~ C(cfg, Sum)"
    model = smf.mixedlm(fixed, data, groups="task", re_formula="1", vc_formula={"cfg": "0 + C(cfg)"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = model.fit(reml=True, method=["lbfgs", "powell"])
    table = fit.wald_test_terms(scalar=True).table
    anova = table.reset_index().rename(columns={"index": "source", "statistic": "chi2", "pvalue": "p",
                                                 "df_constraint": "df"})
    anova = anova.loc[anova["source"] != "Intercept"].reset_index(drop=True)
    note = "; ".join(sorted({str(w.message) for w in caught}))
    return VarianceDecomposition("REML MixedLM (Wald chi2 tests, sum coding)", float(fit.cov_re.iloc[0, 0]),
                                 float(fit.vcomp[0]), float(fit.scale), anova, note)
