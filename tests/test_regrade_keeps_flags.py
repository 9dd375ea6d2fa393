"""`evalharness grade` keeps every trial's flags: a re-grade re-reads the test run, not the patch or the
grading sandbox, so the evidence behind a flag is never dropped, and an outcome that is a flag adds it.

Pins: a re-grade that reported a trial as a clean "resolved -> resolved" while its stored result said the
patch had rewritten the task's tests. Runs without Docker: the run folder is written here.
"""

from __future__ import annotations

import json

from click.testing import CliRunner
from support import TINYPACK

from evalharness.cli import cli
from evalharness.packs import load_pack
from evalharness.regrade import regrade_run, regraded_flags
from evalharness.types import Outcome


def _write_trial(run_dir, task, seed: int, flags: list[str], *, required_fails: bool = False) -> None:
    tests = task.FAIL_TO_PASS + task.PASS_TO_PASS
    failing = tests[0] if required_fails else None
    cases = "".join(
        f'<testcase classname="tests.test_calc" name="{t.split("::")[1]}" file="tests/test_calc.py" time="0.001">'
        + ('<failure message="assert 11 == 10">assert 11 == 10</failure>' if t == failing else "") + "</testcase>"
        for t in tests)
    junit = (f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
             f'failures="{int(required_fails)}" skipped="0" tests="{len(tests)}">{cases}</testsuite></testsuites>')
    log = "\n".join(f"{'FAILED' if t == failing else 'PASSED'} {t}" for t in tests)
    log += f"\n===== {int(required_fails)} failed, {len(tests) - int(required_fails)} passed in 0.01s =====\n"
    folder = run_dir / "tinypack" / task.instance_id / "minimal" / "m" / f"seed-{seed}"
    folder.mkdir(parents=True)
    (folder / "junit.xml").write_text(junit)
    (folder / "test_output.txt").write_text(log)
    (folder / "result.json").write_text(json.dumps({
        "outcome": "resolved", "reason": "all required tests pass", "flags": flags, "task_id": task.instance_id,
        "harness": "minimal", "model": "m", "seed": seed,
        "grade": {"test_exit_code": int(required_fails), "patch_applied": True}}))


def _run(tmp_path):
    pack = load_pack(TINYPACK)
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps({"pack": {"path": str(TINYPACK), "hash": pack.content_hash}}))
    task = pack.task("tiny-clamp")
    _write_trial(run_dir, task, 0, ["touched_tests"])
    _write_trial(run_dir, task, 1, ["touched_config"], required_fails=True)  # stored resolved; its logs say not
    _write_trial(run_dir, task, 2, [])
    return run_dir


def test_grade_keeps_the_flags_and_says_how_many_trials_carry_them(tmp_path):
    run_dir = _run(tmp_path)
    results = {r.trial.rsplit("/", 1)[1]: r for r in regrade_run(run_dir)}
    assert {k: (r.now, r.flags, r.flags_now, r.changed) for k, r in results.items()} == {
        "seed-0": ("resolved", ("touched_tests",), ("touched_tests",), False),
        "seed-1": ("unresolved", ("touched_config",), ("touched_config",), True),
        "seed-2": ("resolved", (), (), False)}
    done = CliRunner().invoke(cli, ["grade", "r1", "--runs-dir", str(tmp_path / "runs")])
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith("tinypack/tiny-clamp/minimal/m/seed-1: resolved -> unresolved (")
    assert lines[-1] == ("re-graded 3 trial(s): 2 unchanged, 1 changed; "
                         "2 flagged (flags kept: `evalharness report` counts them)")


def test_an_outcome_that_is_a_flag_adds_it_and_nothing_is_dropped():
    assert regraded_flags(("touched_tests",), Outcome.TAMPERED) == ("tampered", "touched_tests")
    assert regraded_flags(("outcome_chosen_by_code", "tampered"), Outcome.UNRESOLVED) == (
        "outcome_chosen_by_code", "tampered")
    assert regraded_flags([], Outcome.PATCH_TOO_LARGE) == ("patch_too_large",)
    assert regraded_flags([], Outcome.RESOLVED) == ()
