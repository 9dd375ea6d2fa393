"""The audit's conclusions, decided without Docker: flags, consensus, agreement, broken fraction, ceiling."""

from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa

from evalharness.audit.results import audit_results, among_humans, broken_fraction, consensus, task_flags
from evalharness.store import Store


def f(task, probe, flagged, severity=2, family="underspecified", status="ok", seed=0, reason="r"):
    return {"task_id": task, "probe": probe, "flagged": flagged, "severity": severity, "family": family,
            "status": status, "seed": seed, "reason": reason, "evidence": {}}


def lab(task, who, broken, severity=None, family=None):
    return {"task_id": task, "annotator": who, "broken": broken, "family": family,
            "severity": (2 if broken else 0) if severity is None else severity}


def test_a_flag_needs_an_ok_finding_at_the_minimum_severity():
    flags = task_flags([f("a", "p", True, 2), f("b", "p", True, 1), f("c", "p", False, 0)], ["a", "b", "c"])
    assert [flags[t].flagged for t in "abc"] == [True, False, False]
    assert task_flags([f("b", "p", True, 1)], ["b"], min_severity=1)["b"].flagged


def test_skipped_and_invalid_findings_are_not_clean_they_leave_the_task_unaudited():
    flags = task_flags([f("a", "p", False, 0, status="skipped"), f("b", "investigator", False, 0, status="invalid"),
                        f("c", "p", False, 0)], ["a", "b", "c", "d"])
    assert [flags[t].audited for t in "abcd"] == [False, False, True, False]


def test_investigator_seeds_ensemble_to_the_most_severe():
    rows = [f("a", "investigator", False, 0, seed=1), f("a", "investigator", True, 3, "overly_strict", seed=2),
            f("a", "investigator", False, 0, status="invalid", seed=3)]
    flag = task_flags(rows, ["a"])["a"]
    assert flag.flagged and flag.severity == 3 and flag.families == ["overly_strict"]


def test_consensus_is_the_majority_and_a_tie_is_broken():
    c = consensus([lab("a", "x", True), lab("a", "y", False), lab("b", "x", False), lab("b", "y", False),
                   lab("b", "z", True, 3), lab("c", "x", True, 3), lab("c", "y", True, 1), lab("c", "z", False)])
    assert c["a"].broken and not c["b"].broken and c["c"].broken
    assert c["c"].severity == 1.0 and c["b"].annotators == 3


def test_three_annotators_agreement_matches_statsmodels_fleiss():
    rng = np.random.default_rng(3)
    truth = rng.random(40) < 0.4
    labels = []
    for who in "xyz":
        noisy = np.where(rng.random(40) < 0.2, ~truth, truth)
        labels += [lab(f"t{i}", who, bool(b), int(b) * 2 + int(rng.random() < 0.5)) for i, b in enumerate(noisy)]
    out = among_humans(labels, n_boot=300)
    counts = np.zeros((40, 2))
    for r in labels:
        counts[int(r["task_id"][1:]), 0 if r["broken"] else 1] += 1
    assert out["kappa"]["method"] == "fleiss"
    assert out["kappa"]["kappa"] == pytest.approx(fleiss_kappa(counts))
    assert out["kappa"]["ci_low"] < out["kappa"]["kappa"] < out["kappa"]["ci_high"]
    assert 0 < out["severity_alpha"]["alpha"] <= 1


def test_one_annotator_has_no_agreement_and_says_so():
    assert "at least 2 annotators" in among_humans([lab("a", "x", True)])["note"]


def test_the_broken_fraction_is_corrected_by_the_pipelines_errors_on_labelled_tasks():
    ids = [f"t{i}" for i in range(20)]
    # pipeline flags t0-t5; humans labelled t0-t9: broken t0-t3 (flagged) and t6, t7 (missed); t4, t5 false flags
    findings = [f(t, "p", i < 6, 2 if i < 6 else 0) for i, t in enumerate(ids)]
    humans = consensus([lab(f"t{i}", "x", i in (0, 1, 2, 3, 6, 7)) for i in range(10)])
    est = broken_fraction(task_flags(findings, ids), humans)
    # f = 6/20, P = 4/6, R = 4/6 -> 0.3
    assert est["method"] == "flag-share-corrected" and est["estimate"] == pytest.approx(0.3)
    every = consensus([lab(t, "x", i % 4 == 0) for i, t in enumerate(ids)])
    assert broken_fraction(task_flags(findings, ids), every)["method"] == "labelled-share"
    assert broken_fraction(task_flags(findings, ids), every)["estimate"] == pytest.approx(0.25)


def test_the_ceiling_counts_only_blocking_families_and_clean_scores_drop_flagged_tasks():
    ids = ["a", "b", "c", "d"]
    findings = [f("a", "leak", True, 3, "solution_leak"), f("b", "strict", True, 2, "overly_strict"),
                f("c", "strict", False, 0, "overly_strict"), f("d", "strict", False, 0, "overly_strict")]
    trials = pd.DataFrame([{"run_id": "r", "pack": "p", "task_id": t, "model": "m", "harness": "h", "seed": 1,
                            "outcome": "resolved" if t in "ab" else "unresolved", "resolved": t in "ab",
                            "infra": False} for t in ids])
    out = audit_results(ids, findings, [], trials)
    assert out["broken_fraction"]["estimate"] == pytest.approx(0.5)
    assert out["ceiling"]["estimate"] == pytest.approx(0.75)  # the leak inflates, it does not cap
    [row] = out["clean_scores"]
    assert row["raw"]["rate"] == pytest.approx(0.5) and row["clean"]["rate"] == pytest.approx(0.0)
    assert row["tasks_removed"] == 2


