"""The audit's broken-fraction estimate: its point value, its degenerate cases, and its coverage by simulation."""

import numpy as np
import pytest

from evalharness.stats.prevalence import corrected_prevalence, labelled_share


def test_point_estimate_is_flag_share_times_precision_over_recall():
    # 40 of 200 flagged; on 50 labelled: tp 8, fp 2, fn 4, tn 36 -> P 0.8, R 2/3 -> pi = 0.2 * 0.8 / (2/3) = 0.24
    est = corrected_prevalence(40, 200, 8, 2, 4, 36)
    assert est.estimate == pytest.approx(0.24)
    assert est.precision == pytest.approx(0.8) and est.recall == pytest.approx(2 / 3)
    assert est.raw == pytest.approx(0.2) and est.method == "flag-share-corrected"
    assert 0 <= est.ci_low < 0.24 < est.ci_high <= 1


def test_a_pipeline_that_misses_half_doubles_the_estimate():
    perfect = corrected_prevalence(30, 100, 10, 0, 0, 40)
    half = corrected_prevalence(30, 100, 10, 0, 10, 30)
    assert perfect.estimate == pytest.approx(0.3)
    assert half.estimate == pytest.approx(0.6)


def test_without_labels_the_raw_share_is_returned_and_said_to_be_uncorrected():
    est = corrected_prevalence(10, 100, 0, 0, 0, 0)
    assert est.method == "flag-share" and est.estimate == pytest.approx(0.1)
    assert "not corrected" in est.note
    assert est.ci_low < 0.1 < est.ci_high


def test_bad_counts_are_refused():
    with pytest.raises(ValueError):
        corrected_prevalence(5, 0, 1, 0, 0, 0)
    with pytest.raises(ValueError):
        corrected_prevalence(11, 10, 1, 0, 0, 0)
    with pytest.raises(ValueError):
        corrected_prevalence(1, 10, -1, 0, 0, 0)


def test_no_broken_label_gives_an_estimate_and_a_note():
    est = corrected_prevalence(5, 100, 0, 3, 0, 17)
    assert "recall is undefined" in est.note
    assert np.isfinite(est.estimate) and 0 <= est.ci_low <= est.ci_high <= 1


def test_labelled_share_is_exact_when_every_task_is_labelled():
    every = labelled_share(30, 100, 100)
    assert every.ci_low == every.ci_high == pytest.approx(0.3)
    sample = labelled_share(30, 100, 500)
    assert sample.ci_low < 0.3 < sample.ci_high


@pytest.mark.parametrize("truth,se,sp", [(0.3, 0.6, 0.95), (0.1, 0.5, 0.97)])
def test_the_interval_covers_the_true_broken_fraction(truth, se, sp):
    """Known truth: 500 tasks, a pipeline with recall ``se`` and specificity ``sp``, 100 tasks labelled at random.
    Over 300 simulated benchmarks the 95% interval holds the true fraction at least 92% of the time, and the
    point estimate is nearly unbiased (the raw flagged share is not)."""
    rng = np.random.default_rng(7)
    covered, estimates, raws = 0, [], []
    sims = 300
    for _ in range(sims):
        broken = rng.random(500) < truth
        flagged = np.where(broken, rng.random(500) < se, rng.random(500) < 1 - sp)
        sample = rng.choice(500, 100, replace=False)
        b, f = broken[sample], flagged[sample]
        est = corrected_prevalence(int(flagged.sum()), 500, int((b & f).sum()), int((~b & f).sum()),
                                   int((b & ~f).sum()), int((~b & ~f).sum()), draws=4000)
        actual = broken.mean()
        covered += est.ci_low <= actual <= est.ci_high
        estimates.append(est.estimate)
        raws.append(est.raw)
    assert covered / sims >= 0.92
    assert abs(np.mean(estimates) - truth) < 0.03
    assert abs(np.mean(raws) - truth) > 0.02  # the uncorrected share is off: the correction matters
    print(f"coverage {covered / sims:.3f}, mean estimate {np.mean(estimates):.4f}, mean raw share {np.mean(raws):.4f}")
