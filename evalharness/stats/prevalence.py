"""How many tasks of a benchmark are broken, from an imperfect detector and a labelled sample (pure).

An audit pipeline flags ``flagged`` of ``n_tasks`` tasks. Humans label a sample of tasks, giving the
pipeline's confusion table against them (tp, fp, fn, tn). The pipeline's precision P = tp/(tp+fp) is
the share of flags that are real, its recall R = tp/(tp+fn) the share of broken tasks it flags, so

    broken fraction  pi = f * P / R,      f = flagged / n_tasks

(the flagged share times the real share of flags is the share of tasks that are flagged and broken;
dividing by recall adds the broken ones it missed). It assumes the labelled sample is representative
of the flagged and unflagged tasks (a random sample, or every task). The interval is Bayesian,
from independent Jeffreys posteriors: f ~ Beta(flagged + 1/2, n - flagged + 1/2) and the
labelled table's cell probabilities ~ Dirichlet(cells + 1/2); each draw gives P, R and pi (clipped to
[0, 1]); the interval is the draws' equal-tailed quantiles. Its frequentist coverage is checked by
simulation in tests/stats/test_prevalence.py. With no labels there is no correction: the raw
flagged share is returned with a Wilson interval and a note saying so. With every task labelled,
use the humans' own share (``labelled_share``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from evalharness.stats.intervals import wilson_interval

NAN = float("nan")


@dataclass(frozen=True)
class Prevalence:
    estimate: float
    ci_low: float
    ci_high: float
    level: float
    method: str
    """``flag-share-corrected`` (f * P / R), ``flag-share`` (uncorrected), ``labelled-share``."""
    raw: float
    """The flagged share itself."""
    precision: float = NAN
    recall: float = NAN
    n_tasks: int = 0
    n_labelled: int = 0
    note: str = ""
    correction: str = ""
    """Which correction the estimate used, in words (``correction_text``)."""

    def to_dict(self) -> dict:
        return asdict(self)


def correction_text(method: str, n_labelled: int = 0) -> str:
    """What a ``method`` did to the flagged share, for a reader."""
    if method == "flag-share-corrected":
        return (f"f x P / R: the flagged share f times the pipeline's precision P over its recall R, both measured "
                f"against human labels on {n_labelled} labelled task(s)")
    if method == "labelled-share":
        return f"none needed: the humans' own broken share on {n_labelled} labelled task(s)"
    return "none: no human labels, the raw flagged share (the pipeline's errors are not corrected)"


def corrected_prevalence(flagged: int, n_tasks: int, tp: int, fp: int, fn: int, tn: int, *, level: float = 0.95,
                         draws: int = 20000, seed: int = 0) -> Prevalence:
    """The broken fraction from ``flagged`` of ``n_tasks`` and the labelled confusion table (module doc)."""
    if n_tasks <= 0 or not 0 <= flagged <= n_tasks:
        raise ValueError(f"need 0 <= flagged <= n_tasks and n_tasks > 0 (got {flagged}, {n_tasks})")
    cells = np.array([tp, fp, fn, tn], dtype=float)
    if (cells < 0).any():
        raise ValueError("confusion table cells must be >= 0")
    f = flagged / n_tasks
    labelled = int(cells.sum())
    if labelled == 0:
        lo, hi = wilson_interval(flagged, n_tasks, level)
        return Prevalence(f, float(lo), float(hi), level, "flag-share", f, n_tasks=n_tasks,
                          note="no human labels: the flagged share, not corrected for the pipeline's errors",
                          correction=correction_text("flag-share"))
    precision = tp / (tp + fp) if tp + fp else NAN
    recall = tp / (tp + fn) if tp + fn else NAN
    note = ""
    if tp + fn == 0:
        note = "no labelled task is broken: recall is undefined, the estimate is f * P with P's uncertainty"
    rng = np.random.default_rng(seed)
    f_draw = rng.beta(flagged + 0.5, n_tasks - flagged + 0.5, draws)
    p = rng.dirichlet(cells + 0.5, draws)
    prec, rec = p[:, 0] / (p[:, 0] + p[:, 1]), p[:, 0] / (p[:, 0] + p[:, 2])
    pi = np.clip(f_draw * prec / rec, 0.0, 1.0)
    point = f * precision / recall if np.isfinite(precision) and np.isfinite(recall) and recall > 0 else NAN
    if not np.isfinite(point):
        point = float(np.median(pi))
    lo, hi = np.quantile(pi, [(1 - level) / 2, (1 + level) / 2])
    return Prevalence(float(min(point, 1.0)), float(lo), float(hi), level, "flag-share-corrected", f,
                      float(precision), float(recall), n_tasks, labelled, note,
                      correction_text("flag-share-corrected", labelled))


def labelled_share(broken: int, labelled: int, n_tasks: int, *, level: float = 0.95) -> Prevalence:
    """The humans' broken share with a Wilson interval (with a finite-population note when all are labelled)."""
    if labelled <= 0:
        raise ValueError("no labelled tasks")
    lo, hi = wilson_interval(broken, labelled, level)
    note = "every task labelled: the share is exact for this benchmark" if labelled >= n_tasks else ""
    share = broken / labelled
    if labelled >= n_tasks:
        lo = hi = share
    return Prevalence(share, float(lo), float(hi), level, "labelled-share", share, n_tasks=n_tasks,
                      n_labelled=labelled, note=note, correction=correction_text("labelled-share", labelled))
