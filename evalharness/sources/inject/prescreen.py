"""The cheap pre-screen: the whole suite once per mutant, in one long-lived sandbox of the base task image.

It only sorts mutants out (survived, crashed, hangs); the ones it keeps go
through the shared discovery and validation path (``validation.Validator``), with fresh sandboxes.
"""

from __future__ import annotations

import io
import shlex
import tarfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from evalharness.grading.grade import end_leftovers
from evalharness.grading.parsers import TestRun, parse, parse_junit
from evalharness.sources.inject.js.messages import failure_messages
from evalharness.templating import fill

JUNIT = "/tmp/eh-inject-junit.xml"
PASSING = ("passed", "xfail", "skipped")


@dataclass
class SuiteRun:
    """One run of the whole suite: every test's status and the failure message of each failing one."""

    statuses: dict[str, str]
    messages: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    timed_out: bool = False
    seconds: float = 0.0
    collection_errors: list[str] = field(default_factory=list)


@dataclass
class Screen:
    """A mutant's pre-screen verdict: ``killed`` (a candidate), ``survived``, ``crashed`` or ``hangs`` (the suite
    ran past the time-out); for ``killed``, the tests that fail and what they said."""

    verdict: str
    failing: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    reason: str = ""


def suite_command(test_command: str, *, first_failure: bool = False, tests: list[str] | None = None,
                  log_parser: str = "junit") -> str:
    """The pack's test command on the whole suite (or on ``tests``), writing JUnit XML where we read it;
    ``first_failure`` stops at the first failing test (a kill is known by then). A Node runner's command
    (any ``log_parser`` but pytest's ``junit``) writes its own report to the results file and runs whole
    (its ``{test_files}`` are the files of ``tests``)."""
    if log_parser != "junit":
        files = " ".join(shlex.quote(f) for f in sorted({t.split("::")[0] for t in tests or []}))
        return fill(test_command, {"test_files": files, "junit_xml": JUNIT})
    files = " ".join(shlex.quote(t) for t in tests or [])
    command = fill(test_command, {"test_files": files, "junit_xml": JUNIT})
    if files and files not in command:
        command += f" {files}"
    if JUNIT not in command:
        command += f" -o junit_family=xunit1 --junitxml={JUNIT}"
    return command + (" -x" if first_failure else "")


def read_tree(box, workdir: str) -> dict[str, bytes]:
    """Every file of the work tree (not ``.git``, not the installed packages of ``node_modules``), read out of
    the sandbox."""
    code, data, _ = box.exec_bytes(["tar", "-C", workdir, "--exclude=./.git", "--exclude=node_modules", "-cf", "-",
                                    "."], timeout=120,
                                   max_bytes=256 * 1024 * 1024)
    if code != 0:
        raise RuntimeError(f"could not read the work tree {workdir} (tar exit {code})")
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                files[member.name.removeprefix("./")] = tar.extractfile(member).read()
    return files


def run_suite(box, command: str, timeout: float, log_parser: str = "junit") -> SuiteRun:
    started = time.monotonic()
    box.exec(f"rm -f {JUNIT}", timeout=30)
    result = box.exec(command, timeout=timeout)
    # the box runs many mutants in turn: a hung test file its runner started apart (tap's) must not outlive the run
    # and slow the next ones down
    end_leftovers(box)
    seconds = round(time.monotonic() - started, 2)
    try:
        xml = box.read_file(JUNIT).decode(errors="replace")
    except FileNotFoundError:
        xml = None
    run = read_run(xml, result.output, result.exit_code) if log_parser == "junit" \
        else read_report(log_parser, xml, result.output, result.exit_code)
    run.timed_out, run.seconds = result.timed_out, seconds
    return run


def read_run(xml: str | None, output: str, exit_code: int) -> SuiteRun:
    """Pure: a suite run from its JUnit XML (None when the run wrote none) and its output."""
    run = SuiteRun({}, exit_code=exit_code)
    if xml is None:
        return run
    try:
        run.statuses = {k: v.value for k, v in parse_junit(TestRun(output, exit_code, xml)).items()}
    except ValueError:
        return run
    run.messages, run.collection_errors = _messages(xml, run.statuses)
    return run


def read_report(log_parser: str, text: str | None, output: str, exit_code: int) -> SuiteRun:
    """Pure: a suite run from a Node runner's results file (``log_parser``'s format; None when none was written)."""
    run = SuiteRun({}, exit_code=exit_code)
    try:
        run.statuses = {k: v.value for k, v in parse(log_parser, TestRun(output, exit_code, text)).items()}
    except ValueError:
        return run
    run.messages = failure_messages(log_parser, text)
    return run


def _messages(xml: str, statuses: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Failure messages by node id (matched on the test's name and class), and collection errors."""
    by_case: dict[tuple[str, str], str] = {}
    errors = []
    for case in ET.fromstring(xml).iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                if not case.get("classname"):
                    errors.append(case.get("name", ""))
                by_case.setdefault((case.get("classname", ""), case.get("name", "")), child.get("message", ""))
    messages = {}
    for test, status in statuses.items():
        if status in PASSING:
            continue
        path, *names = test.split("::")
        for (classname, name), message in by_case.items():
            if names and name == names[-1] and classname.endswith(".".join(["", *names[:-1]]).lstrip(".") or ""):
                messages[test] = message
                break
    return messages, errors


def hang_limit(base_seconds: float) -> float:
    """Pure: how long a mutant's suite may run before it counts as hanging: four times the base run, plus 10 s."""
    return max(30.0, 4 * base_seconds + 10)


def retry_limit(ran_seconds: float, base_now_seconds: float) -> float | None:
    """Pure: after a mutant's run was stopped at ``ran_seconds``, the base suite re-timed took
    ``base_now_seconds``: the limit to run the mutant again with when the machine has slowed so much that the
    limit this speed sets is clearly (over a fifth) longer than the run was given, else None (a hang).
    On a loaded machine the base suite is slower too, and an honest mutant slowed the same way is no hang."""
    limit = hang_limit(base_now_seconds)
    return limit if limit > 1.2 * ran_seconds else None


def screen(base: SuiteRun, run: SuiteRun, timeout: float | None = None) -> Screen:
    """Pure: the verdict of a mutant's suite run (stopped at its first failure or not) against the base run;
    ``timeout`` is the limit the run had (named in a ``hangs`` reason)."""
    passing = {t for t, s in base.statuses.items() if s in ("passed", "xfail")}
    if run.timed_out:
        limit = f"the {timeout:.0f} s limit" if timeout else "its time limit"
        return Screen("hangs", seconds=run.seconds, reason=f"the suite ran past {limit} (the base run took "
                      f"{base.seconds:.1f} s): the mutant makes it hang")
    if not run.statuses or run.collection_errors:
        return Screen("crashed", seconds=run.seconds, reason=f"no test results (exit {run.exit_code})"
                      if not run.statuses else f"collection errors: {', '.join(run.collection_errors[:3])}")
    failing = {t: run.messages.get(t, "") for t in sorted(passing & set(run.statuses))
               if run.statuses[t] not in ("passed", "xfail")}
    if failing:
        return Screen("killed", failing, run.seconds, f"{sorted(failing)[0]} fails")
    missing = sorted(passing - set(run.statuses))
    if missing:
        return Screen("crashed", seconds=run.seconds, reason=f"{len(missing)} tests did not run, e.g. {missing[0]}")
    return Screen("survived", seconds=run.seconds, reason="no test fails")


def write_source(box, workdir: str, path: str, text: str) -> None:
    box.write_file(f"{workdir}/{path}", text.encode())

