"""Text parsers against real SWE-bench harness logs whose outcomes are known from the data.

The bug class this pins: a parser that reads a log differently from the harness that made a
benchmark's FAIL_TO_PASS/PASS_TO_PASS lists silently flips resolutions (SWE-bench's Django
parser lost tests whose docstring was printed; its pytest parser cut ids at the first blank;
its SymPy parser missed a result followed by the ``[FAIL]`` file mark). Every expected
answer below comes from the data: the per-instance ``report.json`` of a real 2024 SWE-bench
run (UTBoost's log4test zip), UTBoost's re-parsed test lists, SWE-bench Lite's lists and
test patches, and each runner's own summary line. Read from ../shared; never copied here.

These tests also pin what docs/parsers.md says of our agreement with SWE-bench's parsers
(measured by benchmarks/parser_agreement.py, which needs swebench; these tests do not): every
one of the 8 logs is counted against its runner's summary, and each kind of disagreement has
a row in ``DISAGREEMENTS`` with the status the log itself proves.
"""

from __future__ import annotations

import functools
import json
import re
import zipfile
from pathlib import Path

import pytest

from evalharness.grading.parsers import (
    TestRun, TestStatus, consistent_with_exit_code, match_test_ids, parse, parser_for_repo)
from support import SHARED

DATA = SHARED / "research-data"
ZIP = DATA / "swebench-logs" / "utboost_log4test_20231010_rag_swellama7b.zip"
UTBOOST = DATA / "utboost" / "updated_parser_test_instance_dict_verified.json"
LITE = DATA / "swebench-lite" / "swe-bench-lite.json"
DJANGO_16950 = DATA / "swebench-logs" / "django_16950_log_output.txt"
PASSING = (TestStatus.PASSED, TestStatus.XFAIL)  # what SWE-bench's grading counts as passed
DJANGO_ID = re.compile(r"^\w+ \([\w.]+\)$")


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real-log data not found: {path} (see ../shared/research-data/SOURCES.md)")
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("log4test")
    with zipfile.ZipFile(need(ZIP)) as archive:
        archive.extractall(out, [m for m in archive.namelist() if not m.startswith("__MACOSX")])
    return out / "20231010_rag_swellama7b"


def parse_instance(run_dir: Path, instance: str, exit_code: int = 1) -> dict[str, TestStatus]:
    repo = instance.rsplit("-", 1)[0].replace("__", "/")
    log = (run_dir / instance / "test_output.txt").read_text(errors="replace")
    return parse(parser_for_repo(repo), TestRun(log=log, exit_code=exit_code))


_WORDS = {"passed": "passed", "failed": "failed", "failure": "failed", "error": "error",
          "exception": "error", "skipped": "skipped"}
ALL_LOGS = ["django__django-10097", "django__django-12155", "django__django-14855", "django__django-7530",
            "django__django-16950", "pydata__xarray-7393", "pytest-dev__pytest-8399", "sympy__sympy-15809"]


def read_log(request: pytest.FixtureRequest, instance: str) -> str:
    if instance == "django__django-16950":  # not in the zip: SWE-bench PR #314's test data
        return need(DJANGO_16950).read_text()
    run_dir = request.getfixturevalue("run_dir")
    return (run_dir / instance / "test_output.txt").read_text(errors="replace")


@functools.lru_cache(maxsize=4)  # the 16 MB log is read by several tests
def parse_log(instance: str, log: str) -> dict[str, TestStatus]:
    return parse(parser_for_repo(instance.rsplit("-", 1)[0].replace("__", "/")), TestRun(log=log, exit_code=1))


def runner_summary(log: str) -> dict[str, int]:
    """Counts by status from pytest's or SymPy's last summary line."""
    line = re.findall(r"^=+ .* in [\d.]+ ?s\w* =+$", log, re.M)[-1]
    return {_WORDS[w.rstrip("s")]: int(n) for n, w in re.findall(r"(\d+) (\w+)", line) if w.rstrip("s") in _WORDS}


