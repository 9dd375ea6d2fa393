"""Merge acceptance (capability 6): would a maintainer merge the patches the grader calls resolved?

- Acceptance rate among reviewed trials: task-level mean and interval exactly as for the resolve
  rate (summary.py): Wilson with one reviewed trial per task and few tasks (Wilson 1927; Bowyer et
  al. 2025), otherwise task-clustered t, so several reviewed trials of one task are not counted
  as independent.
- Grader-vs-human gap on the same trials: per-task mean of (grader - human) with the paired
  difference interval of paired.difference_interval (inside [-1, 1]; Jeffreys at small n with one
  binary review per task, clipped t otherwise), the paired t p-value over tasks (Miller 2024), plus an
  exact McNemar test (``statsmodels``) of "grader passes, human rejects" against "grader fails, human
  accepts" when each task has one reviewed trial.
- Rate relative to a golden human baseline (e.g. acceptance of the gold patches): ratio of two
  independent proportions with the Katz log interval, ``statsmodels``
  ``confint_proportions_2indep(compare="ratio", method="log")`` (Katz et al. 1978): right only for
  independent counts, one review per item.
- ``merged_column`` / ``merge_table``: the per-configuration merge section of a report (below).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep

from evalharness.stats._frame import per_task, require_columns, usable_trials
from evalharness.stats.paired import difference_interval, paired_t
from evalharness.stats.summary import summarize


def acceptance_rate(df: pd.DataFrame, *, column: str = "accepted", level: float = 0.95) -> dict:
    """Share of reviewed trials a human would merge (rows with NaN in ``column`` were not reviewed)."""
    require_columns(df, ["task_id", column], "merge acceptance")
    reviewed = df.loc[df[column].notna()]
    trials, _ = usable_trials(reviewed, value=column)
    if trials.empty:
        return {"rate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n_tasks": 0, "n_reviewed": 0,
                "interval": "none", "note": "no reviewed trials"}
    row = summarize(per_task(trials), level=level).iloc[0]
    return {"rate": float(row["resolve_rate"]), "se": float(row["se"]), "ci_low": float(row["ci_low"]),
            "ci_high": float(row["ci_high"]), "n_tasks": int(row["n_tasks"]), "n_reviewed": int(row["n_trials"]),
            "interval": str(row["interval"]), "note": str(row["note"])}


@dataclass(frozen=True)
class GraderGap:
    grader_rate: float
    human_rate: float
    gap: float
    """Grader pass rate minus human acceptance rate (task-level means, same trials)."""
    se: float
    ci_low: float
    ci_high: float
    level: float
    p_t: float
    n_tasks: int
    n_trials: int
    grader_only: int
    human_only: int
    p_mcnemar: float
    note: str
    interval: str = ""
    """Method of [ci_low, ci_high] (see paired.difference_interval)."""

    def to_dict(self) -> dict:
        return asdict(self)


def grader_human_gap(df: pd.DataFrame, *, grader: str = "resolved", human: str = "accepted",
                     level: float = 0.95) -> GraderGap:
    """Paired gap between the grader and human reviewers on the reviewed trials."""
    require_columns(df, ["task_id", grader, human], "grader-vs-human gap")
    rows = df.loc[df[grader].notna() & df[human].notna()]
    g, h = rows[grader].astype(float).to_numpy(), rows[human].astype(float).to_numpy()
    frame = pd.DataFrame({"task_id": rows["task_id"].to_numpy(), "g": g, "h": h, "d": g - h})
    per = frame.groupby("task_id", sort=True).agg(g=("g", "mean"), h=("h", "mean"), d=("d", "mean"), n=("d", "size"))
    r = paired_t(per["d"].to_numpy(), level)
    n_each = per["n"].to_numpy()
    lo, hi, interval = difference_interval(per["g"].to_numpy(), per["h"].to_numpy(), n_each, n_each, level=level)
    b, c = int(np.sum((g > 0.5) & (h < 0.5))), int(np.sum((g < 0.5) & (h > 0.5)))
    one_each = len(per) > 0 and bool((per["n"] == 1).all())
    p_mc = (float(mcnemar([[0, b], [c, 0]], exact=True).pvalue) if b + c else 1.0) if one_each else np.nan
    note = "" if len(per) >= 2 else "fewer than 2 reviewed tasks (n < 2): no standard error"
    return GraderGap(
        grader_rate=float(per["g"].mean()) if len(per) else np.nan,
        human_rate=float(per["h"].mean()) if len(per) else np.nan,
        gap=float(r["diff"]), se=float(r["se"]), ci_low=lo, ci_high=hi,
        level=level, p_t=float(r["p"]), n_tasks=len(per), n_trials=len(rows), grader_only=b, human_only=c,
        p_mcnemar=p_mc, note=note, interval=interval,
    )


def acceptance_ratio(x: float, n: float, x_ref: float, n_ref: float, *, level: float = 0.95) -> dict[str, float]:
    """(x/n) / (x_ref/n_ref) with the Katz log interval; NaN (with a note) when undefined."""
    if n < 1 or n_ref < 1 or x_ref <= 0:
        return {"ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                "note": "reference rate is 0 or a side is empty: ratio undefined"}
    lo, hi = confint_proportions_2indep(x, n, x_ref, n_ref, compare="ratio", method="log", alpha=1 - level)
    return {"ratio": float((x / n) / (x_ref / n_ref)), "ci_low": float(lo), "ci_high": float(hi), "note": ""}


# --- the merge section of a report: merged_column and merge_table -------------------------------------------------
#
# Unit: the task. A trial's merged value is the share of its reviewers (latest verdict each) who would merge it;
# a task's value the mean over its reviewed trials; rates are means over tasks, so several trials or reviewers of
# one task never count as independent. The golden baseline is the same over gold reviews (one gold patch per
# task). normalised = merge rate / gold rate with a delta-method interval on log(ratio): Var(log R) from the
# task-clustered (CR1, factor C/(C-1)) covariance of the two task means, t with C-1 df where C counts the tasks
# of either arm; agent and gold reviews of one task (often by the same reviewers) are correlated, which Katz's
# independent-counts interval would ignore.

REVIEW_KEY = ["run_id", "trial_id"]


def latest_reviews(reviews: pd.DataFrame) -> pd.DataFrame:
    """One review per (arm, item, reviewer): the latest by ``reviewed_at`` (Store.reviews already gives these)."""
    if reviews.empty:
        return reviews
    order = reviews.sort_values("reviewed_at", kind="stable") if "reviewed_at" in reviews else reviews
    item = ["arm", "pack", "task_id", "run_id", "trial_id", "reviewer"]
    keys = [c for c in item if c in order.columns]
    return order.assign(**{c: order[c].astype(str) for c in keys}).drop_duplicates(keys, keep="last")


def merged_column(trials: pd.DataFrame, reviews: pd.DataFrame, accept=("merge",)) -> pd.Series:
    """Per agent trial the share of its reviewers whose latest verdict is in ``accept``; NaN when unreviewed."""
    require_columns(trials, REVIEW_KEY, "merged column")
    agent = latest_reviews(reviews.loc[reviews["arm"] == "agent"]) if len(reviews) else reviews
    if agent.empty:
        return pd.Series(np.nan, index=trials.index, name="merged")
    share = agent.assign(_m=agent["verdict"].isin(list(accept)).astype(float)).groupby(REVIEW_KEY)["_m"].mean()
    keys = pd.MultiIndex.from_arrays([trials[c].astype(str) for c in REVIEW_KEY])
    return pd.Series(share.reindex(keys).to_numpy(), index=trials.index, name="merged")


def merge_table(trials: pd.DataFrame, reviews: pd.DataFrame, *, level: float = 0.95) -> list[dict]:
    """One dict per configuration with a reviewed trial: merge rate, golden baseline, normalised rate, gap."""
    require_columns(trials, ["config", "task_id", "resolved", *REVIEW_KEY], "merge table")
    reviews = latest_reviews(reviews)
    frame = trials.assign(merged=merged_column(trials, reviews),
                          merged_or_changes=merged_column(trials, reviews, ("merge", "merge_after_changes")))
    gold = reviews.loc[reviews["arm"] == "gold"] if len(reviews) else reviews
    rows = []
    for config, part in frame.loc[frame["merged"].notna()].groupby("config", sort=True):
        rows.append(_config_row(str(config), part, _agent_reviews(part, reviews), _gold_of(part, gold), level))
    return rows


def _agent_reviews(part: pd.DataFrame, reviews: pd.DataFrame) -> pd.DataFrame:
    keys = set(zip(part["run_id"].astype(str), part["trial_id"].astype(str)))
    agent = reviews.loc[reviews["arm"] == "agent"]
    return agent.loc[[k in keys for k in zip(agent["run_id"], agent["trial_id"])]]


def _gold_of(part: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """Gold reviews of the configuration's packs (all gold reviews when the trials name no pack)."""
    if gold.empty or "pack" not in part.columns:
        return gold
    return gold.loc[gold["pack"].isin(part["pack"].astype(str).unique())]


