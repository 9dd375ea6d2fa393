"""Flagged trials are counted per configuration, every flag, zeros kept, infrastructure failures left out.

Pins: touched_test_files / touched_test_config recorded only in result.json, so a configuration whose
"resolved" trials had rewritten the tests looked exactly like an honest one in every report.
"""

from __future__ import annotations

import pandas as pd

from evalharness.stats import FLAG_NAMES, flag_counts, trial_flags
from evalharness.types import Flag


def _trials() -> pd.DataFrame:
    rows = [  # config, outcome, infra, flags
        ("a/m", "resolved", False, ["touched_tests"]),
        ("a/m", "resolved", False, ["touched_tests", "touched_config"]),
        ("a/m", "tampered", False, ["tampered", "touched_config"]),
        ("a/m", "tampered", False, []),  # the outcome alone is the flag
        ("a/m", "unresolved", False, '["outcome_chosen_by_code"]'),  # JSON text, as some stores give it
        ("a/m", "sandbox_error", True, ["touched_tests"]),  # infrastructure: not counted, like the rate
        ("b/m", "resolved", False, []),
        ("b/m", "patch_too_large", False, None),
        ("b/m", "task_error", False, ["touched_tests"]),  # a broken task says nothing about the agent
        ("c/m", "sandbox_error", True, []),  # only infrastructure failures: a row of zeros
    ]
    return pd.DataFrame([{"config": c, "harness": c.split("/")[0], "model": "m", "task_id": f"t{i}",
                          "outcome": o, "infra": inf, "resolved": o == "resolved", "flags": f}
                         for i, (c, o, inf, f) in enumerate(rows)])


def test_counts_per_configuration_by_hand():
    table = flag_counts(_trials()).set_index("config")
    assert list(table.columns) == ["n_trials", "n_flagged", *FLAG_NAMES]
    assert list(table.index) == ["a/m", "b/m", "c/m"]
    a = table.loc["a/m"]
    assert (a.n_trials, a.n_flagged, a.tampered, a.touched_tests, a.touched_config, a.outcome_chosen_by_code) == (
        5, 5, 2, 2, 2, 1)
    assert a.restore_failed == a.patch_rejected == a.patch_too_large == 0
    b = table.loc["b/m"]
    assert (b.n_trials, b.n_flagged, b.patch_too_large, b.tampered) == (2, 1, 1, 0)
    assert table.loc["c/m"].sum() == 0


def test_row_order_changes_nothing_and_config_falls_back_to_harness_model():
    df = _trials()
    shuffled = df.sample(frac=1.0, random_state=3).drop(columns=["config"])
    pd.testing.assert_frame_equal(flag_counts(shuffled), flag_counts(df))


def test_no_flags_column_means_no_flags_and_unknown_flags_are_kept():
    df = _trials().drop(columns=["flags"])
    table = flag_counts(df).set_index("config")
    assert table["tampered"].to_dict() == {"a/m": 2, "b/m": 0, "c/m": 0}  # from the outcomes alone
    assert table["touched_tests"].sum() == 0
    new = pd.DataFrame({"config": ["x/m"], "task_id": ["t"], "outcome": ["resolved"], "infra": [False],
                        "flags": [["some_future_flag", Flag.TOUCHED_TESTS]]})
    row = flag_counts(new).iloc[0]
    assert (row["some_future_flag"], row["touched_tests"], row["n_flagged"]) == (1, 1, 1)


def test_trial_flags_adds_only_outcomes_that_are_flags():
    df = pd.DataFrame({"outcome": ["tampered", "unresolved", "patch_rejected"], "flags": [[], ["restore_failed"], []]})
    assert list(trial_flags(df)) == [{"tampered"}, {"restore_failed"}, {"patch_rejected"}]


def test_empty_frame():
    empty = _trials().iloc[0:0]
    assert len(flag_counts(empty)) == 0