def check_unittest_counts(log: str, results: dict[str, TestStatus]) -> None:
    """Django's runner is unittest's: "Ran N tests", then "OK (skipped=3)" or "FAILED (failures=2,
    errors=1, skipped=3, expected failures=1)". failures/errors count one per ``FAIL:``/``ERROR:``
    header, and a test with failed subtests has one header per subtest, so failed tests are checked
    against the headers, and the other statuses against the counts."""
    ran = int(re.findall(r"^Ran (\d+) tests? in ", log, re.M)[-1])
    verdict = re.findall(r"^(?:OK|FAILED)(?: \((.*)\))?$", log, re.M)[-1]
    counts = {name.strip(): int(n) for name, n in re.findall(r"([a-z ]+)=(\d+)", verdict)}
    tests = {k: v for k, v in results.items() if DJANGO_ID.match(k)}  # no docstring aliases
    methods = {k: v for k, v in tests.items() if not k.startswith("setUpClass (")}
    headers = re.findall(r"^(?:FAIL|ERROR): (\w+ \([\w.]+\))", log, re.M)
    # a class skipped in its setUpClass counts as one skip, printed as a bare "skipped 'why'" line
    class_skips = len(re.findall(r"^skipped ['\"]", log, re.M))
    assert len(methods) == ran
    assert sum(v is TestStatus.SKIPPED for v in methods.values()) == counts.get("skipped", 0) - class_skips
    assert sum(v is TestStatus.XFAIL for v in methods.values()) == counts.get("expected failures", 0)
    assert len(headers) == counts.get("failures", 0) + counts.get("errors", 0)
    assert {k for k, v in tests.items() if v in (TestStatus.FAILED, TestStatus.ERROR)} == set(headers)
    assert counts.get("unexpected successes", 0) == 0  # none in these logs (they would count as failed)


@pytest.mark.parametrize("instance", ALL_LOGS)
def test_counts_equal_the_runner_summary_line(request: pytest.FixtureRequest, instance: str) -> None:
    log = read_log(request, instance)
    results = parse_log(instance, log)
    if instance.startswith("django"):
        check_unittest_counts(log, results)
        failing = bool(re.search(r"^FAILED \(", log, re.M))
    else:
        expected = runner_summary(log)
        if not instance.startswith("sympy"):
            expected.pop("skipped", None)  # -rA names skipped tests by location only
        found = {s.value: sum(v is s for v in results.values()) for s in TestStatus}
        assert {k: found[k] for k in expected} == expected
        failing = bool(expected.get("failed", 0) + expected.get("error", 0))
    assert consistent_with_exit_code(results, 1 if failing else 0)[0]


# the four instances whose patch applied, so report.json holds per-test verdicts
REPORTED = {"django__django-10097": 1870, "pydata__xarray-7393": 73,
            "pytest-dev__pytest-8399": 60, "sympy__sympy-15809": 12}


@pytest.mark.parametrize("instance", sorted(REPORTED))
def test_verdicts_equal_the_harness_report(run_dir: Path, instance: str) -> None:
    report = json.loads((run_dir / instance / "report.json").read_text())[instance]
    results = parse_instance(run_dir, instance)
    checked, wrong = 0, []
    for kind, lists in report["tests_status"].items():
        matched = match_test_ids(results, lists["success"] + lists["failure"])
        wrong += [(kind, "success", t, matched[t]) for t in lists["success"] if matched[t] not in PASSING]
        wrong += [(kind, "failure", t, matched[t]) for t in lists["failure"] if matched[t] in PASSING]
        checked += len(lists["success"]) + len(lists["failure"])
    assert wrong == []
    assert checked == REPORTED[instance]


def test_nested_pytest_sessions_do_not_leak(run_dir: Path) -> None:
    """pytest's own suite prints inner sessions (with FAILED lines) in captured output."""
    eval_sh = (run_dir / "pytest-dev__pytest-8399" / "eval.sh").read_text()
    targets = re.search(r"^pytest -rA (.+)$", eval_sh, re.M).group(1).split()
    results = parse_instance(run_dir, "pytest-dev__pytest-8399", exit_code=0)
    assert results and all(k.split("::")[0] in targets for k in results)
    assert consistent_with_exit_code(results, 0) == (True, "exit code 0 agrees with 0 failed/errored of 59 tests")


