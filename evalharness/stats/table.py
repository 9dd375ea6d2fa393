"""Tables over many configurations: ``score_table`` (one row each) and ``per_task_table`` ("k/n").

Vectorized with pandas groupby: the numbers equal ``score`` (default "t" method) and
``cost_per_resolved`` run on each configuration alone; see those modules for the methods.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from evalharness.stats._frame import config_labels, infra_mask, per_task, require_columns, usable_trials
from evalharness.stats.cost import cost_by_group
from evalharness.stats.summary import SMALL_N, join_notes, summarize

SCORE_COLUMNS = [
    "config", "n_tasks", "n_seeds_min", "n_seeds_max", "n_trials", "n_infra", "resolve_rate", "se",
    "ci_low", "ci_high", "interval", "naive_se", "var_between", "var_within", "mean_cost_usd",
    "cost_per_resolved", "cost_per_resolved_low", "cost_per_resolved_high", "mean_tokens", "note",
]


def score_table(df: pd.DataFrame, *, by: Sequence[str] = ("model", "harness"), level: float = 0.95,
                infra_as_failure: bool = False, small_n: int = SMALL_N) -> pd.DataFrame:
    """One row per configuration (groups of ``by``): resolve rate with interval, counts, cost, tokens.

    Configurations whose trials all failed for infrastructure reasons still get a row (NaN rates).
    """
    keys = list(by)
    require_columns(df, [*keys, "task_id", "resolved"], "score_table")
    frame = df.assign(config=config_labels(df), _infra=infra_mask(df))
    groups = frame.groupby(keys, sort=True, observed=True).agg(
        **({} if "config" in keys else {"config": ("config", "first")}), n_infra=("_infra", "sum"))
    trials, _ = usable_trials(frame, infra_as_failure=infra_as_failure)
    ts = per_task(trials, keys)
    summary = summarize(ts, keys, level=level, small_n=small_n).set_index(keys)
    cost = cost_by_group(ts, keys, level=level).set_index(keys)
    out = groups.join(summary, how="left").join(cost, how="left")
    out["n_tasks"] = out["n_tasks"].fillna(0).astype(int)
    out["n_trials"] = out["n_trials"].fillna(0).astype(int)
    out["n_infra"] = out["n_infra"].astype(int)
    out["note"] = [
        join_notes(n if isinstance(n, str) else "no usable trials", c if isinstance(c, str) else "")
        for n, c in zip(out["note"], out["cost_note"])
    ]
    out = out.reset_index()
    if "config" in keys:
        out["config"] = out["config"].astype(str)
    return out[[*[k for k in keys if k != "config"], *SCORE_COLUMNS]]


def per_task_table(df: pd.DataFrame, *, by: str = "config", infra_as_failure: bool = False) -> pd.DataFrame:
    """Task x configuration table of solve counts "k/n" (infrastructure failures left out by default).

    Cells of tasks a configuration never ran (or only ran into infrastructure failures) are empty strings.
    """
    frame = df.assign(config=config_labels(df)) if by == "config" else df
    require_columns(frame, [by, "task_id", "resolved"], "per_task_table")
    trials, _ = usable_trials(frame, infra_as_failure=infra_as_failure)
    ts = per_task(trials, [by])
    ts["cell"] = ts["k"].round().astype(int).astype(str) + "/" + ts["n"].astype(str)
    table = ts.pivot(index="task_id", columns=by, values="cell")
    all_tasks = np.sort(frame["task_id"].astype(str).unique())
    table = table.reindex(index=all_tasks).fillna("")
    table.columns.name = by
    table.index.name = "task_id"
    return table
