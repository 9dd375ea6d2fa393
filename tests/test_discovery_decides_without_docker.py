"""`validation.discover`: a mined or injected task's lists from runs at base and with the gold patch (pure).

Every rule has a case on each side, so a flipped condition fails a test; the grader's side (every test
a run reported, not only the listed ones) is checked through both verdict paths.
"""

from __future__ import annotations

import pytest

from evalharness.grading.grade import every_status
from evalharness.validation import Run, candidate, discover


def run(**tests) -> Run:
    return Run("resolved", {}, all_tests=dict(tests))


def test_fail_to_pass_is_failing_at_every_base_run_and_passing_at_every_gold_run():
    lists = discover([run(a="failed", b="passed"), run(a="error", b="passed")],
                     [run(a="passed", b="passed"), run(a="passed", b="passed")])
    assert (lists.FAIL_TO_PASS, lists.PASS_TO_PASS, lists.verdict) == (["a"], ["b"], "ok")
    assert lists.reason == "1 FAIL_TO_PASS, 1 PASS_TO_PASS"


def test_a_test_the_test_patch_adds_is_absent_at_base_and_counts_as_failing():
    lists = discover([run(b="passed")], [run(a="passed", b="passed")])
    assert lists.FAIL_TO_PASS == ["a"]


@pytest.mark.parametrize("at_base", ["xfail", "skipped", "failed"])
def test_only_a_pass_is_a_pass(at_base):
    assert discover([run(a=at_base)], [run(a="passed")]).FAIL_TO_PASS == ["a"]
    lists = discover([run(a="passed", b="passed")], [run(a=at_base, b="passed")])
    assert lists.FAIL_TO_PASS == [] and lists.broken_by_gold == ["a"] and "a" not in lists.PASS_TO_PASS


def test_a_test_whose_status_changes_between_runs_of_one_side_is_flaky_and_left_out():
    lists = discover([run(a="failed", c="passed"), run(a="failed", c="failed")],
                     [run(a="passed", b="passed", c="passed"), run(a="passed", b="failed", c="passed")])
    assert lists.FAIL_TO_PASS == ["a"] and lists.PASS_TO_PASS == []
    assert lists.flaky == {"b": {"base": 0.0, "gold": 0.5}, "c": {"base": 0.5, "gold": 1.0}}
    assert "2 flaky left out" in lists.reason


def test_failing_on_both_sides_is_in_neither_list():
    lists = discover([run(a="failed", b="failed")], [run(a="passed", b="failed")])
    assert lists.FAIL_TO_PASS == ["a"] and lists.PASS_TO_PASS == [] and lists.broken_by_gold == []


def test_nothing_fails_at_base_gold_fails_everything_and_no_runs_are_named():
    assert discover([run(a="passed")], [run(a="passed")]).verdict == "nothing_fails_at_base"
    assert discover([run(a="failed")], [run(a="failed")]).verdict == "gold_fails_everything"
    assert discover([run()], [run()]).verdict == "no_tests_ran"
    assert discover([], [run(a="passed")]).verdict == "no_tests_ran"
    assert discover([run(a="failed")], []).verdict == "no_tests_ran"


def test_a_candidate_may_have_empty_lists_and_its_other_fields_are_still_checked():
    task = candidate(instance_id="m-1", problem_statement="x", test_patch="")
    assert task.FAIL_TO_PASS == [] and task.PASS_TO_PASS == []
    with pytest.raises(ValueError):
        candidate(instance_id="bad id", problem_statement="x")


def test_every_status_reads_every_reported_test_from_junit_and_from_text():
    junit = ('<testsuites><testsuite><testcase classname="tests.test_a" name="test_x" file="tests/test_a.py"/>'
             '<testcase classname="tests.test_a" name="test_y" file="tests/test_a.py"><failure message="m"/>'
             '</testcase></testsuite></testsuites>')
    statuses = every_status("junit", exit_code=1, log="", junit_xml=junit)
    assert statuses == {"tests/test_a.py::test_x": "passed", "tests/test_a.py::test_y": "failed"}
    assert every_status("junit", exit_code=1, log="", junit_xml=None) == {}
    log = "PASSED tests/test_a.py::test_x\nFAILED tests/test_a.py::test_y - assert 0\n"
    assert every_status("pytest", exit_code=1, log=log, junit_xml=None) == statuses


def test_no_tests_ran_says_why_from_the_output_and_keeps_its_tail():
    """Issue 27: a no_tests_ran verdict had no output tail saying why."""
    from evalharness.validation import Lists, discovery_json

    said = "ERROR: file or directory not found: tests/test_x.py\n\nno tests ran in 0.01s\n"
    base, gold = [Run("unresolved", {}, output_tail=said)], [Run("unresolved", {}, output_tail=said)]
    lists = discover(base, gold)
    assert lists.verdict == "no_tests_ran"
    assert lists.reason == ("no run reported any test; the output ends: ERROR: file or directory not found: "
                            "tests/test_x.py | no tests ran in 0.01s")
    kept = discovery_json(lists, base, gold)["runs"]
    assert kept["gold"][0]["output_tail"] == said and kept["base"][0]["output_tail"] == said
    silent = discover([Run("unresolved", {})], [Run("unresolved", {})])
    assert silent.reason == "no run reported any test: the test command printed nothing"
    missing = discover([Run("unresolved", {}, output_tail="ModuleNotFoundError: No module named 'yaml'\n")],
                       [Run("unresolved", {})])
    assert missing.reason == "no run reported any test: a module the environment lacks: 'yaml'"
    reported = discovery_json(Lists(["t"], []), [run(t="failed")], [run(t="passed")])["runs"]
    assert "output_tail" not in reported["gold"][0]  # a complete run that reported tests keeps no tail
