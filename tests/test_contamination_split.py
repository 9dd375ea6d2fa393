"""Contamination dates (pure): date windows select tasks, and scores split at a model's training cutoff.

Pins: public-benchmark scores mix tasks a model may have trained on with tasks it cannot have seen;
a user comparing two models on a mined pack could not tell how much of a lead came from the older
tasks, and tasks without a date vanished from a filtered run without a word.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalharness.errors import UserError
from evalharness.stats import score_table
from evalharness.stats.cutoff import cutoff_split, parse_when, select_created, side_of
from evalharness.types import TRIAL_COLUMNS


def trials(resolved_by_task: dict[str, list[bool]], *, model="m", harness="h") -> pd.DataFrame:
    rows = [{"run_id": "r", "pack": "p", "task_id": task, "model": model, "harness": harness,
             "config": f"{harness}/{model}", "seed": seed, "outcome": "resolved" if ok else "unresolved",
             "resolved": ok, "infra": False, "cost_usd": 0.0, "input_tokens": 0, "output_tokens": 0,
             "total_tokens": 0, "duration_s": 1.0, "started_at": pd.Timestamp("2026-01-01"), "repo": "x",
             "flags": ()}
            for task, results in resolved_by_task.items() for seed, ok in enumerate(results)]
    return pd.DataFrame(rows)[TRIAL_COLUMNS]


# --- dates -------------------------------------------------------------------------------------

def test_a_date_is_its_whole_day_and_after_and_before_are_strict():
    cutoff = parse_when("2024-04-30")
    assert side_of("2024-04-30T23:59:59Z", cutoff) == "before"     # the cutoff's own day: possibly seen
    assert side_of("2024-05-01T00:00:00Z", cutoff) == "after"
    assert side_of("2024-05-01", cutoff) == "after"
    assert side_of("2024-05-01T01:00:00+02:00", cutoff) == "before"  # 2024-04-30T23:00Z
    instant = parse_when("2024-04-30T12:00:00Z")
    assert side_of("2024-04-30T12:00:00Z", instant) == "before" and side_of("2024-04-30T12:00:01Z", instant) == "after"
    assert side_of("2024-04-30T12:00:01", instant) == "after"         # no zone: UTC


def test_missing_and_unreadable_created_at_are_undated():
    cutoff = parse_when("2024-04-30")
    assert side_of("", cutoff) == side_of(None, cutoff) == side_of("last spring", cutoff) == "undated"


@pytest.mark.parametrize("bad", ["2024-13-01", "yesterday", "30/04/2024", ""])
def test_a_bad_date_is_a_user_error_naming_the_option(bad):
    with pytest.raises(UserError, match="--created-after: .* is not a date"):
        select_created({"a": "2024-01-01"}, after=bad or " ")


CREATED = {"old": "2023-06-01T10:00:00Z", "mid": "2024-03-15", "new": "2024-09-01T08:00:00+00:00",
           "undated": "", "garbled": "spring 2024"}


def test_a_window_keeps_the_tasks_inside_it_and_names_those_it_cannot_place():
    chosen = select_created(CREATED, after="2023-12-31", before="2024-06-01")
    assert chosen.kept == ["mid"] and chosen.outside == ["old", "new"]
    assert chosen.undated == ["undated", "garbled"] and chosen.unreadable == {"garbled": "spring 2024"}
    assert select_created(CREATED, after="2024-03-15").kept == ["new"]           # strict: not that day
    assert select_created(CREATED, before="2024-03-15").kept == ["old"]
    assert select_created(CREATED, before="2024-03-16").kept == ["old", "mid"]


def test_no_window_keeps_everything_dated_or_not():
    chosen = select_created(CREATED)
    assert chosen.kept == list(CREATED) and chosen.undated == [] and chosen.outside == []


# --- the split ---------------------------------------------------------------------------------

@pytest.mark.parametrize("x_after, n_after, x_before, n_before, low, high", [
    (56, 70, 48, 80, 0.0524, 0.3339),
    (9, 10, 3, 10, 0.1705, 0.8090),
    (6, 7, 2, 7, 0.0582, 0.8062),
])
def test_newcombe_interval_of_the_difference_matches_newcombe_1998(x_after, n_after, x_before, n_before, low, high):
    """Newcombe (1998), Stat Med 17:873, Table II, method 10, examples (a) to (c): one seed per task, so the
    tasks after the cutoff and before it are two independent binomial samples."""
    after = {f"a{i}": [i < x_after] for i in range(n_after)}
    before = {f"b{i}": [i < x_before] for i in range(n_before)}
    created = {**{t: "2025-02-01" for t in after}, **{t: "2024-01-01" for t in before}}
    row = cutoff_split(trials({**after, **before}), created, {"m": "2024-12-31"}).iloc[0]
    assert (row.n_tasks_after, row.n_tasks_before, row.n_undated) == (n_after, n_before, 0)
    assert row.diff_method == "newcombe"
    assert row.difference == pytest.approx(x_after / n_after - x_before / n_before)
    assert (round(row.diff_low, 4), round(row.diff_high, 4)) == (low, high)


def test_with_seeds_the_difference_is_welch_on_task_means_as_scipy_computes_it():
    rng = np.random.default_rng(7)
    after = {f"a{i}": list(rng.random(3) < 0.3) for i in range(25)}
    before = {f"b{i}": list(rng.random(3) < 0.6) for i in range(40)}
    created = {**{t: "2025-06-01" for t in after}, **{t: "2023-06-01" for t in before}}
    row = cutoff_split(trials({**after, **before}), created, {"m": "2024-12-31"}).iloc[0]
    means_a = [np.mean(v) for v in after.values()]
    means_b = [np.mean(v) for v in before.values()]
    ci = stats.ttest_ind(means_a, means_b, equal_var=False).confidence_interval(0.95)
    assert row.diff_method == "welch"
    assert row.difference == pytest.approx(np.mean(means_a) - np.mean(means_b))
    assert (row.diff_low, row.diff_high) == pytest.approx((ci.low, ci.high))


def test_each_side_has_the_score_tables_rate_and_interval_on_its_tasks():
    rng = np.random.default_rng(3)
    results = {f"t{i}": list(rng.random(2) < 0.5) for i in range(30)}
    created = {t: ("2025-01-10" if i % 3 else "2024-01-10") for i, t in enumerate(results)}
    df = trials(results)
    row = cutoff_split(df, created, {"m": "2024-12-31"}).iloc[0]
    for side, keep in (("after", lambda t: created[t] > "2025"), ("before", lambda t: created[t] < "2025")):
        table = score_table(df[df["task_id"].map(keep)]).iloc[0]
        assert row[f"n_tasks_{side}"] == table.n_tasks
        assert (row[f"resolve_rate_{side}"], row[f"ci_low_{side}"], row[f"ci_high_{side}"]) == pytest.approx(
            (table.resolve_rate, table.ci_low, table.ci_high))
        assert row[f"interval_{side}"] == table.interval


def test_only_configurations_whose_model_has_a_cutoff_are_split_and_undated_tasks_are_counted_apart():
    results = {"t1": [True], "t2": [False], "t3": [True], "t4": [True]}
    created = {"t1": "2023-01-01", "t2": "2025-01-01", "t3": "2025-02-01", "t4": ""}
    df = pd.concat([trials(results, model="dated"), trials(results, model="plain"),
                    trials(results, harness="oracle", model="none")])
    table = cutoff_split(df, created, {"dated": "2024-06-30", "plain": None})
    assert list(table["config"]) == ["h/dated"]
    row = table.iloc[0]
    assert (row.n_tasks_before, row.n_tasks_after, row.n_undated) == (1, 2, 1)
    assert row.resolve_rate_after == pytest.approx(0.5) and row.resolve_rate_before == 1.0


def test_a_side_without_tasks_gives_nan_and_says_so():
    row = cutoff_split(trials({"t1": [True], "t2": [False]}), {"t1": "2020-01-01", "t2": "2020-02-01"},
                       {"m": "2024-01-01"}).iloc[0]
    assert row.n_tasks_after == 0 and np.isnan(row.resolve_rate_after) and np.isnan(row.difference)
    assert "no task created after the cutoff" in row.note


def test_infrastructure_failures_and_task_errors_are_left_out_as_in_the_score_table():
    df = trials({"t1": [True, True], "t2": [False, True]})
    df.loc[1, ["infra", "outcome"]] = [True, "infra_error"]
    df.loc[3, ["outcome", "resolved"]] = ["task_error", False]
    row = cutoff_split(df, {"t1": "2025-01-01", "t2": "2025-01-01"}, {"m": "2024-01-01"}).iloc[0]
    assert row.n_trials_after == 2 and row.resolve_rate_after == pytest.approx(0.5)


def test_row_order_changes_nothing():
    rng = np.random.default_rng(11)
    results = {f"t{i}": list(rng.random(2) < 0.5) for i in range(20)}
    created = {t: ("2025-01-10" if i % 2 else "2024-01-10") for i, t in enumerate(results)}
    df = trials(results)
    one = cutoff_split(df, created, {"m": "2024-12-31"})
    two = cutoff_split(df.sample(frac=1.0, random_state=1), created, {"m": "2024-12-31"})
    pd.testing.assert_frame_equal(one, two)


def test_a_bad_cutoff_is_a_user_error_naming_the_model():
    with pytest.raises(UserError, match="training_cutoff of m"):
        cutoff_split(trials({"t": [True]}), {"t": "2025-01-01"}, {"m": "late 2024"})