def _task_key(frame: pd.DataFrame) -> pd.Series:
    pack = frame["pack"].astype(str) if "pack" in frame.columns else ""
    return pack + "\x1f" + frame["task_id"].astype(str)


def _config_row(config: str, part: pd.DataFrame, agent: pd.DataFrame, gold: pd.DataFrame, level: float) -> dict:
    part = part.assign(task_id=_task_key(part))
    merge = acceptance_rate(part, column="merged", level=level)
    either = acceptance_rate(part, column="merged_or_changes", level=level)
    gold_rows = _gold_frame(gold)
    base = acceptance_rate(gold_rows, column="merged", level=level) if len(gold_rows) else None
    gap = grader_human_gap(part.assign(resolved=part["resolved"].astype(float)), human="merged", level=level)
    norm = normalised_rate(part, gold_rows, level=level)
    rejected, reasons = _resolved_rejected(part, agent)
    notes = [merge["note"], "" if base else "no gold reviews: no golden baseline", norm["note"], gap.note]
    return {
        "config": config, "n_reviewed_trials": int(len(part)), "n_reviewed_tasks": int(merge["n_tasks"]),
        "n_reviews": int(len(agent)), "merge_rate": merge["rate"], "ci_low": merge["ci_low"],
        "ci_high": merge["ci_high"], "interval": merge["interval"], "merge_or_changes_rate": either["rate"],
        "gold_rate": base["rate"] if base else np.nan, "gold_ci_low": base["ci_low"] if base else np.nan,
        "gold_ci_high": base["ci_high"] if base else np.nan, "gold_interval": base["interval"] if base else "none",
        "gold_n_tasks": int(base["n_tasks"]) if base else 0, "gold_n_reviews": int(len(gold)),
        "normalised": norm["ratio"], "norm_ci_low": norm["ci_low"], "norm_ci_high": norm["ci_high"],
        "norm_method": norm["method"], "resolve_rate_reviewed": gap.grader_rate, "gap": gap.gap,
        "gap_ci_low": gap.ci_low, "gap_ci_high": gap.ci_high, "gap_interval": gap.interval,
        "resolved_rejected": rejected, "rejected_reasons": reasons,
        "note": "; ".join(dict.fromkeys(n for n in notes if n)),
    }


