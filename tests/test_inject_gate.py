"""The quality gate of injected defects, decided without Docker: test helpers are never mutated, constant
conditions are never negated, mutants that hang, crash or break the suite wholesale are rejected by name, and
the injection report counts every rejection by reason.

Pins: an injection that kept a mutation of a test helper (24 tests failed: the tests broke, not the library),
a ``while True`` -> ``while not True`` mutant (a loop never entered), and a defect run that timed out read as
evidence of which tests fail.
"""

from __future__ import annotations

import pytest

from evalharness.sources.inject import gate, mutations, pipeline, prescreen

CORE = b"def area(w, h):\n    if w < 0:\n        raise ValueError(w)\n    return w * h\n"
TREE = {
    "pyproject.toml": b'[project]\nname = "geom"\n\n[project.entry-points.pytest11]\ngeom = "geom.pyplug"\n',
    "geom/__init__.py": b"from .core import area\n",
    "geom/core.py": CORE,
    # a public module that only the tests import (users import it by name): library code
    "geom/func.py": b"from geom.core import area\n\n\ndef square(s):\n    return area(s, s)\n",
    # library code may use unittest.mock (not a test framework import)
    "geom/mocking.py": b"from unittest import mock\n\n\ndef stub(obj):\n    return mock.create_autospec(obj)\n",
    # named for tests
    "geom/testing.py": b"from geom._shapes_data import SHAPES\n\n\ndef shapes():\n    return list(SHAPES)\n",
    "geom/_testutils.py": b"def make(n):\n    return [n] * 3\n",
    # only the helper imports it: part of the helper
    "geom/_shapes_data.py": b"SHAPES = [(1, 2), (3, 4)]\n",
    # only tests import it, and it asserts: a test helper whatever its name
    "geom/_checks.py": b"from geom.core import area\n\n\ndef expect_area(w, h, want):\n"
                       b"    assert area(w, h) == want\n",
    # imports a test framework / defines a pytest hook / named as a plugin
    "geom/strategies.py": b"from hypothesis import strategies as st\n\nsizes = st.integers(0, 9)\n",
    "geom/hooks.py": b"def pytest_configure(config):\n    config.addinivalue_line('markers', 'slow')\n",
    "geom/fixtures_support.py": b"def board():\n    return [[0] * 3] * 3\n",
    "geom/pyplug.py": b"def board():\n    return []\n",
    "testsuite/helpers.py": b"def ok():\n    return 1\n",
    "tests/conftest.py": b'pytest_plugins = ["geom.fixtures_support"]\n',
    "tests/test_geom.py": b"from geom import area\nfrom geom import func\nfrom geom._checks import expect_area\n"
                          b"from geom.testing import shapes\nfrom geom._testutils import make\n\n\n"
                          b"def test_area():\n    expect_area(2, 3, 6)\n    assert func.square(2) == 4\n",
    "setup.py": b"from setuptools import setup\nsetup()\n",
}


def test_test_helpers_plugins_and_test_files_are_never_library_code():
    excluded = gate.test_only_modules(TREE)
    library = [p for p, _ in mutations.iter_library_files(TREE) if p not in excluded]
    assert library == ["geom/__init__.py", "geom/core.py", "geom/func.py", "geom/mocking.py"]
    assert excluded["geom/testing.py"] == "named as a test helper (testing.py)"
    assert excluded["geom/_testutils.py"] == "named as a test helper (_testutils.py)"
    assert excluded["geom/_shapes_data.py"] == "imported only by the test helper geom/testing.py"
    assert excluded["geom/_checks.py"].startswith("imported only by tests (tests/test_geom.py) and asserts")
    assert excluded["geom/strategies.py"] == "imports the test framework hypothesis"
    assert excluded["geom/hooks.py"] == "defines the pytest hook pytest_configure"
    assert excluded["geom/fixtures_support.py"] == "a pytest plugin named in tests/conftest.py"
    assert excluded["geom/pyplug.py"] == "a pytest plugin (pytest11 entry point in pyproject.toml)"
    assert excluded["testsuite/helpers.py"] == "under the test directory testsuite/"
    assert excluded["tests/conftest.py"] == "under the test directory tests/"


def test_a_module_only_tests_import_is_a_helper_only_when_it_asserts():
    tree = {**TREE, "geom/_checks.py": b"from geom.core import area\n\n\ndef expect_area(w, h):\n"
                                       b"    return area(w, h)\n"}
    assert "geom/_checks.py" not in gate.test_only_modules(tree)
    raising = {**TREE, "geom/_checks.py": b"def expect(x):\n    if not x:\n        raise AssertionError(x)\n"}
    assert "geom/_checks.py" in gate.test_only_modules(raising)


