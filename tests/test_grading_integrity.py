"""Grading cannot be gamed: edits to test files never count, printed "PASSED" lines cannot forge a
pass, and a patch that does not apply or hangs is an outcome, not a crash.

Pins: graders that trusted regexes over logs let a patch print "PASSED test_x" and score;
graders that ran the agent's copy of the tests let it rewrite the assertions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalharness.grading.grade import grade
from evalharness.types import Outcome

pytestmark = pytest.mark.docker

CLAMP_FIX = """\
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -10,7 +10,7 @@ def clamp(value, low, high):
     if value < low:
         return low
     if value > high:
-        return value
+        return high
     return value
 
 
"""

WEAKEN_TEST = """\
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -13,7 +13,7 @@ def test_clamp_inside():
 
 def test_clamp_high_edge():
     assert clamp(10, 0, 10) == 10
-    assert clamp(11, 0, 10) == 10
+    assert clamp(11, 0, 10) == 11
 
 
 def test_clamp_low_edge():
"""

FAKE_PASSED = """\
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,4 +1,9 @@
 \"\"\"A tiny library used by evalharness's own tests.\"\"\"
+import atexit
+import sys
+
+print("PASSED tests/test_calc.py::test_clamp_high_edge")
+atexit.register(lambda: sys.stdout.write("PASSED tests/test_calc.py::test_clamp_high_edge\\n"))
 
 
 def add(a, b):
"""

HANG = """\
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,4 +1,6 @@
 \"\"\"A tiny library used by evalharness's own tests.\"\"\"
+import time
+time.sleep(3600)
 
 
 def add(a, b):
"""

FORCE_PASS_CONFTEST = """\
--- /dev/null
+++ b/tests/conftest.py
@@ -0,0 +1,8 @@
+import pytest
+
+
+@pytest.hookimpl(hookwrapper=True)
+def pytest_runtest_makereport(item, call):
+    outcome = yield
+    report = outcome.get_result()
+    report.outcome = "passed"
"""


@pytest.fixture
def clamp_task(tinypack):
    return tinypack.task("tiny-clamp")


def _grade(tinypack, task, patch, sandbox_factory, **spec_changes):
    spec = tinypack.spec.model_copy(update=spec_changes) if spec_changes else tinypack.spec
    return grade(task, spec, patch, sandbox_factory(tinypack, task, role="grader"))


def test_gold_patch_resolves_and_empty_patch_does_not(tinypack, clamp_task, sandbox_factory):
    gold = _grade(tinypack, clamp_task, clamp_task.patch, sandbox_factory)
    assert gold.outcome is Outcome.RESOLVED, gold.reason
    assert set(gold.tests.values()) == {"passed"}
    empty = _grade(tinypack, clamp_task, "", sandbox_factory)
    assert empty.outcome is Outcome.NO_PATCH
    assert empty.tests["tests/test_calc.py::test_clamp_high_edge"] == "failed"


def test_editing_the_failing_test_does_not_count(tinypack, clamp_task, sandbox_factory):
    result = _grade(tinypack, clamp_task, WEAKEN_TEST, sandbox_factory)
    assert result.outcome is Outcome.UNRESOLVED
    assert result.touched_test_files == ["tests/test_calc.py"]
    assert result.tests["tests/test_calc.py::test_clamp_high_edge"] == "failed"
    # the same edit next to a real fix: resolved, because the restored test now passes, and flagged
    both = _grade(tinypack, clamp_task, CLAMP_FIX + WEAKEN_TEST, sandbox_factory)
    assert both.outcome is Outcome.RESOLVED and both.touched_test_files == ["tests/test_calc.py"]


@pytest.mark.parametrize("parser", ["junit", "pytest"])
def test_printed_passed_lines_cannot_forge_a_pass(tinypack, clamp_task, sandbox_factory, parser):
    result = _grade(tinypack, clamp_task, FAKE_PASSED, sandbox_factory, log_parser=parser)
    assert result.outcome is Outcome.UNRESOLVED, result.reason


def test_patch_that_does_not_apply_is_an_outcome(tinypack, clamp_task, sandbox_factory):
    broken = CLAMP_FIX.replace("return value\n+", "return something_else\n+")
    result = _grade(tinypack, clamp_task, broken, sandbox_factory)
    assert result.outcome is Outcome.PATCH_APPLY_FAILED and not result.patch_applied
    assert result.reason == "patch did not apply"


def test_hanging_tests_time_out(tinypack, clamp_task, sandbox_factory):
    timeouts = tinypack.spec.timeouts.model_copy(update={"tests_s": 3})
    result = _grade(tinypack, clamp_task, HANG, sandbox_factory, timeouts=timeouts)
    assert result.outcome is Outcome.TESTS_TIMED_OUT
    assert result.reason == "tests timed out after 3 s"


def test_a_conftest_that_forces_passes_is_reverted_and_flagged(tinypack, clamp_task, sandbox_factory):
    result = _grade(tinypack, clamp_task, FORCE_PASS_CONFTEST, sandbox_factory)
    assert result.touched_test_config == ["tests/conftest.py"]
    assert result.outcome is Outcome.UNRESOLVED, result.reason


EXIT_ZERO = """\
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,4 +1,7 @@
 \"\"\"A tiny library used by evalharness's own tests.\"\"\"
