"""Whose failure is a graded tree that cannot be built? Decided without Docker, each branch pinned.

Pins issue 23: on SWE-bench Lite pytest-dev__pytest-5103, -5221 and -5227 the grader's own restore of the
test files failed (``Entry 'scripts/setup-coverage-vars.bat' not uptodate. Cannot merge.``) and every patch,
the gold one included, was stored ``unresolved``. A failure the tree shows with no patch at all is the task's;
one it shows only with the patch is the agent's; one the grader cannot reproduce either way is infrastructure.
"""

from __future__ import annotations

import pytest

from evalharness.grading.restore import PROBE_PRELUDE, TREE_STEPS, decide_tree_failure
from evalharness.types import Flag, Outcome

NOT_UPTODATE = "error: Entry 'scripts/setup-coverage-vars.bat' not uptodate. Cannot merge."
LOSE = "error: Updating 'build' would lose untracked files in it"


@pytest.mark.parametrize("code", sorted(TREE_STEPS))
def test_a_tree_that_fails_with_no_patch_too_is_the_tasks_error_named_with_gits_message(code):
    decided = decide_tree_failure(code, NOT_UPTODATE, 22, NOT_UPTODATE)
    assert decided.outcome is Outcome.TASK_ERROR and not decided.outcome.counts_in_rate
    assert decided.outcome is not Outcome.UNRESOLVED
    assert NOT_UPTODATE in decided.reason and TREE_STEPS[22] in decided.reason
    assert decided.flags == {Flag.RESTORE_FAILED.value}


def test_the_task_error_names_the_step_the_probe_failed_at_not_the_one_the_patch_did():
    decided = decide_tree_failure(22, LOSE, 20, "error: patch failed: tests/test_x.py:3")
    assert decided.outcome is Outcome.TASK_ERROR
    assert TREE_STEPS[20] in decided.reason and "patch failed: tests/test_x.py:3" in decided.reason
    assert LOSE not in decided.reason


@pytest.mark.parametrize("code", sorted(TREE_STEPS))
def test_a_tree_that_builds_without_the_patch_is_the_patchs_failure_counted_in_the_rate(code):
    decided = decide_tree_failure(code, LOSE, 0, "")
    assert decided.outcome is Outcome.PATCH_APPLY_FAILED and decided.outcome.counts_in_rate
    assert decided.flags == {Flag.RESTORE_FAILED.value}
    assert LOSE in decided.reason and TREE_STEPS[code] in decided.reason and "without the patch" in decided.reason


@pytest.mark.parametrize("probe_code", [71, 78, 79, 1, 124, 137, -1])
def test_a_probe_that_cannot_run_is_infrastructure_never_a_verdict(probe_code):
    decided = decide_tree_failure(22, LOSE, probe_code, "mkdir: cannot create directory: No space left on device")
    assert decided.outcome.is_infra and not decided.outcome.is_task_error
    assert "No space left" in decided.reason and LOSE in decided.reason and decided.flags == frozenset()


@pytest.mark.parametrize("code", [0, 10, 19, 25, 71])
def test_only_the_graded_trees_own_steps_are_decided_here(code):
    with pytest.raises(ValueError):
        decide_tree_failure(code, "", 0, "")


def test_git_messages_are_kept_short_and_on_one_line():
    decided = decide_tree_failure(22, "error: a\nerror: b\n" + "x" * 5000 + ": File name too long", 0, "")
    assert "\n" not in decided.reason and len(decided.reason) < 600 and "error: a error: b" in decided.reason
    assert "File name too long" in decided.reason  # the head and the tail of a long message


def test_the_probe_rebuilds_a_fresh_tree_as_the_sandbox_start_does_and_hands_the_tree_script_its_arguments():
    # the same rebuild as the sandbox's own start (docker._seed_script), into a folder that must be new
    assert 'evalharness-rebuild-tree "$t" 1000:1000' in PROBE_PRELUDE and "mkdir -m 0700" in PROBE_PRELUDE
    assert PROBE_PRELUDE.rstrip().endswith('set -- "$x" "$base" "$t" "$@"')
