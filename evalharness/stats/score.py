"""Score of ONE configuration with an honest interval: ``score(df) -> ScoreSummary``.

Methods (see docs/statistics.md):
- "t" (default): mean of task means, task-level SE, Student t with n-1 df (Miller 2024,
  arXiv 2411.00640); Wilson instead when every task has one seed and n < 300 (Bowyer et al.
  2025, arXiv 2503.01747). With ``cluster`` (e.g. "repo"): cluster-robust SE
  sqrt(C/(C-1) * sum_c (sum_{i in c} (s_i - mean))^2) / n with t_{C-1}, the CR1 estimator that
  ``statsmodels`` OLS ``cov_type="cluster"`` computes for an intercept-only model.
- "wilson" / "clopper-pearson": proportion intervals on the task means (effective n = tasks).
- "bootstrap": ``scipy.stats.bootstrap`` (BCa) resampling tasks, or whole clusters when given.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from evalharness.stats._frame import cluster_of_tasks, config_label, per_task, usable_trials
from evalharness.stats.intervals import clopper_pearson_interval, t_interval, wilson_interval
from evalharness.stats.summary import SMALL_N, join_notes, predicted_se, summarize

METHODS = ("t", "wilson", "clopper-pearson", "bootstrap")
FEW_CLUSTERS = 20
NAN = float("nan")


@dataclass(frozen=True)
class ScoreSummary:
    """Resolve rate of one configuration. Undefined numbers are NaN and ``note`` says why."""

    config: str
    resolve_rate: float
    se: float
    ci_low: float
    ci_high: float
    level: float
    interval: str
    """Which interval: t, wilson, clopper-pearson, cluster-t, bootstrap-BCa, cluster-bootstrap-BCa."""
    df: float
    n_tasks: int
    n_seeds_min: int
    n_seeds_max: int
    n_trials: int
    n_infra: int
    n_clusters: int | None
    naive_se: float
    """SE if trials were independent: shown to say it is wrong when seeds repeat tasks."""
    var_between: float
    var_within: float
    predicted_se: dict[int, float] = field(default_factory=dict)
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def score(df: pd.DataFrame, *, level: float = 0.95, cluster: str | None = None, method: str = "t",
          infra_as_failure: bool = False, small_n: int = SMALL_N, n_resamples: int = 9999,
          seed: int = 0) -> ScoreSummary:
    """Resolve rate of ONE configuration with a task-level interval (see the module docstring)."""
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose one of {', '.join(METHODS)}")
    label = config_label(df)
    trials, n_infra = usable_trials(df, infra_as_failure=infra_as_failure)
    if trials.empty:
        return _empty(label, level, n_infra)
    ts = per_task(trials)
    row = summarize(ts, level=level, small_n=small_n).iloc[0].to_dict()
    row["n_clusters"] = None
    if cluster is not None:
        groups = cluster_of_tasks(trials, cluster).loc[ts["task_id"]].to_numpy()
        row["n_clusters"] = int(pd.unique(groups).size)
    else:
        groups = ts["task_id"].to_numpy()
    s = ts["mean"].to_numpy(float)
    override = {}
    if row["n_tasks"] >= 2:
        if method == "t" and cluster is not None:
            override = _cluster_t(s, groups, level)
        elif method in ("wilson", "clopper-pearson"):
            override = _proportion(s, method, level)
        elif method == "bootstrap":
            override = _bootstrap(s, groups, level, n_resamples, seed, cluster is not None)
    if override:
        row.update(override, note=join_notes(row["data_note"], override.get("note", "")))
    return _build(label, row, level, n_infra)


def cluster_se(s: np.ndarray, groups: np.ndarray) -> tuple[float, int]:
    """CR1 cluster-robust SE of the mean of ``s`` and the number of clusters C (NaN if C < 2)."""
    resid = pd.Series(s - s.mean())
    sums = resid.groupby(groups, sort=False).sum().to_numpy()
    c = sums.size
    if c < 2:
        return NAN, c
    return float(np.sqrt(c / (c - 1) * np.sum(sums**2)) / s.size), c


def _cluster_t(s: np.ndarray, groups: np.ndarray, level: float) -> dict:
    se, c = cluster_se(s, groups)
    if not np.isfinite(se):
        return {"se": NAN, "df": NAN, "ci_low": NAN, "ci_high": NAN, "interval": "cluster-t",
                "note": f"{c} cluster: no cluster-robust standard error (needs C >= 2)"}
    lo, hi = t_interval(s.mean(), se, c - 1, level)
    note = (f"few clusters (C = {c} < {FEW_CLUSTERS}): the cluster-robust SE is biased down and unstable "
            "(Cameron & Miller 2015); compare with method='bootstrap'") if c < FEW_CLUSTERS else ""
    return {"se": se, "df": float(c - 1), "ci_low": max(float(lo), 0.0), "ci_high": min(float(hi), 1.0),
            "interval": "cluster-t", "note": note}


def _proportion(s: np.ndarray, method: str, level: float) -> dict:
    fn = wilson_interval if method == "wilson" else clopper_pearson_interval
    lo, hi = fn(s.sum(), s.size, level)
    return {"ci_low": float(lo), "ci_high": float(hi), "interval": method}


def _bootstrap(s: np.ndarray, groups: np.ndarray, level: float, n_resamples: int, seed: int,
               clustered: bool) -> dict:
    frame = pd.DataFrame({"s": s, "g": groups}).groupby("g", sort=True)["s"].agg(["sum", "count"])
    name = "cluster-bootstrap-BCa" if clustered else "bootstrap-BCa"
    if len(frame) < 2 or np.ptp(s) == 0:
        return {"ci_low": NAN, "ci_high": NAN, "interval": name,
                "note": "bootstrap needs at least 2 clusters and unequal task means"}
    res = stats.bootstrap(
        (frame["sum"].to_numpy(float), frame["count"].to_numpy(float)),
        lambda a, b, axis=-1: a.sum(axis=axis) / b.sum(axis=axis),
        paired=True, vectorized=True, n_resamples=n_resamples, confidence_level=level,
        method="BCa", rng=np.random.default_rng(seed),
    )
    ci = res.confidence_interval
    return {"se": float(res.standard_error), "ci_low": float(ci.low), "ci_high": float(ci.high),
            "df": NAN, "interval": name}


def _build(label: str, row: dict, level: float, n_infra: int) -> ScoreSummary:
    n = int(row["n_tasks"])
    return ScoreSummary(
        config=label, resolve_rate=float(row["resolve_rate"]), se=float(row["se"]),
        ci_low=float(row["ci_low"]), ci_high=float(row["ci_high"]), level=level,
        interval=str(row["interval"]), df=float(row["df"]), n_tasks=n,
        n_seeds_min=int(row["n_seeds_min"]), n_seeds_max=int(row["n_seeds_max"]),
        n_trials=int(row["n_trials"]), n_infra=n_infra, n_clusters=row["n_clusters"],
        naive_se=float(row["naive_se"]), var_between=float(row["var_between"]),
        var_within=float(row["var_within"]),
        predicted_se=predicted_se(float(row["var_between"]), float(row["var_within"]), n),
        note=str(row["note"]),
    )


def _empty(label: str, level: float, n_infra: int) -> ScoreSummary:
    note = f"no usable trials ({n_infra} infrastructure failures excluded)" if n_infra else "no trials"
    return ScoreSummary(label, NAN, NAN, NAN, NAN, level, "none", NAN, 0, 0, 0, 0, n_infra, None,
                        NAN, NAN, NAN, predicted_se(NAN, NAN, 0), note)
