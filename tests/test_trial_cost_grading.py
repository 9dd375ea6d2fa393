"""Cheaper grading keeps every check (issue 13, item 4).

Pins: with `-rA` in the test command, pytest's PASSES section looks up each passing test's teardown among all
reports, so 6,400 passing idna tests spent most of a minute there; the guarded launcher also made pytest write a
decoy JUnit file nobody reads, and compared its watched functions by building dictionaries after every test
phase. The grader now drops `P` from the `-r` characters of a guarded run and shows the decoy in `sys.argv` only;
the default test command prints `-rfEsxXp` (the watched-function list has since given way to the audit hook of
issue 23, tests/grading/test_launcher_guard.py). None of this may cost a check: the unguarded path still catches a
JUnit file that disagrees with the printed summary and printed PASSED lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evalharness.grading.grade import cheap_report_chars, grade
from evalharness.sources.scaffold import Detected
from evalharness.types import Outcome

ROOT = Path(__file__).resolve().parent
FORGERIES = ROOT / "data" / "forgeries"
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


@pytest.mark.parametrize("args, expected", [
    (["-rA", "-p", "no:cacheprovider"], ["-rfEsxXp", "-p", "no:cacheprovider"]),
    (["-r", "A", "{test_files}"], ["-r", "fEsxXp", "{test_files}"]),
    (["-rfEP"], ["-rfE"]),
    (["-rP"], ["-rN"]),
    (["-ra", "-q"], ["-ra", "-q"]),
    (["--runxfail", "-rfEsxXp"], ["--runxfail", "-rfEsxXp"]),
])
def test_the_guarded_run_drops_only_the_passes_section(args, expected):
    assert cheap_report_chars(args) == expected


def test_the_default_test_command_prints_a_summary_line_per_test_without_the_passes_section():
    command = Detected.test_command.fget(_detected())
    assert "-rfEsxXp" in command and "-rA" not in command and "--junitxml={junit_xml}" in command
    assert "-rfEsxXp" in (ROOT.parent / "tasks" / "quickstart" / "pack.yaml").read_text()


def _detected():
    from evalharness.sources.scaffold import Choice

    empty = Choice([], "")
    return Detected(python=Choice("3.11", ""), base="bookworm", layout=Choice("flat", ""), tests=Choice("none", ""),
                    runner=Choice("pytest", ""), install=empty, pip=empty, plugins=empty, pythonpath=Choice("", ""))


@pytest.fixture
def clamp_task(tinypack):
    return tinypack.task("tiny-clamp")


def _grade(tinypack, task, patch, sandbox_factory, command):
    spec = tinypack.spec.model_copy(update={"test_command": command})
    box = sandbox_factory(tinypack, task, role="grader")
    return grade(task, spec, patch, box), box


@pytest.mark.docker
def test_a_guarded_run_prints_no_passes_section_and_writes_no_junit_file(tinypack, clamp_task, sandbox_factory):
    result, box = _grade(tinypack, clamp_task, clamp_task.patch, sandbox_factory, tinypack.spec.test_command)
    assert "-rA" in tinypack.spec.test_command  # the pack asks for the PASSES section
    assert result.runner == "guarded" and result.outcome is Outcome.RESOLVED, result.reason
    assert "PASSED tests/test_calc.py::test_clamp_high_edge" in result.test_output
    assert "= PASSES =" not in result.test_output
    left = box.exec("ls /tmp; ls /tmp/junit-*.xml 2>/dev/null | wc -l", user="root").output.split()
    assert left[-1] == "0", left


@pytest.mark.docker
def test_the_unguarded_cross_check_still_catches_a_rewritten_junit_file(tinypack, clamp_task, sandbox_factory):
    command = "true && " + Detected.test_command.fget(_detected())
    forgery = (FORGERIES / "rewrite_junit_at_exit.diff").read_text()
    result, _ = _grade(tinypack, clamp_task, forgery, sandbox_factory, command)
    assert result.runner == "command" and result.outcome is Outcome.UNRESOLVED, result.reason
    assert result.junit_xml is not None and "printed summary says failed" in result.reason, result.reason


@pytest.mark.docker
def test_the_unguarded_default_command_still_catches_printed_passed_lines(tinypack, clamp_task, sandbox_factory):
    command = "true && " + Detected.test_command.fget(_detected())
    for parser in ("junit", "pytest"):
        spec = tinypack.spec.model_copy(update={"test_command": command, "log_parser": parser})
        result = grade(clamp_task, spec, FAKE_PASSED, sandbox_factory(tinypack, clamp_task, role="grader"))
        assert result.runner == "command" and result.outcome is Outcome.UNRESOLVED, (parser, result.reason)