def test_labels_round_trip_through_the_store_and_the_latest_per_annotator_counts(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    store.record_label("p", task_id="a", annotator="x", broken=True, severity=3, labelled_at=t0)
    store.record_label("p", task_id="a", annotator="x", broken=False, severity=0, labelled_at=t0 + timedelta(1))
    store.record_label("p", task_id="a", annotator="y", broken=True, severity=2, labelled_at=t0)
    latest = store.labels("p")
    assert [(r["annotator"], r["broken"]) for r in latest] == [("x", False), ("y", True)]
    assert len(store.labels("p", latest=False)) == 3
    assert consensus(latest)["a"].broken  # 1 of 2: a tie goes to broken


def test_a_batch_of_labels_is_stored_whole_or_not_at_all(tmp_path):
    import sqlalchemy as sa

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    good = {"task_id": "a", "annotator": "x", "broken": True, "severity": 2, "family": "underspecified"}
    with pytest.raises(sa.exc.IntegrityError):  # the database refuses the second row: the first is not kept
        store.record_labels("p", [good, {**good, "task_id": None}])
    assert store.labels("p", latest=False) == []
    store.record_labels("p", [good, {**good, "annotator": "y"}])
    assert len(store.labels("p")) == 2


def test_a_probe_is_scored_against_the_humans_verdicts_of_its_own_family():
    ids = ["a", "b", "c"]
    findings = [f("a", "leak", True, 2, "solution_leak"), f("b", "leak", False, 0, "solution_leak"),
                f("c", "leak", False, 0, "solution_leak")]
    labels = [lab("a", "x", True, 2, "solution_leak"), lab("b", "x", True, 3, "overly_strict"), lab("c", "x", False)]
    vs = audit_results(ids, findings, labels)["per_probe"]["leak"]["vs_humans"]
    assert vs["table"] == {"tp": 1, "fp": 0, "fn": 0, "tn": 2}  # b is broken, but not by a leak


def test_the_overall_flag_against_humans_matches_statsmodels_and_the_always_broken_baseline():
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(7)
    ids = [f"t{i}" for i in range(60)]
    human = rng.random(60) < 0.55
    # two probes; the overall flag is either at severity >= 2 (a severity-1 flag of p2 does not count)
    p1 = np.where(rng.random(60) < 0.3, ~human, human)
    p2 = rng.random(60) < 0.2
    findings = ([f(t, "p1", bool(a), 2 if a else 0) for t, a in zip(ids, p1)]
                + [f(t, "p2", bool(b), 1 if b else 0, "overly_strict") for t, b in zip(ids, p2)])
    labels = [lab(t, "x", bool(h), family="underspecified" if h else None) for t, h in zip(ids, human)]
    out = audit_results(ids, findings, labels)
    vs = out["pipeline_vs_humans"]
    tp, fp = int((p1 & human).sum()), int((p1 & ~human).sum())
    fn, tn = int((~p1 & human).sum()), int((~p1 & ~human).sum())
    assert vs["table"] == {"tp": tp, "fp": fp, "fn": fn, "tn": tn}  # p2's severity-1 flags are not in it
    reference = cohens_kappa(np.array([[tp, fp], [fn, tn]]))
    assert vs["kappa"] == pytest.approx(reference.kappa) and vs["se"] == pytest.approx(reference.std_kappa)
    p_o, p_e = (tp + tn) / 60, ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / 60**2
    assert vs["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e)) and vs["raw_agreement"] == pytest.approx(p_o)
    assert vs["precision"] == pytest.approx(tp / (tp + fp)) and vs["recall"] == pytest.approx(tp / (tp + fn))
    assert vs["always_broken"] == pytest.approx(human.mean())  # calling every task broken agrees this often
    assert "severity >= 2" in out["overall_rule"]


def test_two_labels_give_too_few_labels_not_a_kappa_of_one():
    ids = ["a", "b", "c"]
    findings = [f("a", "p", True, 2), f("b", "p", False, 0), f("c", "p", False, 0)]
    out = audit_results(ids, findings, [lab("a", "x", True, family="underspecified"), lab("b", "x", False)])
    vs = out["pipeline_vs_humans"]
    assert vs["too_few"] and np.isnan(vs["kappa"]) and np.isnan(vs["ci_low"]) and vs["n"] == 2
    assert vs["raw_agreement"] == 1.0 and "too few labels" in vs["note"]
    assert out["per_probe"]["p"]["vs_humans"]["too_few"]
    pair = among_humans([lab(t, who, t == "a") for t in ids for who in "xy"], n_boot=50)
    assert pair["kappa"]["too_few"] and pair["severity_alpha"]["too_few"]


def test_the_broken_fraction_names_its_correction():
    ids = [f"t{i}" for i in range(10)]
    findings = [f(t, "p", i < 3, 2 if i < 3 else 0) for i, t in enumerate(ids)]
    unlabelled = broken_fraction(task_flags(findings, ids), {})
    assert unlabelled["method"] == "flag-share" and unlabelled["correction"].startswith("none: no human labels")
    some = consensus([lab(f"t{i}", "x", i in (0, 1, 4)) for i in range(6)])
    corrected = broken_fraction(task_flags(findings, ids), some)
    assert corrected["correction"].startswith("f x P / R") and "6 labelled" in corrected["correction"]
    every = consensus([lab(t, "x", i < 2) for i, t in enumerate(ids)])
    assert broken_fraction(task_flags(findings, ids), every)["correction"].startswith("none needed")