+import os
+print("PASSED tests/test_calc.py::test_clamp_high_edge")
+os._exit(0)
 
 
 def add(a, b):
"""


def test_a_run_that_dies_with_exit_zero_is_not_a_pass(tinypack, clamp_task, sandbox_factory):
    result = _grade(tinypack, clamp_task, EXIT_ZERO, sandbox_factory)
    assert result.test_exit_code == 0
    assert result.outcome is Outcome.TAMPERED and "tampered" in result.flags
    assert "exited 0 before its session ended" in result.reason


FORGERIES = Path(__file__).resolve().parent / "data" / "forgeries"


def test_a_module_that_shadows_pytest_is_reverted(tinypack, clamp_task, sandbox_factory):
    # pytest.py at the root: `python -m pytest` would import it and write an all-passed JUnit file
    result = _grade(tinypack, clamp_task, (FORGERIES / "shadow_pytest_module.diff").read_text(), sandbox_factory)
    assert result.touched_test_config == ["pytest.py"]
    assert result.outcome is Outcome.UNRESOLVED, result.reason
    assert result.tests["tests/test_calc.py::test_clamp_high_edge"] == "failed"


def test_a_junit_file_rewritten_at_exit_forges_nothing(tinypack, clamp_task, sandbox_factory):
    # the guarded runner names no JUnit path: the forgery has nothing to rewrite, the tests fail as they are
    result = _grade(tinypack, clamp_task, (FORGERIES / "rewrite_junit_at_exit.diff").read_text(), sandbox_factory)
    assert result.outcome in (Outcome.UNRESOLVED, Outcome.TAMPERED), result.reason
    assert result.tests["tests/test_calc.py::test_clamp_high_edge"] == "failed"
    # the unguarded path (a test command that is not plain pytest) still catches it by the printed summary
    command = "true && " + tinypack.spec.test_command
    unguarded = _grade(tinypack, clamp_task, (FORGERIES / "rewrite_junit_at_exit.diff").read_text(), sandbox_factory,
                       test_command=command)
    assert unguarded.runner == "command" and unguarded.outcome is Outcome.UNRESOLVED, unguarded.reason


def test_shell_braces_in_the_test_command_are_left_to_the_shell(tinypack, clamp_task, sandbox_factory):
    command = "for f in {test_files}; do test -f \"${f}\"; done && " + tinypack.spec.test_command
    result = _grade(tinypack, clamp_task, clamp_task.patch, sandbox_factory, test_command=command)
    assert result.outcome is Outcome.RESOLVED, result.reason


UNITTEST_TESTS = """\
--- /dev/null
+++ b/tests/test_unit.py
@@ -0,0 +1,15 @@
+import unittest
+
+from calc import clamp
+
+
+class ClampTest(unittest.TestCase):
+    def test_high(self):
+        self.assertEqual(clamp(11, 0, 10), 10)
+
+    def test_errors(self):
+        raise RuntimeError("an error, not a failure")
+
+    def test_inside(self):
+        self.assertEqual(clamp(5, 0, 10), 5)
+
"""


def test_failing_unittest_style_tests_are_failures_not_tampering(tinypack, clamp_task, sandbox_factory):
    """unittest.TestCase tests hand what they raised to pytest through the item, after the grader's
    first look: a failing one must be unresolved, never `tampered` (found on psf/requests' suite)."""
    task = clamp_task.model_copy(update={
        "instance_id": "tiny-clamp-unittest", "test_patch": UNITTEST_TESTS,
        "FAIL_TO_PASS": ["tests/test_unit.py::ClampTest::test_high"],
        "PASS_TO_PASS": ["tests/test_unit.py::ClampTest::test_inside", "tests/test_unit.py::ClampTest::test_errors"]})
    empty = grade(task, tinypack.spec, "", sandbox_factory(tinypack, clamp_task, role="grader"))
    assert empty.outcome is Outcome.NO_PATCH and "tampered" not in empty.flags, (empty.reason, empty.evidence)
    assert empty.tests == {"tests/test_unit.py::ClampTest::test_high": "failed",
                           "tests/test_unit.py::ClampTest::test_inside": "passed",
                           "tests/test_unit.py::ClampTest::test_errors": "failed"}
    gold = grade(task.model_copy(update={"PASS_TO_PASS": ["tests/test_unit.py::ClampTest::test_inside"]}),
                 tinypack.spec, clamp_task.patch, sandbox_factory(tinypack, clamp_task, role="grader"))
    assert gold.outcome is Outcome.RESOLVED, (gold.reason, gold.evidence)


RENAME_ADD = """\
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,7 +1,7 @@
 \"\"\"A tiny library used by evalharness's own tests.\"\"\"
 
 
-def add(a, b):
+def plus(a, b):
     return a + b
 
 
"""


def test_a_patch_that_breaks_the_test_files_imports_is_unresolved_not_tampering(tinypack, clamp_task,
                                                                                 sandbox_factory):
    """The task's test file imports a name the patch removed: pytest cannot collect it. The canaries still run
    (collection errors do not stop the session), so this is an agent's failure, never a forgery."""
    result = _grade(tinypack, clamp_task, RENAME_ADD, sandbox_factory)
    assert result.outcome is Outcome.UNRESOLVED, result.reason
    assert "collection errors in" in result.reason and "tests/test_calc.py" in result.reason
    assert "tampered" not in result.flags