def test_sympy_result_before_the_file_mark(run_dir: Path) -> None:
    """UTBoost's re-parse lists test_issue_14000 (its "ok" is followed by "[FAIL]")."""
    lists = json.loads(need(UTBOOST).read_text())["sympy__sympy-15809"]
    assert "test_issue_14000" in lists["PASS_TO_PASS"]
    matched = match_test_ids(parse_instance(run_dir, "sympy__sympy-15809"), lists["PASS_TO_PASS"])
    assert all(status is TestStatus.PASSED for status in matched.values()), matched


def added_by_test_patch(instance: str) -> set[str]:
    rows = {r["instance_id"]: r for r in json.loads(need(LITE).read_text())}
    patch = rows[instance]["test_patch"] if instance in rows else ""
    return set(re.findall(r"^\+\s+def (test\w+)\(", patch, re.M))


@pytest.mark.parametrize("instance,p2p_count", [("django__django-7530", 62), ("django__django-14855", 329)])
def test_unpatched_runs_fail_fail_to_pass_and_pass_pass_to_pass(
        run_dir: Path, instance: str, p2p_count: int) -> None:
    """In these two runs no patch applied and no test patch either: the base code ran.

    So FAIL_TO_PASS must not pass, and PASS_TO_PASS must pass, except tests that only the
    (unapplied) test patch defines, which are absent.
    """
    lists = json.loads(need(UTBOOST).read_text())[instance]
    results = parse_instance(run_dir, instance)
    added = added_by_test_patch(instance)
    fail_to_pass = match_test_ids(results, lists["FAIL_TO_PASS"])
    assert all(status not in PASSING for status in fail_to_pass.values())
    pass_to_pass = match_test_ids(results, lists["PASS_TO_PASS"])
    missing = {t for t, s in pass_to_pass.items() if s is None}
    assert {t.split()[0] for t in missing} <= added
    assert sum(s is TestStatus.PASSED for s in pass_to_pass.values()) == p2p_count - len(missing)


def test_django_16950_gold_run_passes_every_listed_test() -> None:
    """SWE-bench PR #314 saved this log of the gold patch (Python 3.11 id form)."""
    log = need(DJANGO_16950).read_text()
    lists = json.loads(need(UTBOOST).read_text())["django__django-16950"]
    results = parse("django", TestRun(log=log, exit_code=0))
    wanted = lists["FAIL_TO_PASS"] + lists["PASS_TO_PASS"]
    assert set(match_test_ids(results, wanted).values()) == {TestStatus.PASSED}
    assert consistent_with_exit_code(results, 0)[0]


P, F, E, S, X = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED, TestStatus.XFAIL

