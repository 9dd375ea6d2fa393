"""DataFrame plumbing shared by the statistics layer: column checks, infrastructure filtering, per-task sums.

Rule zero (Miller 2024, "Adding Error Bars to Evals", arXiv 2411.00640): the unit of analysis is the
task. Seeds are repeated measures of a task, so every statistic starts from per-task aggregates
(successes ``k``, trials ``n``, sum of squares ``ss``), never from trials treated as independent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from evalharness.errors import UserError
from evalharness.types import Outcome

_Y = "_y"  # outcome as float (1.0 resolved), after infrastructure handling
TASK_ERROR = Outcome.TASK_ERROR.value
NOT_THE_AGENTS = (TASK_ERROR, Outcome.VERIFIER_ERROR.value)
"""Outcomes of a broken task or verifier (a Harbor verifier that gave no valid reward): left out of rates."""


def require_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise UserError naming the missing columns of the trials table."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UserError(
            f"{what}: the trials table lacks column(s) {', '.join(missing)}",
            hint="expected the columns of evalharness.types.TRIAL_COLUMNS; "
            f"got {', '.join(map(str, df.columns)) or 'no columns'}",
        )


def infra_mask(df: pd.DataFrame) -> pd.Series:
    """True where a trial failed for infrastructure reasons (column ``infra``; absent means none did)."""
    if "infra" not in df.columns:
        return pd.Series(False, index=df.index)
    return df["infra"].fillna(False).astype(bool)


def task_error_mask(df: pd.DataFrame) -> pd.Series:
    """True where the task itself was broken (outcome ``task_error``, or ``verifier_error``: its verifier gave no
    valid reward): neither the agent's result nor infrastructure."""
    if "outcome" not in df.columns:
        return pd.Series(False, index=df.index)
    return df["outcome"].astype(str).isin(NOT_THE_AGENTS)


def usable_trials(
    df: pd.DataFrame, *, infra_as_failure: bool = False, value: str = "resolved"
) -> tuple[pd.DataFrame, int]:
    """Return (trials with a float outcome column ``_y``, number of infrastructure trials).

    Infrastructure failures are left out of rates by default; ``infra_as_failure=True`` counts
    them as unresolved instead. Either way the count is returned so reports can show it.
    Task errors (a broken task, outcome ``task_error``) are always left out: they say nothing
    about the agent; reports name them apart.
    """
    require_columns(df, ["task_id", value], "statistics")
    df = df.loc[~task_error_mask(df)]
    infra = infra_mask(df)
    out = df.copy() if infra_as_failure else df.loc[~infra].copy()
    y = out[value].astype(float)
    if infra_as_failure:
        y = y.where(~infra.loc[out.index], 0.0)
    out[_Y] = y
    return out, int(infra.sum())


def config_label(df: pd.DataFrame) -> str:
    """The single configuration label of ``df`` ('harness/model'); raise if it holds several."""
    labels = config_labels(df).unique() if len(df) else np.array([], dtype=object)
    if len(labels) > 1:
        raise ValueError(
            f"expected trials of one configuration, got {len(labels)}: {', '.join(map(str, labels[:5]))}"
            " (filter the DataFrame, or use score_table for several)"
        )
    return str(labels[0]) if len(labels) else ""


def config_labels(df: pd.DataFrame) -> pd.Series:
    """Per-row configuration label: column ``config`` if present, else 'harness/model'."""
    if "config" in df.columns:
        return df["config"].astype(str)
    if {"harness", "model"} <= set(df.columns):
        return df["harness"].astype(str) + "/" + df["model"].astype(str)
    return pd.Series("", index=df.index)


def per_task(trials: pd.DataFrame, keys: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (keys..., task_id): k successes, n trials, ss sum of squares, mean, cost and tokens.

    Cost columns: ``cost`` = mean cost over trials with a known cost (NaN when none is known),
    ``y_cost`` = mean outcome over those same trials, ``n_cost`` = how many had a known cost.
    """
    t = trials.assign(
        _y2=trials[_Y] ** 2,
        _c=trials["cost_usd"].astype(float) if "cost_usd" in trials else np.nan,
        _tok=trials["total_tokens"].astype(float) if "total_tokens" in trials else np.nan,
    )
    t["_yc"] = t[_Y].where(t["_c"].notna())
    g = t.groupby([*keys, "task_id"], sort=True, observed=True)
    out = g.agg(
        k=(_Y, "sum"), n=(_Y, "count"), ss=("_y2", "sum"), cost=("_c", "mean"),
        y_cost=("_yc", "mean"), n_cost=("_c", "count"), tokens=("_tok", "mean"),
    ).reset_index()
    out["mean"] = out["k"] / out["n"]
    return out


def within_variance(ts: pd.DataFrame) -> pd.Series:
    """Per-task sample variance of the outcome over seeds (ddof=1); NaN for tasks with one trial.

    For a binary outcome this is p(1-p)K/(K-1), the unbiased estimator in Miller 2024, section 4.
    """
    n = ts["n"].astype(float)
    var = (ts["ss"] - ts["k"] ** 2 / n) / (n - 1)
    return var.where(n >= 2).clip(lower=0.0)


def cluster_of_tasks(trials: pd.DataFrame, cluster: str) -> pd.Series:
    """Cluster key per task (first value of ``cluster``); an empty key makes the task its own cluster."""
    require_columns(trials, [cluster], "clustered interval")
    key = trials.groupby("task_id", sort=True)[cluster].first().astype(str)
    empty = key.eq("") | key.eq("nan")
    return key.where(~empty, "task:" + key.index.to_series().astype(str))
