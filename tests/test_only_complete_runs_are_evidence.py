"""Only complete runs are evidence: a run that timed out, crashed or stopped part-way decides no list and no verdict.

Pins (issue 24): validation kept a mined task whose empty-patch run timed out at 302.6 s (limit 300 s), and
discovery left 6,309 tests out as flaky with pass rates 0.5 / 1.0, what one base run stopping part-way produces:
a run with no statuses read as "every test failed". Here the decisions are pinned where they are pure, and
through the real CLI and Docker: a task whose bug makes the test run hang, or kill the test process, at base
is refused with that reason (after one retry), never given lists or an `ok` from that run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalharness.types import TaskSpec
from evalharness.validation import Lists, Run, decide, discover, discovery_json, incomplete_reason
from support import run_cli

TASK = TaskSpec(instance_id="t", problem_statement="x", FAIL_TO_PASS=["f1"], PASS_TO_PASS=["p1"])


def ran(outcome="unresolved", **tests) -> Run:
    return Run(outcome, {}, all_tests=dict(tests))


def listed(outcome="resolved", **tests) -> Run:
    return Run(outcome, {"f1": "passed", "p1": "passed", **tests})


@pytest.mark.parametrize("outcome", ["tests_timed_out", "test_run_error", "tampered", "sandbox_error"])
def test_discovery_makes_no_list_from_a_run_that_did_not_complete(outcome):
    """One base run stopping part-way once made every test 'flaky' at 0.5 (or, alone, every test FAIL_TO_PASS)."""
    complete_base = ran(a="failed", b="passed")
    gold = [ran("resolved", a="passed", b="passed")] * 2
    lists = discover([complete_base, Run(outcome, {}, reason="tests timed out after 300 s")], gold)
    assert (lists.verdict, lists.FAIL_TO_PASS, lists.PASS_TO_PASS, lists.flaky) == ("incomplete_run", [], [], {})
    assert f"base run 2 ended {outcome}" in lists.reason and "1 of 4 run(s)" in lists.reason
    assert discover([Run(outcome, {})], gold[:1]).verdict == "incomplete_run"
    assert discover([complete_base], [gold[0], Run(outcome, {})]).verdict == "incomplete_run"
    assert discover([complete_base, complete_base], gold).verdict == "ok"  # the same runs, all complete


def test_validation_decides_nothing_from_an_empty_run_that_timed_out():
    """The issue's case: F2P 'missing' because the run stopped is not F2P failing."""
    timed_out = Run("tests_timed_out", {"f1": "missing", "p1": "missing"}, reason="tests timed out after 300 s")
    verdict = decide(TASK, timed_out, [listed(), listed()])
    assert verdict.verdict == "incomplete" and "empty-patch run 1 ended tests_timed_out" in verdict.reason
    assert decide(TASK, Run("unresolved", {"f1": "failed", "p1": "passed"}), [listed(), listed()]).verdict == "ok"


def test_a_gold_run_that_timed_out_is_no_evidence_that_the_gold_patch_fails():
    verdict = decide(TASK, Run("unresolved", {"f1": "failed", "p1": "passed"}),
                     [listed(), Run("tests_timed_out", {}, reason="tests timed out after 300 s")])
    assert verdict.verdict == "incomplete" and "gold run 2" in verdict.reason


def test_a_run_the_tests_themselves_ended_is_still_evidence_in_validation():
    """With the lists known, a base run that crashes shows every FAIL_TO_PASS not passing (a segfault can be the
    bug), and a gold run that crashes shows the gold patch failing: those are decided, not retried."""
    crashed = Run("test_run_error", {"f1": "missing", "p1": "missing"}, reason="died before its session ended")
    assert decide(TASK, crashed, [listed()]).verdict == "ok"
    assert decide(TASK, Run("unresolved", {"f1": "failed", "p1": "passed"}), [crashed]).verdict == "gold_fails"


def test_a_patch_that_does_not_apply_is_named_before_any_run_is_called_incomplete():
    verdict = decide(TASK, Run("tests_timed_out", {}), [Run("patch_apply_failed", {})])
    assert verdict.verdict == "gold_does_not_apply"


def test_the_reason_counts_and_names_the_first_run_that_did_not_complete():
    assert incomplete_reason({"base": [ran(), ran()], "gold": [ran("resolved")]}) is None
    reason = incomplete_reason({"base": [ran(), ran("test_run_error")], "gold": [ran("tests_timed_out")]})
    assert reason.startswith("2 of 3 run(s) did not complete") and "base run 2 ended test_run_error" in reason