# One row per kind of disagreement with SWE-bench's parsers (docs/parsers.md): a line of the log
# (it must be there), and what we read from it; None: not a test id, so absent from our results.
DISAGREEMENTS = {
    "header: the test is the whole id, not the bare name SWE-bench keys": (
        "django__django-10097", "FAIL: test_URLValidator_raises_error_156 (validators.tests.TestSimpleValidators)",
        {"test_URLValidator_raises_error_156 (validators.tests.TestSimpleValidators)": F,
         "test_URLValidator_raises_error_156": None}),
    "header only: a class whose setUpClass raised": (
        "django__django-10097", "ERROR: setUpClass (flatpages_tests.test_csrf.FlatpageCSRFTests)",
        {"setUpClass (flatpages_tests.test_csrf.FlatpageCSRFTests)": E, "setUpClass": None}),
    "docstring: the id line and the docstring line name one test": (
        "django__django-10097", "Test case has installed 3 fixture objects ... ok",
        {"testClassFixtures (fixtures.tests.TestCaseFixtureLoadingTests)": P,
         "Test case has installed 3 fixture objects": P}),
    "docstring, Python 3.11 ids; four tests share one docstring line": (
        "django__django-16950", "#24958 - Variant of test_inlineformset_factory_nulls_default_pks for ... ok",
        {"test_inlineformset_factory_nulls_default_pks_uuid_parent_auto_child (model_formsets.test_uuid."
         "InlineFormsetTests.test_inlineformset_factory_nulls_default_pks_uuid_parent_auto_child)": P,
         "#24958 - Variant of test_inlineformset_factory_nulls_default_pks for": P}),
    "glued: a test whose subtests failed prints no status; the next test's result follows": (
        "django__django-10097", "test_bad_urls (utils_tests.test_http.IsSafeURLTests) ... "
        "test_basic_auth (utils_tests.test_http.IsSafeURLTests) ... ok",
        {"test_bad_urls (utils_tests.test_http.IsSafeURLTests)": F,  # 20 "FAIL: test_bad_urls (...) (url=...)"
         "test_basic_auth (utils_tests.test_http.IsSafeURLTests)": P,
         "test_bad_urls (utils_tests.test_http.IsSafeURLTests) ... test_basic_auth "
         "(utils_tests.test_http.IsSafeURLTests)": None}),
    "glued: migration output before the test's id": (
        "django__django-7530", "Applying sites.0002_alter_domain_unique...test_failing_migration "
        "(migrations.test_commands.MakeMigrationsTests) ... ok",
        {"test_failing_migration (migrations.test_commands.MakeMigrationsTests)": P}),
    "expected failure": (
        "django__django-10097", "test_actual_expiry (sessions_tests.tests.CookieSessionTests) ... expected failure",
        {"test_actual_expiry (sessions_tests.tests.CookieSessionTests)": X}),
    "pytest id with a blank": (
        "pytest-dev__pytest-8399", "PASSED testing/test_unittest.py::test_setup_inheritance_skipping"
        "[test_setup_skip.py-1 skipped]",
        {"testing/test_unittest.py::test_setup_inheritance_skipping[test_setup_skip.py-1 skipped]": P,
         "testing/test_unittest.py::test_setup_inheritance_skipping[test_setup_skip.py-1": None}),
    "nested pytest session in captured output": (
        "pytest-dev__pytest-8399", "FAILED test_simple_unittest.py::MyTestCase::test_failing - AssertionError",
        {"test_simple_unittest.py::MyTestCase::test_failing": None}),
    "skip location and a captured unittest summary": (
        "pytest-dev__pytest-8399", "FAILED (unexpected successes=1)",
        {"(unexpected": None, "[20]": None}),
    "SymPy failure-report header": (
        "sympy__sympy-15809", "_______ sympy/functions/elementary/tests/test_miscellaneous.py:test_Min ________",
        {"test_Min": E, "sympy/functions/elementary/tests/test_miscellaneous.py:test_Min": None}),
    "SymPy skipped result": (
        "sympy__sympy-15809", "test_issue_11463 numpy not installed. s", {"test_issue_11463": S}),
    "SymPy result before the file mark": (
        "sympy__sympy-15809", "test_issue_14000 ok                                                       [FAIL]",
        {"test_issue_14000": P}),
}


@pytest.mark.parametrize("kind", sorted(DISAGREEMENTS))
def test_where_swebench_disagrees_we_follow_the_log(request: pytest.FixtureRequest, kind: str) -> None:
    instance, line, expected = DISAGREEMENTS[kind]
    log = read_log(request, instance)
    assert any(text.strip().startswith(line) for text in log.splitlines())
    results = parse_log(instance, log)
    assert {test: results.get(test) for test in expected} == expected


def test_docstring_line_shared_by_passed_and_skipped_tests(run_dir: Path) -> None:
    """Each cache backend's test class has a test_non_existent with one docstring; the memcached
    classes are skipped where no server is configured. SWE-bench Lite lists that docstring line in
    django__django-16379's PASS_TO_PASS, so its gold run passed it: skipped copies must not make the
    alias "skipped" (they did: an alias took the worst status of all its tests)."""
    line = "Nonexistent cache keys return as None/default."
    rows = {r["instance_id"]: r for r in json.loads(need(LITE).read_text())}
    pass_to_pass = rows["django__django-16379"]["PASS_TO_PASS"]
    assert line in (json.loads(pass_to_pass) if isinstance(pass_to_pass, str) else pass_to_pass)
    results = parse_instance(run_dir, "django__django-10097")
    assert results["test_non_existent (cache.tests.MemcachedCacheTests)"] is S
    assert results["test_non_existent (cache.tests.LocMemCacheTests)"] is P
    assert results[line] is P
