"""Statistics layer: pure functions over the tidy trials DataFrame (one row per trial, TRIAL_COLUMNS).

No I/O and no imports from sandbox, runner, store or cli. The task is the unit of analysis; seeds
are repeated measures (Miller 2024, arXiv 2411.00640). Undefined numbers are NaN with a reason.
See docs/statistics.md for what each number means and when to trust it.
"""

from evalharness.stats.agreement import KappaSummary, agreement_table, cohen_kappa, fleiss, krippendorff_alpha
from evalharness.stats.cost import CostSummary, cost_per_resolved, ratio_estimate
from evalharness.stats.drift import (
    binomial_pmf,
    cusum_arl,
    cusum_path,
    cusum_reference,
    cusum_threshold,
    normal_cusum,
    normal_threshold,
    poisson_binomial_pmf,
)
from evalharness.stats.flags import FLAG_NAMES, flag_counts, trial_flags
from evalharness.stats.intervals import (
    bonett_price_interval,
    clopper_pearson_interval,
    newcombe_difference,
    paired_jeffreys_interval,
    prob_greater,
    t_interval,
    wilson_interval,
)
from evalharness.stats.merge import (
    GraderGap,
    acceptance_rate,
    acceptance_ratio,
    grader_human_gap,
    merge_table,
    merged_column,
    normalised_rate,
)
from evalharness.stats.monitor import (
    DriftBaseline,
    DriftReport,
    daily_counts,
    detect_drift,
    freeze_baseline,
    window_intervals,
)
from evalharness.stats.multiple import adjust_pvalues, compare_all
from evalharness.stats.paired import PairedComparison, compare, difference_interval, paired_t
from evalharness.stats.passk import pass_at_k, pass_hat_k, pass_k_table
from evalharness.stats.power import PilotPlan, mde, plan_from_pilot, plan_table, tasks_needed
from evalharness.stats.score import ScoreSummary, cluster_se, score
from evalharness.stats.sequential import beta_evalues, evalue_pvalues, msprt_pvalues
from evalharness.stats.signflip import signflip_pvalue
from evalharness.stats.table import per_task_table, score_table
from evalharness.stats.variance import VarianceDecomposition, mixed_components, variance_components

__all__ = [
    "FLAG_NAMES",
    "CostSummary",
    "DriftBaseline",
    "DriftReport",
    "GraderGap",
    "KappaSummary",
    "PairedComparison",
    "PilotPlan",
    "ScoreSummary",
    "VarianceDecomposition",
    "acceptance_rate",
    "acceptance_ratio",
    "adjust_pvalues",
    "agreement_table",
    "beta_evalues",
    "binomial_pmf",
    "clopper_pearson_interval",
    "cluster_se",
    "cohen_kappa",
    "compare",
    "compare_all",
    "cost_per_resolved",
    "cusum_arl",
    "cusum_path",
    "cusum_reference",
    "cusum_threshold",
    "difference_interval",
    "daily_counts",
    "detect_drift",
    "evalue_pvalues",
    "flag_counts",
    "fleiss",
    "freeze_baseline",
    "grader_human_gap",
    "krippendorff_alpha",
    "mde",
    "merge_table",
    "merged_column",
    "mixed_components",
    "msprt_pvalues",
    "newcombe_difference",
    "normal_cusum",
    "normal_threshold",
    "normalised_rate",
    "bonett_price_interval",
    "paired_jeffreys_interval",
    "paired_t",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_table",
    "per_task_table",
    "plan_from_pilot",
    "plan_table",
    "poisson_binomial_pmf",
    "prob_greater",
    "ratio_estimate",
    "score",
    "score_table",
    "signflip_pvalue",
    "t_interval",
    "trial_flags",
    "tasks_needed",
    "variance_components",
    "wilson_interval",
    "window_intervals",
]
