"""Statements of injected defects never name the mutated location: no file path, no line number, and not the
mutated function's name unless the failing test's own call names it.

Pins: a statement templated from a pytest traceback (``src/lib/core.py:42: in _bump``) tells the agent the
file, the line and the function to change; the task then measures reading, not debugging.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalharness.sources.inject import mutations
from evalharness.sources.inject.statement import (Failure, Location, display_name, location_leaks, public_calls,
                                                  write_statement)

ROOT = Path(__file__).resolve().parents[1]
LIB = "def _bump(n):\n    return n + 1\n\n\ndef total(items):\n    return sum(_bump(i) for i in items)\n"
TESTS = ("from lib.core import total, _bump\n\n\ndef test_total():\n    assert total([1, 2]) == 5\n\n\n"
         "class TestBump:\n    def test_bump(self):\n        assert _bump(1) == 2\n")
FILES = {"lib/core.py": LIB.encode(), "tests/test_core.py": TESTS.encode()}
SITE = mutations.sites(LIB, "lib/core.py", ["off_by_one"])[0]
GOLD = mutations.diff("lib/core.py", mutations.apply(LIB, SITE), LIB)
WHERE = Location("lib/core.py", "_bump", tuple(FILES))

PATH = re.compile(r"[\w./\\-]*\w\.py\b")
LINE = re.compile(r"\bline\s*\d+|\w:\d+", re.IGNORECASE)


def assert_names_no_location(statement: str, function: str, test_calls: set[str]) -> None:
    """The acceptance check: no file path, no line number, the function only where the test calls it."""
    assert not PATH.search(statement), statement
    assert not LINE.search(statement), statement
    if function and function not in test_calls:  # "" is module level: no function to name
        dunder = function.startswith("__") and function.endswith("__")
        core = function if dunder else function.lstrip("_")
        assert not re.search(rf"(?<![A-Za-z0-9]){re.escape(core)}(?![A-Za-z0-9])", statement), statement


def test_traceback_lines_naming_the_file_line_and_function_are_left_out():
    message = ("assert 7 == 5\n +  where 7 = total([1, 2])\nlib/core.py:2: in _bump\n    return n + 2\n"
               "File \"/testbed/lib/core.py\", line 2")
    text = write_statement([Failure("tests/test_core.py::test_total", message)], library="lib 1.0", where=WHERE,
                           gold_patch=GOLD, files=FILES)
    assert text is not None
    assert "assert 7 == 5" in text and "where 7 = total([1, 2])" in text and "`test_total`" in text
    assert_names_no_location(text, "_bump", public_calls("tests/test_core.py::test_total", FILES))
    assert "core.py" not in text and "line 2" not in text and "_bump" not in text


def test_the_function_may_be_named_when_the_failing_test_calls_it():
    calls = public_calls("tests/test_core.py::TestBump::test_bump", FILES)
    assert "_bump" in calls
    text = write_statement([Failure("tests/test_core.py::TestBump::test_bump", "assert 3 == 2\n +  where 3 = _bump(1)")],
                           library="lib 1.0", where=WHERE, gold_patch=GOLD, files=FILES)
    assert text is not None and "_bump(1)" in text and "`TestBump.test_bump`" in text
    assert_names_no_location(text, "_bump", calls)


def test_a_test_whose_name_is_the_location_is_not_named():
    files = {**FILES, "tests/test_core.py": (TESTS + "\n\ndef test__bump_via_total():\n    assert total([0]) == 1\n"
                                             ).encode()}
    failures = [Failure("tests/test_core.py::test__bump_via_total", "assert 2 == 1"),
                Failure("tests/test_core.py::test_total", "assert 7 == 5")]
    text = write_statement(failures, library="lib", where=WHERE, gold_patch=GOLD, files=files)
    assert text is not None and "test__bump_via_total" not in text and "`test_total`" in text
    assert "2 tests fail" in text
    # nothing left to say: no statement at all (the task is dropped as a leak)
    alone = write_statement(failures[:1], library="lib", where=WHERE, gold_patch=GOLD, files=files)
    assert alone is None


def test_a_special_method_is_named_only_in_full_and_a_referenced_function_may_be_named():
    where = Location("lib/core.py", "__call__")
    assert location_leaks("Cannot call the descriptor directly", where) == []
    assert location_leaks("Box.__call__() takes 1 argument", where) == ["__call__"]
    files = {"tests/test_k.py": b"import lib\n\n\ndef test_key(key=lib.keys.typedkey):\n    assert key(1)\n"}
    assert "typedkey" in public_calls("tests/test_k.py::test_key", files)


def test_location_leaks_finds_paths_lines_and_the_name():
    assert location_leaks("see pkg/mod.py", WHERE) == ["pkg/mod.py"]
    assert location_leaks("at line 12", WHERE) == ["line 12"]
    assert location_leaks("calls _bump()", WHERE) == ["_bump"]
    assert location_leaks("calls _bump()", WHERE, allowed={"_bump"}) == []
    assert location_leaks("total([1, 2]) returned 7, expected 5", WHERE) == []
    assert display_name("tests/test_a.py::TestX::test_y[1-2]") == "TestX.test_y[1-2]"


def test_statements_are_stable_across_runs():
    message = "AssertionError: <lib.Box object at 0x7f3a2b1c9d80> != None"
    a = write_statement([Failure("tests/test_core.py::test_total", message)], library="lib", where=WHERE,
                        gold_patch=GOLD, files=FILES)
    b = write_statement([Failure("tests/test_core.py::test_total", message.replace("7f3a2b1c9d80", "55d0c0ffee00"))],
                        library="lib", where=WHERE, gold_patch=GOLD, files=FILES)
    assert a == b and "0x..." in a


def injected_tasks() -> list[dict]:
    tasks = []
    for path in sorted(ROOT.glob("tasks/*/injection-report.json")):
        tasks += [json.loads(line) for line in (path.parent / "tasks.jsonl").read_text().splitlines() if line]
    return tasks


@pytest.mark.parametrize("task", injected_tasks(), ids=lambda t: t["instance_id"])
def test_committed_injected_statements_name_no_location(task):
    meta = task["metadata"]
    name = meta["function"].rsplit(".", 1)[-1]
    calls = {name} if meta.get("test_calls_function") else set()
    assert_names_no_location(task["problem_statement"], name, calls)
    assert meta["path"] not in task["problem_statement"]