def test_the_report_keeps_the_discovery_runs_and_why_tests_were_left_out():
    lists = Lists(["a"], ["b"], flaky={"c": {"base": 0.5, "gold": 1.0}}, broken_by_gold=["d"])
    retry = Run("unresolved", {}, seconds=3.0, output_tail="1 failed", retried_after="tests_timed_out: after 300 s")
    kept = discovery_json(lists, [retry], [Run("resolved", {}, seconds=2.0, output_tail="all passed")])
    assert kept["flaky"] == {"c": {"base": 0.5, "gold": 1.0}} and kept["broken_by_gold"] == ["d"]
    assert kept["runs"]["base"] == [{"outcome": "unresolved", "reason": "", "seconds": 3.0, "output_tail": "1 failed",
                                     "retried_after": "tests_timed_out: after 300 s"}]  # a run that did not resolve says why
    assert kept["runs"]["gold"] == [{"outcome": "resolved", "reason": "", "seconds": 2.0, "output_tail": "all passed"}]
    stopped = discovery_json(lists, [Run("tests_timed_out", {}, output_tail="....")], [])
    assert stopped["runs"]["base"][0]["output_tail"] == "...."  # why it stopped, where it stopped


# --- through the real CLI and Docker ---------------------------------------------------------------------------

PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "0.1.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
'''
BUGS = {
    "hangs": "    while not values:\n        pass\n",                    # the bug: an empty list loops forever
    "dies": "    if not values:\n        import os\n        os._exit(3)\n",  # the bug: the process dies mid-run
}
FIX = "    if not values:\n        return 0\n"
SPAN = 'def span(values):\n    """The distance between the smallest and the largest value."""\n{body}' \
       "    return max(values) - min(values)\n"
TESTS = "from calc import span\n\n\ndef test_span():\n    assert span([3, 9, 4]) == 6\n\n\n" \
        "def test_span_of_nothing_is_zero():\n    assert span([]) == 0\n"


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def _pack(tmp_path: Path, bug: str) -> tuple[str, str]:
    """A pack of a repository whose bug (at base) hangs or kills the test run; its fix at the next commit."""
    repo = tmp_path / "calc"
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "calc" / "__init__.py").write_text(SPAN.format(body=BUGS[bug]))
    (repo / "tests" / "test_span.py").write_text(TESTS.split("\n\n\ndef test_span_of")[0] + "\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "calc")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "calc" / "__init__.py").write_text(SPAN.format(body=FIX))
    (repo / "tests" / "test_span.py").write_text(TESTS)
    _git(repo, "commit", "-qam", "span of nothing")
    run_cli("packs", "new", "--repo", str(repo), "--out", "pack", cwd=tmp_path)
    manifest = tmp_path / "pack" / "pack.yaml"
    manifest.write_text(manifest.read_text() + "timeouts:\n  tests_s: 20\n")
    (tmp_path / "span.md").write_text("span([]) does not return\n\nThe span of no values should be 0, as for one "
                                      "value; today the call never comes back (or ends the program).\n")
    return base, _git(repo, "rev-parse", "HEAD")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("bug", ["hangs", "dies"])
def test_a_task_whose_base_run_does_not_complete_is_refused_never_given_lists(tmp_path, base_image, bug):
    """Before: the stopped run's empty statuses made both tests FAIL_TO_PASS and the task was added."""
    base, fix = _pack(tmp_path, bug)
    refused = run_cli("packs", "add-task", "pack", "--base", base, "--statement", "span.md", "--tests",
                      "tests/test_span.py", "--gold", fix, "--id", "span-empty", "--reruns", "1", cwd=tmp_path,
                      check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    outcome = "tests_timed_out" if bug == "hangs" else "test_run_error"
    assert "not added: incomplete_run" in refused.stderr and f"base run 1 ended {outcome}" in refused.stderr
    assert (tmp_path / "pack" / "tasks.jsonl").read_text() == ""


@pytest.mark.docker
@pytest.mark.slow
def test_validation_retries_an_empty_run_that_timed_out_and_does_not_call_the_task_ok(tmp_path, base_image):
    """Lists given by hand (no discovery): the empty-patch run hangs on the FAIL_TO_PASS test, twice."""
    base, fix = _pack(tmp_path, "hangs")
    run_cli("packs", "add-task", "pack", "--base", base, "--statement", "span.md", "--tests", "tests/test_span.py",
            "--gold", fix, "--id", "span-empty", "--fail-to-pass", "tests/test_span.py::test_span_of_nothing_is_zero",
            "--pass-to-pass", "tests/test_span.py::test_span", cwd=tmp_path)
    validated = run_cli("packs", "validate", "pack", "--run", "--reruns", "1", cwd=tmp_path, check=False)
    assert validated.returncode == 1 and "0/1 ok" in validated.stdout, validated.stdout + validated.stderr
    report = json.loads((tmp_path / "pack" / "validation" / "span-empty.json").read_text())
    assert report["verdict"] == "incomplete" and "empty-patch run 1 ended tests_timed_out" in report["reason"]
    assert report["runs"]["empty"]["retried_after"].startswith("tests_timed_out")  # retried once, then decided
    assert report["runs"]["gold"][0]["outcome"] == "resolved"
    assert "timed out" in report["cause"]
