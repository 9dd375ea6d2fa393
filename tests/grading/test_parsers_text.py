"""Text-log parsers must agree with the runner's own bookkeeping, not with our reading of it.

Bugs this pins: a Django header line ``ERROR: setUpClass (m.C)`` was taken for a test's
progress line and its error dropped; a teardown error after ``PASSED`` was overwritten by
whichever line came last; parametrize ids with spaces were cut at the first blank. The
oracles are real runs: pytest's JUnit XML for the pytest parser, and unittest's own result
object (Django's runner prints unittest's verbose lines) for the Django parser.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalharness.grading.parsers import (
    TestRun, TestStatus, match_test_ids, parse, parse_junit, parser_for_repo)
from support import SHARED
from test_parsers_junit import junit_run, write_project  # same folder, on sys.path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("text_project")
    write_project(root)
    return root


@pytest.mark.parametrize("flags", [["-v"], ["-v", "--color=yes"], []])
def test_pytest_text_equals_junit_on_the_same_run(project: Path, flags: list[str]) -> None:
    run, proc = junit_run(project, "--doctest-modules", *flags)
    junit = parse_junit(run)
    text = parse("pytest", run)
    if "-v" not in flags:  # -rA names skipped tests only by location ("SKIPPED [1] f.py:17")
        junit = {k: v for k, v in junit.items() if v is not TestStatus.SKIPPED}
    assert len(junit) >= 28
    assert text == junit
    assert ("\x1b[" in proc.stdout) == ("--color=yes" in flags)


def test_pytest_summary_ids_with_spaces_and_dashes(project: Path) -> None:
    run, _ = junit_run(project, "pkg/sub/test_mod.py")
    text = parse("pytest", run)
    assert text["pkg/sub/test_mod.py::test_param[sp ace]"] is TestStatus.PASSED
    assert text["pkg/sub/test_mod.py::test_param[x - y]"] is TestStatus.PASSED
    assert text["pkg/sub/test_mod.py::TestOuter::TestInner::test_nested_param[1.5]"] is TestStatus.FAILED


UNITTEST_MODULE = '''
import sys, unittest

class Things(unittest.TestCase):
    def test_ok(self):
        pass

    def test_doc(self):
        """Named URLs should be reversible (app.urls) ... really.

        More text.
        """

    def test_doc_fail(self):
        """A docstring whose test fails."""
        self.assertEqual(1, 2)

    def test_noisy(self):
        sys.stderr.write("Internal Server Error: /x/\\n")

    def test_error(self):
        raise RuntimeError("boom")

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 1)

    @unittest.skip("not today")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.assertTrue(False)

    @unittest.expectedFailure
    def test_xpass(self):
        pass


class BrokenSetup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup")

    def test_never(self):
        pass
'''

# Runs the module with unittest's verbose runner (what Django's runtests.py prints) and dumps
# unittest's own verdicts: the oracle. A subtest's verdict counts for its test.
UNITTEST_RUNNER = '''
import json, sys, unittest
started = []
class Result(unittest.TextTestResult):
    def startTest(self, test):
        started.append(test)
        super().startTest(test)
suite = unittest.defaultTestLoader.loadTestsFromName("app.test_things")
result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2, resultclass=Result).run(suite)
name = lambda t: str(getattr(t, "test_case", t))
status = {str(t): "passed" for t in started}
status.update({name(t): "skipped" for t, _ in result.skipped})
status.update({name(t): "xfail" for t, _ in result.expectedFailures})
status.update({name(t): "failed" for t in result.unexpectedSuccesses})
status.update({name(t): "failed" for t, _ in result.failures})
status.update({name(t): "error" for t, _ in result.errors})
docs = {t.shortDescription(): status[str(t)] for t in started if t.shortDescription()}
json.dump({"status": {**status, **docs}, "run": result.testsRun}, open(sys.argv[1], "w"))
'''


def test_django_parser_matches_unittest_own_verdicts(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "test_things.py").write_text(UNITTEST_MODULE)
    (tmp_path / "runner.py").write_text(UNITTEST_RUNNER)
    proc = subprocess.run([sys.executable, "runner.py", "oracle.json"], cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    oracle = json.loads((tmp_path / "oracle.json").read_text())
    results = parse("django", TestRun(log=proc.stdout, exit_code=proc.returncode))
    assert oracle["run"] == 9
    assert {k: v.value for k, v in results.items()} == oracle["status"]
    assert "test_ok (app.test_things.Things.test_ok)" in results  # Python 3.11+ id form


def shared_docstring_log(*tails: str) -> str:
    """Backend copies of one test, each printing the same docstring line, then ``tails``."""
    lines = []
    for backend, tail in zip(["LocMem", "Memcached", "DB"], tails):
        lines += [f"test_non_existent (cache.tests.{backend}CacheTests)", f"Nonexistent keys are None. ... {tail}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("tails,alias", [
    (["ok", "skipped 'Memcached backend not configured'", "ok"], TestStatus.PASSED),
    (["skipped 'not configured'", "ok", "skipped 'not configured'"], TestStatus.PASSED),
    (["skipped 'not configured'", "skipped 'not configured'", "skipped 'not configured'"], TestStatus.SKIPPED),
    (["ok", "skipped 'not configured'", "FAIL"], TestStatus.FAILED),
    (["ERROR", "ok", "FAIL"], TestStatus.ERROR),
    (["expected failure", "ok", "skipped 'no'"], TestStatus.XFAIL),
])
def test_django_docstring_line_shared_by_several_tests(tails: list[str], alias: TestStatus) -> None:
    """A shared docstring line is an alias of several tests: the worst of those that ran (a skipped copy
    says nothing of the code), "skipped" only if all were; each test keeps its own status."""
    results = parse("django", TestRun(log=shared_docstring_log(*tails), exit_code=0))
    assert results["Nonexistent keys are None."] is alias
    assert results["test_non_existent (cache.tests.MemcachedCacheTests)"] is (
        TestStatus.SKIPPED if tails[1].startswith("skipped") else TestStatus.PASSED)


SYMPY_LOG = """\
============================= test process starts ==============================
executable:         /usr/bin/python  (3.9.19-final-0) [CPython]

