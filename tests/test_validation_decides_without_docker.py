"""`validation.decide`: a task's verdict from its empty run and gold runs, decided where it is pure.

Each verdict has a case, and each boundary a case on both sides, so a flipped condition fails a test.
"""

from __future__ import annotations

import pytest

from evalharness.types import TaskSpec
from evalharness.validation import Run, decide

TASK = TaskSpec(instance_id="t", problem_statement="x", FAIL_TO_PASS=["f1", "f2"], PASS_TO_PASS=["p1"])


def run(outcome="resolved", **tests) -> Run:
    return Run(outcome, {"f1": "passed", "f2": "passed", "p1": "passed", **tests})


def base(**tests) -> Run:
    return Run("unresolved", {"f1": "failed", "f2": "failed", "p1": "passed", **tests})


def test_ok_when_gold_resolves_every_time_and_every_f2p_fails_at_base():
    verdict = decide(TASK, base(), [run(), run(), run()])
    assert verdict.verdict == "ok" and "3/3" in verdict.reason
    assert verdict.tests["f1"] == {"list": "FAIL_TO_PASS", "base": "failed", "gold_pass_rate": 1.0,
                                   "gold": ["passed"] * 3}
    assert verdict.tests["p1"]["list"] == "PASS_TO_PASS"


@pytest.mark.parametrize("status", ["error", "missing", "skipped"])
def test_a_f2p_that_does_not_pass_at_base_counts_as_failing(status):
    assert decide(TASK, base(f1=status), [run()]).verdict == "ok"


@pytest.mark.parametrize("status", ["passed", "xfail"])
def test_empty_passes_names_the_f2p_tests_that_pass_with_no_fix(status):
    verdict = decide(TASK, base(f2=status), [run(), run()])
    assert verdict.verdict == "empty_passes" and "f2" in verdict.reason and "f1" not in verdict.reason


def test_gold_fails_names_the_tests_that_do_not_pass():
    verdict = decide(TASK, base(), [run("unresolved", p1="failed")] * 3)
    assert verdict.verdict == "gold_fails" and "p1" in verdict.reason and "f1" not in verdict.reason
    assert verdict.tests["p1"]["gold_pass_rate"] == 0.0


def test_a_gold_run_that_errors_is_gold_fails_with_its_reason():
    verdict = decide(TASK, base(), [Run("test_run_error", {}, reason="collection failed")])
    assert verdict.verdict == "gold_fails" and "collection failed" in verdict.reason


def test_a_test_that_changes_status_between_gold_runs_is_flaky_with_its_rate():
    verdict = decide(TASK, base(), [run(), run("unresolved", f1="failed"), run()])
    assert verdict.verdict == "flaky" and "f1 (67%)" in verdict.reason
    assert verdict.tests["f1"]["gold_pass_rate"] == pytest.approx(2 / 3)


def test_flaky_wins_over_gold_fails_and_gold_fails_over_empty_passes():
    assert decide(TASK, base(f1="passed"), [run(), run("unresolved", f2="failed")]).verdict == "flaky"
    assert decide(TASK, base(f1="passed"), [run("unresolved", f2="failed")] * 2).verdict == "gold_fails"


def test_patch_that_does_not_apply_is_its_own_verdict():
    assert decide(TASK, base(), [Run("patch_apply_failed", {})]).verdict == "gold_does_not_apply"
    verdict = decide(TASK, Run("task_error", {}, reason="the test_patch does not apply"), [run()])
    assert verdict.verdict == "gold_does_not_apply" and "test_patch" in verdict.reason


def test_one_gold_run_is_enough_to_decide_and_none_is_not_ok():
    assert decide(TASK, base(), [run()]).verdict == "ok"
    assert decide(TASK, base(), []).verdict == "gold_fails"
    assert decide(TASK, None, [run()]).verdict == "gold_fails"


def test_a_gold_run_the_grader_did_not_resolve_is_not_ok_even_with_every_listed_test_passing():
    """e.g. the exit code contradicts the parsed passes: the grader's outcome decides, not the statuses."""
    verdict = decide(TASK, base(), [run(), Run("unresolved", run().tests, reason="exit code 1 with all passed")])
    assert verdict.verdict == "gold_fails" and "exit code 1" in verdict.reason


def test_an_xfail_the_grader_accepted_counts_as_passing_in_the_rates():
    verdict = decide(TASK, base(), [run(p1="xfail"), run(p1="xfail")])
    assert verdict.verdict == "ok" and verdict.tests["p1"]["gold_pass_rate"] == 1.0


def test_the_cause_of_a_failing_gold_run_is_read_from_its_output_only_when_it_shows():
    from evalharness.validation import likely_cause

    requests_log = ("FAILED test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET - requests.exceptions."
                    "ConnectionError: HTTPConnectionPool(host='httpbin.org', port=80): Max retries exceeded with url:"
                    " /get (Caused by NewConnectionError: Failed to establish a new connection: [Errno -3] "
                    "Temporary failure in name resolution)")
    assert likely_cause([requests_log]).startswith("needs the network")
    assert likely_cause(["E   ModuleNotFoundError: No module named 'pytz'\n"]) == "a module the environment lacks: 'pytz'"
    assert likely_cause(["AssertionError: 3 != 4"]) is None
    assert likely_cause([]) is None
    assert likely_cause([requests_log], ["unresolved"]).startswith("needs the network")
    assert "timed out" in likely_cause([requests_log], ["tests_timed_out"])  # the outcome before what it printed
