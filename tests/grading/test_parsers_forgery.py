"""Code under test can print fake result lines; the grader must not believe them.

The threat: an agent's patch makes the module under test print ``PASSED tests/test_a.py::
test_x`` while test_x really fails. Every case is a real pytest run in ``tmp_path``. The
defences: a worse status beats a printed better one, the JUnit XML cannot be printed
into, and ``consistent_with_exit_code`` flags a text verdict the exit code contradicts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalharness.grading.parsers import (
    TestRun, TestStatus, consistent_with_exit_code, parse, parse_junit)

NODE = "tests/test_a.py::test_x"
BANNER = "=" * 29 + " test session starts " + "=" * 30


def forged_project(root: Path, calc_body: str) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "calc.py").write_text(f"import os\n\ndef add(a, b):\n{calc_body}\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text(
        "from calc import add\n\ndef test_x():\n    assert add(2, 2) == 4\n\n"
        "def test_y():\n    assert True\n")


def run(root: Path, *args: str) -> TestRun:
    xml = root / "junit.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
         "-o", "junit_family=xunit1", f"--junitxml={xml}", *args],
        cwd=root, capture_output=True, text=True, timeout=120)
    return TestRun(log=proc.stdout, exit_code=proc.returncode,
                   junit_xml=xml.read_text() if xml.exists() else None)


def test_printed_pass_line_loses_to_the_real_failure(tmp_path: Path) -> None:
    forged_project(tmp_path, f"    print('PASSED {NODE}')\n    print('{NODE} PASSED [100%]')")
    result = run(tmp_path)
    assert f"\nPASSED {NODE}\n" in result.log  # the fake line really is in the log
    assert parse_junit(result)[NODE] is TestStatus.FAILED
    assert parse("pytest", result)[NODE] is TestStatus.FAILED
    assert consistent_with_exit_code(parse("pytest", result), result.exit_code)[0]


def test_fooled_text_parser_is_flagged_by_exit_code(tmp_path: Path) -> None:
    # The fake line, then a fake session banner: the parser takes the real summary that
    # follows for a nested session's and skips it.
    forged_project(tmp_path, f"    print('PASSED {NODE}')\n    print({BANNER!r})")
    result = run(tmp_path)
    text = parse("pytest", result)
    assert result.exit_code == 1
    assert text == {NODE: TestStatus.PASSED}  # fooled
    assert parse_junit(result) == {NODE: TestStatus.FAILED, "tests/test_a.py::test_y": TestStatus.PASSED}
    ok, reason = consistent_with_exit_code(text, result.exit_code)
    assert not ok
    assert reason.startswith("exit code 1 but none of the 1 parsed tests failed or errored")
    assert consistent_with_exit_code(parse_junit(result), result.exit_code)[0]


def test_killed_run_with_forged_lines_leaves_no_junit(tmp_path: Path) -> None:
    """Exit code 0 forged too (os._exit after printing): only the JUnit XML tells."""
    forged_project(tmp_path, f"    print('\\nPASSED {NODE}', flush=True)\n    os._exit(0)")
    result = run(tmp_path, "-s")
    text = parse("pytest", result)
    assert result.exit_code == 0 and text == {NODE: TestStatus.PASSED}
    assert consistent_with_exit_code(text, 0)[0]  # the limit of the exit-code check
    assert result.junit_xml is None and parse_junit(result) == {}


def test_printed_failure_in_a_passing_run_is_flagged(tmp_path: Path) -> None:
    forged_project(tmp_path, "    print('FAILED tests/test_a.py::test_y - boom')\n    return a + b")
    result = run(tmp_path)
    assert result.exit_code == 0
    text = parse("pytest", result)
    assert text["tests/test_a.py::test_y"] is TestStatus.FAILED  # read from captured output
    ok, reason = consistent_with_exit_code(text, 0)
    assert not ok and "exit code 0 but 1 parsed tests failed or errored" in reason
    assert consistent_with_exit_code(parse_junit(result), 0)[0]


def test_nothing_ran_is_inconsistent_either_way(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    result = run(tmp_path)
    assert result.exit_code == 5  # pytest: no tests collected
    assert parse("pytest", result) == {}
    assert consistent_with_exit_code({}, 5) == (
        False, "exit code 5 but none of the 0 parsed tests failed or errored: printed results "
               "may be forged, or the run died before reporting")
    assert not consistent_with_exit_code({}, 0)[0]


@pytest.mark.parametrize("status", [TestStatus.PASSED, TestStatus.SKIPPED, TestStatus.XFAIL])
def test_nonzero_exit_needs_a_failure(status: TestStatus) -> None:
    assert not consistent_with_exit_code({"t.py::a": status}, 1)[0]
    assert consistent_with_exit_code({"t.py::a": status, "t.py::b": TestStatus.ERROR}, 1)[0]
    assert consistent_with_exit_code({"t.py::a": status}, 0)[0]