def _gold_frame(gold: pd.DataFrame) -> pd.DataFrame:
    """One row per gold review: task key and merged (0/1)."""
    return pd.DataFrame({"task_id": _task_key(gold).to_numpy(),
                         "merged": gold["verdict"].isin(["merge"]).astype(float).to_numpy()})


def _task_means(frame: pd.DataFrame) -> pd.Series:
    return frame.groupby("task_id", sort=True)["merged"].mean()


def normalised_rate(agent: pd.DataFrame, gold: pd.DataFrame, *, level: float = 0.95) -> dict:
    """Merge rate / gold rate over task means with the task-clustered delta-method log interval (see above)."""
    method = "delta-log (task-clustered, t C-1)"
    out = {"ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan, "method": method, "note": ""}
    if gold.empty:
        return out | {"method": "none"}
    a, g = _task_means(agent), _task_means(gold)
    ma, mg = float(a.mean()), float(g.mean())
    if mg == 0:
        return out | {"note": "gold rate is 0: normalised merge rate undefined"}
    out["ratio"] = ma / mg
    tasks = a.index.union(g.index)
    c = tasks.size
    if ma == 0 or c < 2 or min(a.size, g.size) < 2:
        why = "merge rate is 0: no log interval" if ma == 0 else "fewer than 2 tasks: no interval of the ratio"
        return out | {"note": why}
    u = ((a - ma) / (a.size * ma)).reindex(tasks, fill_value=0.0) - \
        ((g - mg) / (g.size * mg)).reindex(tasks, fill_value=0.0)
    se = float(np.sqrt(c / (c - 1) * np.sum(u.to_numpy() ** 2)))
    q = stats.t.ppf(0.5 + level / 2, c - 1)
    return out | {"ci_low": out["ratio"] * float(np.exp(-q * se)), "ci_high": out["ratio"] * float(np.exp(q * se)),
                  "se_log": se}


def _resolved_rejected(part: pd.DataFrame, agent: pd.DataFrame) -> tuple[int, dict[str, int]]:
    """Reviewed trials the grader resolved that most reviewers did not merge (share < 1/2), and their reasons."""
    hit = part.loc[part["resolved"].astype(bool) & (part["merged"] < 0.5)]
    keys = set(zip(hit["run_id"].astype(str), hit["trial_id"].astype(str)))
    counts: dict[str, int] = {}
    for key, verdict, reasons in zip(zip(agent["run_id"], agent["trial_id"]), agent["verdict"], agent["reasons"]):
        if key in keys and verdict != "merge":
            for code in reasons or ():
                counts[str(code)] = counts.get(str(code), 0) + 1
    return int(len(hit)), dict(sorted(counts.items()))
