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
from evalharness.sources.inject.statement import (Failure, Location, display_name, location_leaks,
                                                  mask_differences, mask_run_values, public_calls, run_values,
                                                  stable_messages, write_statement)

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


# --- run-specific values, from real pytest output -----------------------------------------------------------

VOLATILE_LIB = '''import os
import tempfile


class Box:
    def __init__(self, items=()):
        self.items = list(items)


def boxes(n):
    return [Box() for _ in range(n)]


def scratch():
    return tempfile.mkdtemp()


def owner():
    return os.getpid()
'''
VOLATILE_TESTS = '''import os

from vol.core import Box, boxes, owner, scratch


def test_boxes_empty():
    assert boxes(2) == []


def test_box_is_none():
    assert Box() is None


def test_scratch_has_a_file():
    path = scratch()
    assert os.listdir(path) == ["a"], path


def test_box_identity():
    box = Box()
    assert id(box) == 0


def test_owner_is_root():
    assert owner() == 0
'''
VOLATILE_GOLD = ("diff --git a/vol/core.py b/vol/core.py\n--- a/vol/core.py\n+++ b/vol/core.py\n@@ -11,2 +11,2 @@\n"
                 " def boxes(n):\n-    return [Box() for _ in range(n + 1)]\n+    return [Box() for _ in range(n)]\n")
ADDRESSISH = re.compile(r"0x[0-9a-fA-F]{4,}|\.\.\.[0-9a-fA-F]{4,}>|/tmp/(?!\.\.\.)|\b\d{6,}\b")


def _pytest_messages(tree: Path, junit: Path) -> dict[str, str]:
    """The failure messages of the failing tests, read the way the pre-screen reads a sandbox's run."""
    import subprocess
    import sys

    from evalharness.sources.inject.prescreen import read_run
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                           f"--junitxml={junit}", "tests/test_vol.py"], cwd=tree, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)})
    run = read_run(junit.read_text(), done.stdout, done.returncode)
    assert sorted(t for t, s in run.statuses.items() if s == "failed") == sorted(run.messages)
    return run.messages


def test_statements_from_real_pytest_output_hold_no_run_specific_values(tmp_path):
    """Two injections of the same defect (each reads two runs of the failing tests, as the pipeline does; fresh
    processes: new addresses, temp dirs, pids, ids) give the same statements, with no address left, not even the
    tail pytest keeps when it cuts a long repr short (``[<vol.core.Box ...7f4a59861990>]``: no ``0x`` left for
    the old pattern to mask, how an address reached a kept task), and a pid the library returns masked too."""
    tree = tmp_path / "lib"
    (tree / "vol").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "vol" / "__init__.py").write_text("")
    (tree / "vol" / "core.py").write_text(VOLATILE_LIB)
    (tree / "tests" / "test_vol.py").write_text(VOLATILE_TESTS)
    files = {"vol/core.py": VOLATILE_LIB.encode(), "tests/test_vol.py": VOLATILE_TESTS.encode()}
    where = Location("vol/core.py", "__init__", tuple(files))
    runs = [_pytest_messages(tree, tmp_path / f"junit{i}.xml") for i in range(4)]
    assert len(runs[0]) == 5
    assert re.search(r"\.\.\.[0-9a-f]{4,}>", runs[0]["tests/test_vol.py::test_boxes_empty"])  # the cut repr
    assert runs[0] != runs[1]  # the raw messages differ from run to run
    statements = []
    for first, second in (runs[:2], runs[2:]):
        statements.append({t: write_statement([Failure(t, m)], library="vol 1.0", where=where,
                                              gold_patch=VOLATILE_GOLD, files=files)
                           for t, m in stable_messages(first, second).items()})
    assert statements[0] == statements[1]
    for test, text in statements[0].items():
        assert text is not None, test
        assert not ADDRESSISH.search(text), text
        assert not run_values(text), text
    assert re.search(r"\[<vol\.core\.\w*\.\.\.>\] == \[\]", statements[0]["tests/test_vol.py::test_boxes_empty"])
    assert "<vol.core.Box object at 0x...>" in statements[0]["tests/test_vol.py::test_box_is_none"]
    assert "/tmp/..." in statements[0]["tests/test_vol.py::test_scratch_has_a_file"]
    assert "<id>" in statements[0]["tests/test_vol.py::test_box_identity"]
    assert "assert <varies> == 0" in statements[0]["tests/test_vol.py::test_owner_is_root"]


def test_what_differs_between_two_runs_is_masked_and_the_rest_kept():
    a = "assert 1710 == 0\n +  where 1710 = owner()"
    b = "assert 957 == 0\n +  where 957 = owner()"
    assert mask_differences(a, b) == "assert <varies> == 0\n +  where <varies> = owner()"
    assert mask_differences(a, a) == a
    assert stable_messages({"t": "got <a.B object at 0x7f00aa11>"}, {"t": "got <a.B object at 0x7f99bb22>"}) == {
        "t": "got <a.B object at 0x...>"}


def test_masking_is_idempotent_and_leaves_ordinary_values():
    text = ("assert [<pkg.Box ...7f4a5986>] == []\n +  where 139957308096208 = id(<pkg.Box object at 0x7f4a59a1fed0>)"
            "\nPosixPath('/tmp/pytest-of-root/pytest-3/test_a0/x.txt') pid=4242 started 140211\n"
            "assert 0xff == 255 and 1234567 == 7654321")
    masked = mask_run_values(text)
    assert mask_run_values(masked) == masked and not run_values(masked)
    assert "[<pkg.Box ...>]" in masked and "where <id> = id(<pkg.Box object at 0x...>)" in masked
    assert "PosixPath('/tmp/...')" in masked and "pid=<pid>" in masked and "started <started>" in masked
    assert "0xff == 255 and 1234567 == 7654321" in masked  # a short literal and plain numbers are data