sympy/core/tests/test_a.py[7]
test_pass ok
test_skip_reason numpy not installed. s
test_skip_plain  - s
test_xfail f
test_xpass X
test_prints_first
printed by the test
ok
test_last E                                                               [FAIL]

sympy/core/tests/test_b.py[?]   Failed to import                          [FAIL]

________________________________________________________________________________
_____________ sympy/core/tests/test_a.py:test_last _____________________________
Traceback (most recent call last):
ZeroDivisionError: division by zero
________________________________________________________________________________
_______________ sympy/core/tests/test_a.py::test_failed_elsewhere ______________
AssertionError

===== tests finished: 3 passed, 2 skipped, 1 exceptions, in 0.10 seconds =====
DO *NOT* COMMIT!
"""


def test_sympy_verbose_lines_marks_and_headers() -> None:
    """Shapes follow sympy's ``PyTestReporter`` (real output is checked in the real-log tests)."""
    results = parse("sympy", TestRun(log=SYMPY_LOG, exit_code=1))
    assert results == {
        "test_pass": TestStatus.PASSED, "test_skip_reason": TestStatus.SKIPPED,
        "test_skip_plain": TestStatus.SKIPPED, "test_xfail": TestStatus.XFAIL,
        "test_xpass": TestStatus.PASSED, "test_prints_first": TestStatus.PASSED,
        "test_last": TestStatus.ERROR, "test_failed_elsewhere": TestStatus.FAILED,
        "sympy/core/tests/test_b.py": TestStatus.ERROR,
    }


def test_match_test_ids_uses_swebench_spellings() -> None:
    results = {
        "t.py::test_skipping[test_setup_skip.py-1 skipped]": TestStatus.PASSED,
        "t.py::test_skipping[test_setup_skip.py-1 error]": TestStatus.FAILED,
        "tests/test_self.py::TestRunTC::test_stdin[/tmp/abc/mymodule.py]": TestStatus.PASSED,
        "test_failing_migration (migrations.test_commands.MakeMigrationsTests)": TestStatus.PASSED,
    }
    matched = match_test_ids(results, [
        "t.py::test_skipping[test_setup_skip.py-1",  # SWE-bench cut at the blank: both share it
        "tests/test_self.py::TestRunTC::test_stdin[/mymodule.py]",
        "Applying sites.0002_alter_domain_unique...test_failing_migration "
        "(migrations.test_commands.MakeMigrationsTests)",
        "t.py::test_absent",
    ])
    assert list(matched.values()) == [TestStatus.FAILED, TestStatus.PASSED, TestStatus.PASSED, None]


def test_parser_for_every_swebench_lite_repo() -> None:
    lite = SHARED / "research-data/swebench-lite/swe-bench-lite.json"
    if not lite.exists():
        pytest.skip(f"SWE-bench Lite data not found at {lite}")
    repos = {row["repo"] for row in json.loads(lite.read_text())}
    assert len(repos) == 12
    names = {repo: parser_for_repo(repo) for repo in repos}
    assert names["django/django"] == "django" and names["sympy/sympy"] == "sympy"
    assert {names[r] for r in repos - {"django/django", "sympy/sympy"}} == {"pytest"}
    with pytest.raises(ValueError, match="no known log parser for repository 'acme/widgets'"):
        parser_for_repo("acme/widgets")
