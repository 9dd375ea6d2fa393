"""Broken tasks are told apart from a failing machine, and a run says so in its exit code; a killed
runner's run is told apart from a live one. The pure decisions, without Docker.

Pins: a pack whose sdist sha256 was wrong (or whose defect_patch did not apply) was recorded as
infra_error, left out of the rate, printed nowhere, and the run exited 0; a SIGKILLed run stayed
`running` forever and `sandbox gc` had no way to tell its containers from a live run's.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from evalharness.liveness import STALE_AFTER_S, collectable_runs, run_status, runner_alive
from evalharness.runner import (EXIT_INFRA, EXIT_INTERRUPTED, EXIT_NEVER_WORKED, EXIT_OK, EXIT_TASK_ERRORS, exit_code,
                                never_worked)
from evalharness.sandbox.build_failures import BuildFailure, diagnose, failing_step_output, is_task_defect
from evalharness.stats._frame import usable_trials
from evalharness.taskcheck import patch_problems
from evalharness.types import TaskSpec

SHA_LOG = """Step 7/12 : RUN pip download --no-deps --no-binary :all: -d /tmp/sdist boltons==26.2.0 && python3 x.py
 ---> Running in 0a1b2c3d4e5f
Collecting boltons==26.2.0
  Downloading boltons-26.2.0.tar.gz (248 kB)
Saved /tmp/sdist/boltons-26.2.0.tar.gz
Successfully downloaded boltons
sha256 mismatch for boltons-26.2.0.tar.gz: expected 00ff, got d39c
"""
DEFECT_LOG = """Step 2/2 : RUN EVALHARNESS_WORKDIR=/testbed evalharness-prepare-task
 ---> Running in 1234
error: patch failed: calc/__init__.py:10
error: calc/__init__.py: patch does not apply
evalharness-task-error: defect_patch does not apply: error: patch failed: calc/__init__.py:10
"""
REF_LOG = """Step 6/9 : RUN git clone -q https://example.org/r.git /testbed && git -C /testbed checkout -q v9
 ---> Running in 99
error: pathspec 'v9' did not match any file(s) known to git
"""
DNS_LOG = """Step 6/9 : RUN git clone -q https://example.org/r.git /testbed
 ---> Running in 99
fatal: unable to access 'https://example.org/r.git/': Could not resolve host: example.org
"""
PIP_FLAKY_LOG = """Step 9/12 : RUN pip install pytest==8.3.5
 ---> Running in 77
WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(...)': /simple/pytest/
ERROR: Could not find a version that satisfies the requirement pytest==8.3.5 (from versions: none)
"""
SETUP_LOG = """Step 10/12 : RUN echo broken recipe; exit 3
 ---> Running in 55
