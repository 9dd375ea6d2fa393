"""Agreement between a grading pipeline and humans, or among several raters.

- Cohen's kappa (Cohen 1960) = (p_o - p_e) / (1 - p_e) with its large-sample SE (Fleiss, Cohen &
  Everitt 1969), via ``statsmodels.stats.inter_rater.cohens_kappa``; the interval is
  kappa +- z * SE at any level. Weighted kappa (linear or quadratic weights) for ordinal labels.
  Kappa depends on prevalence, so raw agreement, precision and recall of the pipeline against
  humans and an exact McNemar test of systematic bias (pipeline flags more or less than humans)
  are reported beside it.
- Fleiss' kappa for 3+ raters (Fleiss 1971), ``statsmodels`` ``fleiss_kappa``.
- Krippendorff's alpha (Krippendorff 2004) with missing labels, ``krippendorff.alpha`` with the
  level of measurement passed explicitly (the package default is "interval"); percentile
  bootstrap interval over items.
- Too few labels: below ``MIN_AGREEMENT_N`` items (``min_n``) a kappa or alpha is not reported, nor its
  interval; the summary says "too few labels" (raw agreement, precision and recall stay, as counts go
  with them). ``MIN_AGREEMENT_N`` (30) is the smallest n at which the large-sample 95% interval of a
  moderate kappa (0.5, balanced classes, raw agreement 0.75) is no wider than +-0.31 (``kappa_half_width``):
  [0.19, 0.81]. Below it the interval of any moderate kappa reaches from "slight" (< 0.2) to "almost
  perfect" (> 0.8) and says nothing, and the large-sample SE itself is unreliable (when every label
  agrees it is 0: kappa 1.00 [1.00, 1.00] from 2 tasks).
- Degenerate: when a rater gives one answer to every item, chance agreement equals the observed one by
  construction (kappa is 0/0, or 0 with a zero SE); no kappa or interval is reported, ``degenerate`` is set
  and the note names the rater. Fleiss' kappa with every rating in one category is NaN the same way. Neither
  reaches statsmodels, whose arithmetic would warn.
Tables: rows = pipeline (or rater 1), columns = human (or rater 2), same category order; the
positive category ("flag") is index 0 unless ``positive`` says otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import krippendorff
import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

LEVELS = ("nominal", "ordinal", "interval", "ratio")
MIN_AGREEMENT_N = 30
"""Fewest items for which an agreement statistic and its interval are reported (module doc)."""
MAX_HALF_WIDTH = 0.31
"""The widest 95% half-interval of kappa 0.5 (balanced classes) that ``MIN_AGREEMENT_N`` allows."""


@dataclass(frozen=True)
class KappaSummary:
    kappa: float
    se: float
    ci_low: float
    ci_high: float
    level: float
    weights: str
    raw_agreement: float
    n: int
    precision: float = float("nan")
    recall: float = float("nan")
    p_bias: float = float("nan")
    """Exact McNemar p of pipeline-only vs human-only flags (2x2 tables)."""
    note: str = ""
    too_few: bool = False
    """n < ``min_n``: kappa, se and the interval are NaN by rule, not by arithmetic."""
    degenerate: bool = False
    """A rater gave one answer to every item: kappa, se and the interval are NaN by rule (the note says why)."""

    def to_dict(self) -> dict:
        return asdict(self)


def too_few_note(n: int, min_n: int) -> str:
    return f"too few labels: {n} < {min_n}, the minimum for an agreement statistic and its interval"


def kappa_half_width(n: float, *, kappa: float = 0.5, level: float = 0.95) -> float:
    """Half-width of the large-sample interval of ``kappa`` over ``n`` items, two balanced classes."""
    agree = (1 + kappa) / 2  # p_e = 0.5 with balanced marginals, so p_o = (1 + kappa) / 2
    t = np.array([[agree, 1 - agree], [1 - agree, agree]]) * n / 2
    return float(stats.norm.ppf(0.5 + level / 2) * cohens_kappa(t).std_kappa)


def cohen_kappa(table, *, level: float = 0.95, weights: str | None = None, positive: int = 0,
                min_n: int = 0, raters: tuple[str, str] = ("the first rater", "the second rater")) -> KappaSummary:
    """Cohen's kappa (``weights`` None, "linear" or "quadratic") of a square agreement table; below ``min_n``
    items, no kappa and no interval, only "too few labels"; a rater with one answer only is degenerate, named
    by ``raters`` (rows, columns) in the note (module doc)."""
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] != t.shape[1] or t.shape[0] < 2:
        raise ValueError(f"need a square table of at least 2 categories, got shape {t.shape}")
    n = int(t.sum())
    raw = float(np.trace(t) / n) if n else float("nan")
    used = (t.sum(0) + t.sum(1)) > 0
    if n < min_n:
        nan = float("nan")
        extras = _binary_extras(t, positive) if t.shape == (2, 2) and n else {}
        return KappaSummary(nan, nan, nan, nan, level, weights or "none", raw, n, **extras,
                            note=too_few_note(n, min_n), too_few=True)
    if n == 0 or used.sum() < 2:
        nan = float("nan")
        return KappaSummary(nan, nan, nan, nan, level, weights or "none", raw, n,
                            note="kappa undefined: fewer than 2 categories used (expected agreement is 1)")
    one_answer = [who for who, margin in zip(raters, (t.sum(1), t.sum(0))) if (margin > 0).sum() < 2]
    if one_answer:  # expected agreement equals observed by construction: kappa is 0/0 or 0 with no spread
        nan = float("nan")
        extras = _binary_extras(t, positive) if t.shape == (2, 2) else {}
        return KappaSummary(nan, nan, nan, nan, level, weights or "none", raw, n, **extras, degenerate=True,
                            note=f"kappa degenerate: {' and '.join(one_answer)} gave one answer to all {n} items, "
                                 "so chance explains any agreement; no kappa or interval (raw agreement "
                                 f"{raw:.0%})")
    res = cohens_kappa(t, wt=weights) if weights else cohens_kappa(t)
    kappa, se = float(res.kappa), float(res.std_kappa)
    z = stats.norm.ppf(0.5 + level / 2)
    note = "" if np.isfinite(kappa) else "kappa undefined: expected agreement is 1 (one category only)"
    out = dict(kappa=kappa, se=se, ci_low=float(kappa - z * se), ci_high=float(kappa + z * se), level=level,
               weights=weights or "none", raw_agreement=raw, n=n, note=note)
    if t.shape == (2, 2):
        out.update(_binary_extras(t, positive))
    return KappaSummary(**out)


def _binary_extras(t: np.ndarray, positive: int) -> dict:
    neg = 1 - positive
    tp, fp, fn = t[positive, positive], t[positive, neg], t[neg, positive]
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    p_bias = float(mcnemar(t, exact=True).pvalue) if fp + fn else 1.0
    return {"precision": float(precision), "recall": float(recall), "p_bias": p_bias}


def fleiss(counts_or_ratings, *, ratings: bool = False) -> float:
    """Fleiss' kappa from an items x categories count table, or from items x raters labels."""
    data = np.asarray(counts_or_ratings)
    counts = aggregate_raters(data)[0] if ratings else data
    if (np.asarray(counts).sum(0) > 0).sum() < 2:  # every rating in one category: degenerate (0/0), no kappa
        return float("nan")
    return float(fleiss_kappa(counts, method="fleiss"))