@pytest.mark.parametrize("path, test", [
    ("pkg/testing/__init__.py", True), ("pkg/tests/util.py", True), ("unit_tests/x.py", True),
    ("pkg/test_core.py", True), ("pkg/core_test.py", True), ("pkg/pytest_plugin.py", True),
    ("pkg/_test_helpers.py", True), ("pkg/contest.py", False), ("pkg/latest.py", False),
    ("pkg/attestation.py", False), ("src/pkg/core.py", False)])
def test_path_rules(path, test):
    assert (gate.path_reason(path) is not None) is test


def test_relative_imports_resolve_inside_the_package():
    tree = {"pkg/__init__.py": b"", "pkg/a.py": b"def f():\n    assert True\n",
            "pkg/b.py": b"from . import a\n", "tests/test_a.py": b"from pkg.a import f\n"}
    assert "pkg/a.py" not in gate.test_only_modules(tree)  # library code (pkg/b.py) imports it
    del tree["pkg/b.py"]
    assert "pkg/a.py" in gate.test_only_modules(tree)


def test_constant_conditions_are_never_negated_and_other_loops_are():
    source = ("import typing\n\n\ndef spin(items):\n    while True:\n        if not items:\n            break\n"
              "        items.pop()\n    while 1:\n        break\n    if typing.TYPE_CHECKING:\n        pass\n"
              "    while items:\n        items.pop()\n")
    negated = [s.before for s in mutations.sites(source, "m.py", ["negated_condition"])]
    assert not any(b.startswith(("while True", "while 1", "if typing.TYPE_CHECKING")) for b in negated), negated
    assert any(b.startswith("while items") for b in negated) and any(b.startswith("if not items") for b in negated)


def test_a_prescreen_run_that_times_out_is_named_hangs():
    base = prescreen.SuiteRun({"t::a": "passed", "t::b": "passed"}, seconds=2.0)
    hung = prescreen.SuiteRun({}, timed_out=True, seconds=38.0)
    verdict = prescreen.screen(base, hung, 38.0)
    assert verdict.verdict == "hangs" and "38 s" in verdict.reason and "hang" in verdict.reason
    done = prescreen.SuiteRun({"t::a": "failed", "t::b": "passed"}, seconds=2.0)
    assert prescreen.screen(base, done, 38.0).verdict == "killed"


def test_only_complete_discovery_runs_are_evidence():
    ok = [("unresolved", 3.0)]
    fixed = [("resolved", 3.0)]
    assert gate.runs_rejection(ok, fixed) is None
    assert gate.runs_rejection([("tests_timed_out", 300.0)], fixed)[0] == "hangs"
    assert gate.runs_rejection([("test_run_error", 1.0)], fixed)[0] == "crashed"
    # the fix's run timed out too: the machine, not the mutant; still no evidence
    assert gate.runs_rejection([("tests_timed_out", 300.0)], [("tests_timed_out", 300.0)])[0] == "incomplete_run"
    assert gate.runs_rejection(ok, [("resolved", 3.0), ("test_run_error", 2.0)])[0] == "incomplete_run"


def test_a_mutant_that_breaks_most_of_the_suite_is_rejected():
    assert gate.lists_rejection(24, 6, [])[0] == "breaks_most"  # 24 of 30 fail
    assert "24 of 30 tests fail" in gate.lists_rejection(24, 6, [])[1]
    assert gate.lists_rejection(5, 5, []) is None  # half is not most
    assert gate.lists_rejection(6, 4, [])[0] == "breaks_most"
    assert gate.lists_rejection(1, 9, ["t::x"])[0] == "flaky"
    assert gate.lists_rejection(1, 9, []) is None


def test_every_rejection_is_counted_by_reason_in_the_report_and_the_summary():
    entries = [{"verdict": v, "reason": f"r-{v}", "mutation": "off_by_one"} for v in
               ["ok", "ok", "hangs", "hangs", "survived", "breaks_most", "not_needed", "gold_fails"]]
    counted = pipeline.rejected_by_reason(entries)
    assert list(counted) == ["hangs", "breaks_most", "gold_fails", "survived"]
    assert counted["hangs"] == {"count": 2, "why": pipeline.REJECTIONS["hangs"]}
    assert counted["gold_fails"]["why"] == "r-gold_fails"  # a shared validation verdict: its own reason
    report = {"library": "geom 1", "kept": 2, "tried": 8, "sites": 20, "seconds": 5.0,
              "by_verdict": {"ok": 2}, "by_class": {}, "kept_by_module": {}, "rejected_by_reason": counted,
              "excluded_modules": {"geom/testing.py": "named as a test helper (testing.py)"}}
    lines = pipeline.summary_lines(report)
    assert f"  rejected: hangs 2 ({pipeline.REJECTIONS['hangs']})" in lines
    assert "  never mutated: geom/testing.py (named as a test helper (testing.py))" in lines