broken recipe
Removing intermediate container 55
"""


@pytest.mark.parametrize("log, reason", [
    (SHA_LOG, "sha256 mismatch for boltons-26.2.0.tar.gz: expected 00ff, got d39c"),
    (DEFECT_LOG, "defect_patch does not apply: error: patch failed: calc/__init__.py:10"),
    (REF_LOG, "error: pathspec 'v9' did not match any file(s) known to git"),
])
def test_a_known_recipe_defect_is_a_task_error_at_once(log, reason):
    failure = diagnose(log, "The command '/bin/sh -c ...' returned a non-zero code: 1")
    assert failure == BuildFailure(reason, "task")
    assert is_task_defect([failure])


@pytest.mark.parametrize("log", [DNS_LOG, PIP_FLAKY_LOG])
def test_a_network_failure_is_never_a_task_error_however_often_it_repeats(log):
    failure = diagnose(log, "returned a non-zero code: 1")
    assert failure.kind == "transient"
    assert not is_task_defect([failure, failure, failure])


def test_an_unknown_failure_is_a_task_error_only_when_it_repeats_the_same_way():
    first = diagnose(SETUP_LOG, "The command '/bin/sh -c echo broken recipe; exit 3' returned a non-zero code: 3")
    assert first == BuildFailure("broken recipe", "unknown")
    assert not is_task_defect([first])
    again = diagnose(SETUP_LOG.replace("container 55", "container 56").replace("in 55", "in 56"), "")
    assert is_task_defect([first, again])  # the builder's own lines (container ids) are not the reason
    other = BuildFailure("Killed", "unknown")
    assert not is_task_defect([first, other])
    assert not is_task_defect([BuildFailure("x", "transient"), BuildFailure("x", "unknown")])


def test_the_reason_comes_from_the_failing_step_not_from_earlier_steps():
    log = "Step 1/3 : RUN true\n ---> Running in 1\nerror: an old warning\nStep 2/3 : RUN false\n ---> Running in 2\n"
    assert failing_step_output(log) == []
    assert diagnose(log, "The command '/bin/sh -c false' returned a non-zero code: 1").reason.startswith("The command")


def test_engine_errors_in_the_docker_message_are_not_mistaken_for_the_step_output():
    log = "Step 2/2 : RUN pip install --timeout 60 x\n ---> Running in 3\nboom\n"
    assert diagnose(log, "The command '/bin/sh -c pip install --timeout 60 x' returned a non-zero code: 1").kind == "unknown"


def _task(**fields) -> TaskSpec:
    return TaskSpec(instance_id="t", problem_statement="p", FAIL_TO_PASS=["tests/a.py::t"], **fields)


def test_gold_patches_that_do_not_apply_are_named_with_the_first_line_of_git():
    calls = []

    def apply_check(name, patch):
        calls.append((name, patch))
        return (1, "\nerror: patch failed: a.py:3\nerror: a.py: patch does not apply\n") if name == "patch.diff" else (0, "")

    problems = patch_problems(apply_check, _task(patch="diff --git a/a.py b/a.py\n", test_patch="diff x\n"))
    assert problems == ["gold patch does not apply to the task's base: error: patch failed: a.py:3"]
    assert [c[0] for c in calls] == ["patch.diff", "test_patch.diff"] and calls[0][1] == b"diff --git a/a.py b/a.py\n"
    assert patch_problems(apply_check, _task()) == []  # nothing to check


@pytest.mark.parametrize("task_errors, infra, interrupted, never_worked, code", [
    (0, 0, False, 0, EXIT_OK), (2, 0, False, 0, EXIT_TASK_ERRORS), (0, 1, False, 0, EXIT_INFRA),
    (1, 1, False, 0, EXIT_TASK_ERRORS), (1, 1, True, 0, EXIT_INTERRUPTED), (0, 0, False, 1, EXIT_NEVER_WORKED),
    (0, 1, False, 1, EXIT_INFRA), (1, 0, False, 1, EXIT_TASK_ERRORS), (0, 0, True, 1, EXIT_INTERRUPTED),
])
def test_exit_codes(task_errors, infra, interrupted, never_worked, code):
    assert exit_code(task_errors=task_errors, infra=infra, interrupted=interrupted, never_worked=never_worked) == code
    assert (EXIT_OK, EXIT_TASK_ERRORS, EXIT_INFRA, EXIT_NEVER_WORKED, EXIT_INTERRUPTED) == (0, 1, 3, 4, 130)


def test_a_configuration_whose_every_trial_is_harness_error_never_worked():
    """Issue 27: a run whose every trial was harness_error (a script matching nothing) exited 0, silent to cron."""
    def row(harness, outcome, reason=""):
        return {"harness": harness, "model": "openai/m", "outcome": outcome, "reason": reason}

    rows = [row("minimal", "harness_error", ""), row("minimal", "harness_error", "ModelAPIError: 400 no scenario"),
            row("other", "harness_error", "x"), row("other", "unresolved"), row("oracle", "resolved")]
    assert never_worked(rows) == {"minimal/openai/m": "ModelAPIError: 400 no scenario"}
    assert never_worked([row("other", "unresolved")]) == {} and never_worked([]) == {}


def test_task_error_rows_are_left_out_of_rates_like_infrastructure_rows():
    df = pd.DataFrame({"task_id": ["a", "b", "c", "d"], "resolved": [True, False, False, False],
                       "infra": [False, False, True, False],
                       "outcome": ["resolved", "unresolved", "sandbox_error", "task_error"]})
    kept, n_infra = usable_trials(df)
    assert list(kept["task_id"]) == ["a", "b"] and n_infra == 1
    kept, n_infra = usable_trials(df, infra_as_failure=True)  # infra may count as failure; a broken task never
    assert list(kept["task_id"]) == ["a", "b", "c"] and list(kept["_y"]) == [1.0, 0.0, 0.0] and n_infra == 1


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def _row(status="running", host="here", pid=42, beat=NOW - timedelta(seconds=5)):
    return {"status": status, "runner_host": host, "runner_pid": pid, "heartbeat_at": beat}


@pytest.mark.parametrize("row, alive, shown", [
    (_row(), True, "running"),
    (_row(), False, "interrupted"),  # this host, pid gone
    (_row(host="elsewhere"), False, "running"),  # another host's pid says nothing; its heartbeat is fresh
    (_row(host="elsewhere", beat=NOW - timedelta(seconds=STALE_AFTER_S + 1)), True, "interrupted"),
    (_row(beat=NOW - timedelta(seconds=STALE_AFTER_S + 1)), True, "interrupted"),  # pid reused, heartbeat stale
    (_row(pid=None, beat=None), True, "interrupted"),  # a run stored before runners were recorded
    (_row(status="completed"), False, "completed"),
    (_row(beat=(NOW - timedelta(seconds=5)).replace(tzinfo=None)), True, "running"),  # SQLite gives naive UTC
])
def test_a_run_is_shown_interrupted_when_its_runner_is_gone(row, alive, shown):
    assert run_status(row, now=NOW, here="here", alive=lambda pid: alive) == shown


def test_gc_collects_only_runs_whose_runner_is_gone():
    stored = {"dead": _row(), "live": _row(pid=7), "done": _row(status="completed")}
    collect, live, unknown = collectable_runs({"dead", "live", "done", "other-db"}, stored, now=NOW, here="here",
                                              alive=lambda pid: pid == 7)
    assert (collect, live, unknown) == ({"dead", "done"}, {"live"}, {"other-db"})
    assert not runner_alive("here", 7, None, now=NOW, here="here", alive=lambda pid: True)
