"""Grade a submitted patch in a fresh sandbox from the pristine task image.

Steps: apply the patch (a patch that does not apply is an outcome, not a crash); restore every
test file of the task so the agent's edits to tests never count; apply the task's test_patch;
run the test command; parse per-test statuses; cross-check with the exit code; decide.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from evalharness.grading.parsers import TestRun, TestStatus, consistent_with_exit_code, match_test_ids, parse
from evalharness.packs import PackSpec
from evalharness.sandbox.base import Sandbox
from evalharness.templating import fill
from evalharness.types import Outcome, TaskSpec

WORK = "/tmp"
"""Where the grader puts its files (outside the work tree; it exists in every image)."""
JUNIT_XML = f"{WORK}/evalharness-junit.xml"
PASSING = (TestStatus.PASSED, TestStatus.XFAIL)
TEST_CONFIG_NAMES = {"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                     "noxfile.py"}
"""Files that can configure the test run: every one a patch touches is recorded in the result."""
ALWAYS_REVERTED = {"conftest.py", "pytest.ini", ".pytest.ini"}
NESTED_CONFIG = {"tox.ini", "setup.cfg", "pyproject.toml"}
ROOT_SHADOWS = {"pytest.py", "py.py", "sitecustomize.py", "usercustomize.py", "_pytest", "pytest", "pluggy"}
"""New files at the work-tree root that would be imported instead of the test runner (`python -m` puts
the current directory first on sys.path)."""
_DIFF_PATHS = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_PLAIN_PATHS = re.compile(r"^(?:---|\+\+\+) (?:[ab]/)?(\S+)", re.M)


@dataclass
class GradeResult:
    outcome: Outcome
    reason: str
    tests: dict[str, str] = field(default_factory=dict)
    """Status of every FAIL_TO_PASS and PASS_TO_PASS test ('missing' when the run did not report it)."""
    test_exit_code: int | None = None
    test_output: str = ""
    junit_xml: str | None = None
    patch_applied: bool = False
    touched_test_files: list[str] = field(default_factory=list)
    touched_test_config: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**self.__dict__, "outcome": self.outcome.value}


def patch_files(patch: str) -> list[str]:
    """Paths a unified diff touches (both sides of renames), without /dev/null."""
    found = {p for pair in _DIFF_PATHS.findall(patch) for p in pair}
    if not found:
        found = set(_PLAIN_PATHS.findall(patch))
    return sorted(p for p in found if p != "/dev/null" and p != "dev/null")


def _q(paths: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in paths)


def _apply(sandbox: Sandbox, diff: str, name: str) -> tuple[bool, str]:
    """git apply, then a fuzzier `patch` as SWE-bench does; returns (applied, log)."""
    path = f"{WORK}/evalharness-{name}"
    sandbox.write_file(path, diff if diff.endswith("\n") else diff + "\n")
    first = sandbox.exec(f"git apply --verbose --whitespace=nowarn {path}", timeout=120)
    if first.exit_code == 0:
        return True, first.output
    second = sandbox.exec(f"patch --batch --fuzz=5 -p1 -i {path}", timeout=120)
    if second.exit_code == 0:
        return True, first.output + second.output
    sandbox.exec("git checkout -q -- . && git clean -fdq", timeout=120)  # leave no half-applied hunks
    return False, first.output + second.output


def reverted_paths(touched: list[str], test_files: list[str]) -> list[str]:
    """Paths of a patch that are reverted before the tests run, because a fix never needs them and
    they could forge the verdict: pytest configuration (conftest.py, pytest.ini anywhere; tox.ini,
    setup.cfg, pyproject.toml in a folder between the root and a test file, where pytest would find
    them first) and root-level modules that shadow the test runner. A root-level pyproject.toml,
    setup.cfg or tox.ini is only recorded: fixes do change dependencies there.
    """
    test_dirs = {parent for f in test_files for parent in PurePosixPath(f).parents if str(parent) != "."}
    out = []
    for p in touched:
        path = PurePosixPath(p)
        if (path.name in ALWAYS_REVERTED
                or (path.name in NESTED_CONFIG and path.parent in test_dirs)
                or path.parts[0] in ROOT_SHADOWS):
            out.append(p)
    return sorted(out)


def _restore(sandbox: Sandbox, files: list[str], base: str) -> tuple[bool, str]:
    """Each file as it is at the base commit; removed where the base has none. One command for all."""
    if not files:
        return True, ""
    script = "set -e; " + "; ".join(f"if git cat-file -e {base}:{shlex.quote(p)} 2>/dev/null; then "
                                    f"rm -rf {shlex.quote(p)}; git checkout -q {base} -- {shlex.quote(p)}; "
                                    f"else rm -rf {shlex.quote(p)}; fi" for p in files)
    done = sandbox.exec(script, timeout=120)
    return done.exit_code == 0, done.output


def grade(task: TaskSpec, spec: PackSpec, patch: str, sandbox: Sandbox) -> GradeResult:
    """Grade ``patch`` for ``task`` in ``sandbox``, a fresh container from the task image."""
    touched = patch_files(patch)
    protected = set(patch_files(task.test_patch)) | set(task.test_files)
    reverted = reverted_paths(touched, task.test_files)
    result = GradeResult(outcome=Outcome.UNRESOLVED, reason="",
                         touched_test_files=sorted(set(touched) & protected),
                         touched_test_config=sorted({p for p in touched if PurePosixPath(p).name in TEST_CONFIG_NAMES}
                                                    | set(reverted)))
    base = sandbox.base_commit()
    if patch.strip():
        applied, log = _apply(sandbox, patch, "patch.diff")
        if not applied:
            result.outcome, result.reason, result.test_output = Outcome.PATCH_APPLY_FAILED, "patch did not apply", log
            return result
        result.patch_applied = True
    restored, log = _restore(sandbox, sorted(protected | set(reverted)), base)
    if not restored:  # e.g. the patch put a folder where a test file belongs
        result.reason, result.test_output = "the task's test files could not be restored over the patch", log
        return result
    if task.test_patch.strip():
        applied, log = _apply(sandbox, task.test_patch, "test_patch.diff")
        if not applied:
            result.outcome, result.reason = Outcome.TEST_RUN_ERROR, "the task's test_patch does not apply (task defect)"
            result.test_output = log
            return result
    return _run_tests(task, spec, sandbox, result)


def _run_tests(task: TaskSpec, spec: PackSpec, sandbox: Sandbox, result: GradeResult) -> GradeResult:
    command = fill(spec.test_command, {"test_files": _q(task.test_files), "junit_xml": JUNIT_XML})
    run = sandbox.exec(command, timeout=spec.timeouts.tests_s)
    result.test_exit_code, result.test_output = run.exit_code, run.output
    if run.timed_out:
        result.outcome, result.reason = Outcome.TESTS_TIMED_OUT, f"tests timed out after {spec.timeouts.tests_s:g} s"
        return result
    result.junit_xml = _read_optional(sandbox, JUNIT_XML)
    result.outcome, result.reason, result.tests = decide(
        task, spec.log_parser, exit_code=run.exit_code, log=run.output, junit_xml=result.junit_xml,
        patch_applied=result.patch_applied)
    return result


def decide(task: TaskSpec, log_parser: str, *, exit_code: int, log: str, junit_xml: str | None,
           patch_applied: bool) -> tuple[Outcome, str, dict[str, str]]:
    """Pure: from one finished test run to (outcome, reason, status of each required test).

    ``evalharness grade`` calls it again on a stored run folder, without Docker.
    """
    if log_parser == "junit" and junit_xml is None:
        return (Outcome.TEST_RUN_ERROR,
                f"the test command wrote no JUnit XML (exit {exit_code}): it died before reporting", {})
    try:
        statuses = parse(log_parser, TestRun(log=log, exit_code=exit_code, junit_xml=junit_xml))
    except ValueError as e:
        return Outcome.TEST_RUN_ERROR, f"test results unreadable: {e}", {}
    wanted = task.FAIL_TO_PASS + task.PASS_TO_PASS
    matched = match_test_ids(statuses, wanted)
    tests = {t: s.value if s else "missing" for t, s in matched.items()}
    if not statuses:
        return Outcome.TEST_RUN_ERROR, f"the test command reported no tests (exit {exit_code})", tests
    ok, why = consistent_with_exit_code(statuses, exit_code)
    if not ok:
        return Outcome.UNRESOLVED, f"test log inconsistent with exit code: {why}", tests
    if log_parser == "junit":
        disagreement = _junit_disagrees_with_log(matched, log, exit_code)
        if disagreement:
            return Outcome.UNRESOLVED, disagreement, tests
    failing = [t for t in wanted if matched[t] not in PASSING]
    if failing:
        outcome = Outcome.UNRESOLVED if patch_applied else Outcome.NO_PATCH
        return outcome, f"{len(failing)} of {len(wanted)} required tests not passing, e.g. {failing[0]}", tests
    return Outcome.RESOLVED, f"all {len(wanted)} required tests pass", tests


def _junit_disagrees_with_log(junit: dict[str, TestStatus | None], log: str, exit_code: int) -> str:
    """Code under test runs inside pytest's process and could rewrite the JUnit file at exit; what
    pytest printed before that (``-rA`` summary) must then tell the same story for required tests."""
    try:
        printed = match_test_ids(parse("pytest", TestRun(log=log, exit_code=exit_code)), list(junit))
    except ValueError:
        return ""
    for test, status in junit.items():
        seen = printed.get(test)
        if status is not None and seen is not None and (status in PASSING) != (seen in PASSING):
            return (f"JUnit XML says {test} {status.value} but the printed summary says {seen.value}: "
                    "the results may have been rewritten by the code under test")
    return ""


def _read_optional(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