@pytest.mark.docker
def test_a_timed_out_mutant_runs_again_only_when_the_machine_has_slowed():
    assert prescreen.hang_limit(45.0) == 190.0 and prescreen.hang_limit(1.0) == 30.0
    # stopped at 190 s; the base suite now takes 45 s as before: a hang
    assert prescreen.retry_limit(190.4, 45.0) is None
    # the base suite slowed a little (50 s: limit 210 s): not enough to be worth running a hang twice
    assert prescreen.retry_limit(190.4, 50.0) is None
    # the machine is four times slower (the base now 180 s): the limit follows it, 730 s
    assert prescreen.retry_limit(190.4, 180.0) == 730.0
    # the boundary: a limit over a fifth longer than the run had
    assert prescreen.retry_limit(100.0, (120.0 - 10) / 4 + 0.01) is not None
    assert prescreen.retry_limit(100.0, (120.0 - 10) / 4) is None


def test_a_prescreen_run_leaves_no_process_behind(tinypack, sandbox_factory):
    """The pre-screen runs every mutant in one box: a test file its runner started in a group of its own (tap's)
    and that hung past the limit once kept a core busy for the rest of an inject run."""
    box = sandbox_factory(tinypack, tinypack.tasks[0])
    count = "for d in /proc/[0-9]*; do tr '\\0' ' ' < $d/cmdline 2>/dev/null; echo; done | grep -c '^sleep 731 $'"
    prescreen.run_suite(box, "setsid sleep 731 >/dev/null 2>&1 < /dev/null & sleep 0.5; echo started", 30)
    assert box.exec(count, user="root").output.strip() == "0"
    # the check itself sees such a process (it would fail without the ending)
    box.exec("setsid sleep 731 >/dev/null 2>&1 < /dev/null & sleep 0.5", timeout=30)
    assert box.exec(count, user="root").output.strip() == "1"


def test_a_mutant_that_timed_out_on_a_slowed_machine_runs_again_and_only_a_real_hang_stays_hangs(
        tinypack, sandbox_factory):
    """Through the pre-screen's own steps in a real sandbox. The machine's load is the test command's: while
    /tmp/slow holds a number, every suite run (the base's too) first sleeps that long."""
    task = tinypack.tasks[0]
    box = sandbox_factory(tinypack, task)
    spec = tinypack.spec_for(task)
    spec = spec.model_copy(update={"test_command": "sleep $(cat /tmp/slow 2>/dev/null || echo 0); "
                                                   + spec.test_command})
    workdir, path = spec.environment.workdir, "calc/__init__.py"
    source = prescreen.read_tree(box, workdir)[path].decode()
    site = next(s for s in mutations.sites(source, path) if s.mutation == "flipped_comparison")
    logs: list[str] = []
    injector = pipeline.Injector(pack=tinypack, validator=None, images=None, sandbox=None, count=1, log=logs.append)
    injector._base_command = prescreen.suite_command(spec.test_command)
    base = prescreen.run_suite(box, injector._base_command, 60)
    assert base.statuses and not base.timed_out

    box.exec("echo 6 > /tmp/slow", timeout=30)
    injector._limit = 3.0  # as set by the base run's timing before the machine slowed
    mutant = injector._screen(box, spec, {path: source}, site, base)
    entry = injector.entries[-1]
    assert mutant is not None and entry["verdict"] == "candidate", entry
    assert "re-timed took" in entry["reason"] and "run again within" in entry["reason"]
    assert injector._limit >= prescreen.hang_limit(6)  # later mutants get the limit of the base's new time
    assert any("the machine slowed" in line for line in logs)
    assert prescreen.read_tree(box, workdir)[path].decode() == source  # the original is back

    # a mutant that hangs (this one: the command sleeps when it sees it) on a machine as fast as before: stopped
    # at the limit, the base suite re-timed as quick as it was, so the mutant is not run again
    box.exec("rm /tmp/slow", timeout=30)
    hangs = spec.model_copy(update={"test_command": f"grep -q '{site.after}' {path} && sleep 300; "
                                                    + spec.test_command})
    injector._base_command, injector._limit = prescreen.suite_command(hangs.test_command), prescreen.hang_limit(0)
    logs.clear()
    assert injector._screen(box, hangs, {path: source}, site, base) is None
    entry = injector.entries[-1]
    assert entry["verdict"] == "hangs" and "30 s limit" in entry["reason"], entry
    assert "re-timed took" in entry["reason"] and "run again" not in entry["reason"]
    assert not any("the machine slowed" in line for line in logs)
