"""Many comparisons at once: multiplicity-adjusted p-values and every configuration against a reference.

- Holm 1979 step-down (family-wise error) and Benjamini & Hochberg 1995 step-up (false discovery
  rate), through ``statsmodels.stats.multitest.multipletests``. NaN p-values stay NaN and do not
  count toward the number of tests.
- ``compare_all`` runs the paired ``compare`` of each configuration against the reference (the
  first configuration in sorted order unless given) and adjusts the paired-t p-values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from evalharness.stats._frame import config_labels, infra_mask, per_task, require_columns, usable_trials
from evalharness.stats.paired import TaskSide, compare_tasks, unreviewed_note
from evalharness.stats.summary import join_notes

ADJUST_METHODS = ("holm", "fdr_bh", "bonferroni")


def adjust_pvalues(p, method: str = "holm") -> np.ndarray:
    """Adjusted p-values (Holm, Benjamini-Hochberg "fdr_bh", or Bonferroni); NaN entries stay NaN.

    Reject hypothesis i at level alpha when adjusted[i] <= alpha.
    """
    if method not in ADJUST_METHODS:
        raise ValueError(f"unknown p-value adjustment {method!r}; choose one of {', '.join(ADJUST_METHODS)}")
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method=method)[1]
    return out


def compare_all(df: pd.DataFrame, *, reference: str | None = None, level: float = 0.95,
                adjust: str = "holm", infra_as_failure: bool = False, seed: int = 0,
                value: str = "resolved") -> pd.DataFrame:
    """Paired comparison of every configuration against ``reference``, with adjusted p-values.

    Columns: config, reference, n_shared, rate, rate_reference, diff, se, ci_low, ci_high, interval
    (its method, see paired.difference_interval), p_t, p_signflip, p_adjusted (of p_t, by ``adjust``),
    signflip_method, p_a_better, n_dropped, note. ``value`` as in ``compare`` ("merged": rows not
    reviewed, NaN, are left out and each row's note says how many of its two sides' trials).
    """
    frame = df.assign(config=config_labels(df), _infra=infra_mask(df))
    unreviewed = pd.Series(0, index=pd.Index([], dtype=object))
    seen = frame.groupby("config")["task_id"].unique()
    if value != "resolved":
        require_columns(frame, ["task_id", value], f"compare on {value!r}")
        unreviewed = frame[value].isna().groupby(frame["config"]).sum()
        frame = frame.loc[frame[value].notna()]
    configs = sorted(frame["config"].unique())
    reference = configs[0] if reference is None else reference
    if reference not in configs and reference in seen.index:
        raise ValueError(f"reference configuration {reference!r} has no trial with a {value!r} value")
    if reference not in configs:
        raise ValueError(f"reference configuration {reference!r} not in the trials; have {', '.join(configs)}")
    sides = _sides(frame, infra_as_failure, value, seen)
    rows = []
    for name in configs:
        if name == reference:
            continue
        c = compare_tasks(sides[name], sides[reference], level=level, seed=seed)
        rows.append({
            "config": name, "reference": reference, "n_shared": c.n_shared, "rate": c.rate_a,
            "rate_reference": c.rate_b, "diff": c.diff, "se": c.se, "ci_low": c.ci_low,
            "ci_high": c.ci_high, "interval": c.interval, "p_t": c.p_t, "p_signflip": c.p_signflip,
            "signflip_method": c.signflip_method, "p_a_better": c.p_a_better, "n_dropped": len(c.dropped),
            "note": _with_unreviewed(c.note, unreviewed, (name, reference), value),
        })
    out = pd.DataFrame(rows, columns=["config", "reference", "n_shared", "rate", "rate_reference", "diff",
                                      "se", "ci_low", "ci_high", "interval", "p_t", "p_signflip", "signflip_method",
                                      "p_a_better", "n_dropped", "note"])
    out.insert(out.columns.get_loc("p_signflip") + 1, "p_adjusted", adjust_pvalues(out["p_t"], adjust))
    return out


def _with_unreviewed(note: str, unreviewed: pd.Series, names: tuple[str, str], value: str) -> str:
    count = int(sum(int(unreviewed.get(n, 0)) for n in names))
    return join_notes(note, unreviewed_note(count, value)) if count else note


def _sides(frame: pd.DataFrame, infra_as_failure: bool, value: str, seen: pd.Series) -> dict[str, TaskSide]:
    """Per-task rows of every configuration, aggregated in one groupby."""
    trials, _ = usable_trials(frame, infra_as_failure=infra_as_failure, value=value)
    ts = per_task(trials, ["config"])
    tasks = {name: part.drop(columns="config").set_index("task_id") for name, part in ts.groupby("config")}
    infra = frame.groupby("config")["_infra"].sum()
    empty = ts.drop(columns="config").iloc[:0].set_index("task_id")
    unusable = "only infrastructure failures" if value == "resolved" else f"no trial with a {value!r} value"
    return {name: TaskSide(name, tasks.get(name, empty), pd.Index(seen[name]), int(infra.get(name, 0)), unusable)
            for name in seen.index}
