"""Text parsers against real SWE-bench harness logs whose outcomes are known from the data.

The bug class this pins: a parser that reads a log differently from the harness that made a
benchmark's FAIL_TO_PASS/PASS_TO_PASS lists silently flips resolutions (SWE-bench's Django
parser lost tests whose docstring was printed; its pytest parser cut ids at the first blank;
its SymPy parser missed a result followed by the ``[FAIL]`` file mark). Every expected
answer below comes from the data: the per-instance ``report.json`` of a real 2024 SWE-bench
run (UTBoost's log4test zip), UTBoost's re-parsed test lists, SWE-bench Lite's lists and
test patches, and each runner's own summary line. Read from ../shared; never copied here.
"""

from __future__ import annotations

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


def runner_summary(log: str) -> dict[str, int]:
    """Counts by status from the runner's last summary line (pytest, SymPy or unittest)."""
    lines = re.findall(r"^=+ .* in [\d.]+ ?s\w* =+$|^(?:OK|FAILED)(?: \(.*\))?$", log, re.M)
    pairs = re.findall(r"(\d+) (\w+)", lines[-1]) + [(n, w) for w, n in re.findall(r"(\w+)=(\d+)", lines[-1])]
    counts = {_WORDS[w.rstrip("s")]: int(n) for n, w in pairs if w.rstrip("s") in _WORDS}
    if lines[-1].startswith(("OK", "FAILED")):  # unittest: "Ran N tests" counts all of them
        ran = int(re.findall(r"^Ran (\d+) tests?", log, re.M)[-1])
        counts["passed"] = ran - sum(counts.values())
    return counts


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


@pytest.mark.parametrize("instance", ["pydata__xarray-7393", "pytest-dev__pytest-8399",
                                      "sympy__sympy-15809", "django__django-7530",
                                      "django__django-12155", "django__django-14855"])
def test_counts_equal_the_runner_summary_line(run_dir: Path, instance: str) -> None:
    log = (run_dir / instance / "test_output.txt").read_text(errors="replace")
    expected = runner_summary(log)
    results = parse_instance(run_dir, instance)
    if instance.startswith("django"):
        results = {k: v for k, v in results.items() if DJANGO_ID.match(k)}  # no docstring aliases
    if instance.startswith("pytest") or instance.startswith("pydata"):
        expected.pop("skipped", None)  # -rA names skipped tests by location only
    found = {s.value: sum(v is s for v in results.values()) for s in TestStatus}
    assert {k: found[k] for k in expected} == expected
    failing = expected.get("failed", 0) + expected.get("error", 0)
    assert consistent_with_exit_code(results, 1 if failing else 0)[0]


def test_full_django_suite_count(run_dir: Path) -> None:
    """16 MB log of the whole suite (Python 3.5): one id per test the runner counted."""
    log = (run_dir / "django__django-10097" / "test_output.txt").read_text(errors="replace")
    results = parse_instance(run_dir, "django__django-10097")
    tests = [k for k in results if DJANGO_ID.match(k) and not k.startswith("setUpClass ")]
    assert len(tests) == int(re.findall(r"^Ran (\d+) tests", log, re.M)[-1]) == 12320
    assert sum(k.startswith("setUpClass ") for k in results) == log.count("\nERROR: setUpClass (")


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
    assert len([k for k in results if DJANGO_ID.match(k)]) == int(re.search(r"^Ran (\d+) tests", log, re.M).group(1))
    assert consistent_with_exit_code(results, 0)[0]