def krippendorff_alpha(reliability, *, level: str, n_boot: int = 2000, seed: int = 0,
                       confidence: float = 0.95, min_n: int = 0) -> dict[str, float]:
    """Krippendorff's alpha of a raters x items array (NaN = missing) with a bootstrap interval over items;
    below ``min_n`` items, no alpha and no interval, only "too few labels"."""
    if level not in LEVELS:
        raise ValueError(f"level of measurement must be one of {', '.join(LEVELS)} (got {level!r})")
    data = np.asarray(reliability, dtype=float)
    if data.shape[1] < min_n:
        nan = float("nan")
        return {"alpha": nan, "ci_low": nan, "ci_high": nan, "n_items": int(data.shape[1]), "n_boot": 0,
                "too_few": True, "note": too_few_note(int(data.shape[1]), min_n)}
    alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    rng = np.random.default_rng(seed)
    domain = np.unique(data[np.isfinite(data)])
    boots = []
    for _ in range(n_boot):
        sample = data[:, rng.integers(0, data.shape[1], data.shape[1])]
        if np.unique(sample[np.isfinite(sample)]).size > 1:
            boots.append(krippendorff.alpha(reliability_data=sample, level_of_measurement=level,
                                            value_domain=domain))
    lo, hi = (np.quantile(boots, [(1 - confidence) / 2, (1 + confidence) / 2]) if len(boots) >= 10
              else (np.nan, np.nan))
    return {"alpha": alpha, "ci_low": float(lo), "ci_high": float(hi), "n_items": int(data.shape[1]),
            "n_boot": len(boots)}


def agreement_table(a, b, categories=None) -> np.ndarray:
    """Square count table of paired labels (rows = ``a``, columns = ``b``) over ``categories``."""
    a, b = np.asarray(a), np.asarray(b)
    cats = list(categories) if categories is not None else sorted(set(a.tolist()) | set(b.tolist()))
    index = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)), dtype=int)
    np.add.at(table, ([index[x] for x in a], [index[x] for x in b]), 1)
    return table
