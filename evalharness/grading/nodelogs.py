"""Node test runners' JSON reports: jest (and vitest, which writes the same shape), mocha, tap 16.

Pure functions ``report text -> {test_id: status}``, with the statuses of ``textlogs`` (``"passed"``,
``"failed"``, ``"error"``, ``"skipped"``); ``parsers`` wraps them into its registry. The report is the
file the test command wrote at the ``{junit_xml}`` placeholder (the pack's results file, whatever its
format), never the printed log. The shapes were read from real reports (jest 29.7, vitest 2.1,
mocha 10.8, tap 16.3 on Node 20; ``tests/data/node_reporters/``).

Test ids are ``FILE::NAME``, ``FILE`` relative to the work tree, so ``TaskSpec.test_files`` finds the
files to run from the ids as it does for pytest node ids:

- jest/vitest: ``NAME`` is the describe titles and the test title joined by `` > ``. A file whose suite
  failed without a failing test (it did not compile, an import threw, a hook failed: "Test suite failed
  to run") gets the id ``FILE::(suite)`` with status ``error``; its tests are absent, never passing.
- mocha: ``NAME`` is mocha's ``fullTitle`` (titles joined by blanks); a failing hook is its own failed id.
- tap (``-R tap``: the TAP stream itself, read by ``parse_tap``): one id per subtest, ``NAME`` its titles from
  the file down joined by blanks, its status the subtest's own test point (a subtest fails when one of its
  assertions or children failed, as TAP says); assertions outside any subtest, and a file that crashed or
  found no test while failing, are ``FILE::(file)``. ``# SKIP`` and ``# TODO`` points are skipped. A file tap
  stopped at its own per-file timeout (``not ok - timeout!``, ``expired: FILE``) makes the stream unreadable: an
  unfinished run, as a jest report that says it was interrupted. tap 16's
  JSON reporter crashes on some failed assertions (``stack.trim is not a function`` in tap-mocha-reporter,
  seen on node-semver's CLI tests), so the stream is what ``packs new`` asks for.
- tap 16 (``-R json``: mocha's shape, one entry per *assertion*, no file field): the entries are grouped
  into one test per subtest. ``fullTitle`` is the file as given on the command line, the subtest
  titles and the assertion's title, joined by blanks; ``NAME`` is what lies between the file and the
  assertion's title, ``(file)`` for assertions made outside any subtest (and for a file that crashed).
  A group fails if any of its assertions failed, else passes if any passed, else it is skipped. Nested
  subtests are groups of their own: a parent is judged by its own assertions.
"""

from __future__ import annotations

import json
import re

from evalharness.grading.textlogs import ERROR, FAILED, PASSED, SKIPPED, Statuses, merge

WORKDIR = "/testbed/"
"""Runners that report absolute paths (jest, vitest, mocha) have them made relative to the default work tree."""
SUITE, FILE_LEVEL = "(suite)", "(file)"
_JEST_STATUS = {"passed": PASSED, "failed": FAILED, "pending": SKIPPED, "skipped": SKIPPED, "todo": SKIPPED,
                "disabled": SKIPPED}


def _report(text: str | None, runner: str) -> dict:
    if text is None:
        raise ValueError(f"the test command wrote no {runner} report: it died before reporting")
    try:
        report = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"the {runner} report is not JSON ({e}): empty, truncated or another reporter's") from e
    if not isinstance(report, dict):
        raise ValueError(f"the {runner} report is a JSON {type(report).__name__}, not an object")
    return report


def _relative(path: str) -> str:
    return path[len(WORKDIR):] if path.startswith(WORKDIR) else path


def _list(report: dict, key: str, runner: str) -> list[dict]:
    value = report.get(key)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"the {runner} report has no list of objects under {key!r}")
    return value


def parse_jest_json(text: str | None) -> Statuses:
    """jest's ``--json --outputFile`` report (vitest's ``--reporter=json`` too)."""
    report = _report(text, "jest")
    if report.get("wasInterrupted"):
        raise ValueError("the jest report says the run was interrupted: its results are incomplete")
    results: Statuses = {}
    for suite in _list(report, "testResults", "jest"):
        file = _relative(str(suite.get("name", "")))
        statuses = []
        for case in suite.get("assertionResults") or []:
            name = " > ".join([*case.get("ancestorTitles", []), str(case.get("title", ""))])
            status = _JEST_STATUS.get(case.get("status"), ERROR)  # a status not known here is never a pass
            statuses.append(status)
            merge(results, f"{file}::{name}", status)
        if suite.get("status") != "passed" and FAILED not in statuses and ERROR not in statuses:
            # failed to run (no tests reported), or failed outside any test (a hook, a leak, a thrown import)
            if suite.get("status") == "failed" or suite.get("testExecError") or suite.get("message"):
                merge(results, f"{file}::{SUITE}", ERROR)
    return results


def parse_mocha_json(text: str | None) -> Statuses:
    """mocha's ``--reporter json`` report (``--reporter-option output=FILE``)."""
    report = _report(text, "mocha")
    results: Statuses = {}
    for key, status in (("passes", PASSED), ("pending", SKIPPED), ("failures", FAILED)):
        for case in _list(report, key, "mocha"):
            merge(results, f"{_relative(str(case.get('file', '')))}::{case.get('fullTitle', '')}", status)
    return results


def tap_group(full_title: str, title: str) -> tuple[str, str]:
    """(file, subtest path) of one tap assertion: ``"test/a.js ranges one"`` titled ``"one"`` ->
    ``("test/a.js", "ranges")``; an assertion outside any subtest is in the group ``(file)``."""
    file, _, rest = full_title.partition(" ")
    if rest == title:
        return file, FILE_LEVEL
    if title and rest.endswith(" " + title):
        return file, rest[: -len(title) - 1] or FILE_LEVEL
    return file, rest or FILE_LEVEL


def parse_tap_json(text: str | None) -> Statuses:
    """tap 16's ``-R json`` report (standard output sent to the results file), one entry per assertion,
    grouped into one test per subtest (the module docstring says how)."""
    report = _report(text, "tap")
    groups: dict[str, set[str]] = {}
    for key, status in (("passes", PASSED), ("pending", SKIPPED), ("failures", FAILED)):
        for case in _list(report, key, "tap"):
            file, group = tap_group(str(case.get("fullTitle", "")), str(case.get("title", "")))
            groups.setdefault(f"{file}::{group}", set()).add(status)
    return {test: FAILED if FAILED in seen else PASSED if PASSED in seen else SKIPPED
            for test, seen in groups.items()}


_POINT = re.compile(r"^( *)(ok|not ok)\b(?: +\d+)?(?: +-)?(?: +(.*?))?(?: +# +(SKIP|TODO)\b.*| +# +time=\S+)?\s*$",
                    re.I)
_SUBTEST = re.compile(r"^( *)# Subtest: (.*)$")
_EXPIRED = re.compile(r"^ +expired: +(.*?)\s*$")
TAP_TIMEOUT_LOOKAHEAD = 4
"""Lines after a ``not ok - timeout!`` point in which tap's YAML block names the expired file."""


def parse_tap(text: str | None) -> Statuses:
    """tap's own stream (``tap -R tap``, standard output sent to the results file): one status per subtest
    (the module docstring says how). A stream with no test point at its top level is unreadable."""
    if text is None:
        raise ValueError("the test command wrote no tap report: it died before reporting")
    results: Statuses = {}
    open_: list[tuple[int, str]] = []          # (indent, title) of the subtests opened and not yet closed
    direct: dict[str, set[str]] = {}           # file -> statuses of assertions outside any subtest
    top = 0
    lines = text.splitlines()
    for number, line in enumerate(lines):
        subtest = _SUBTEST.match(line)
        if subtest and len(subtest.group(1)) % 4 == 0:
            open_.append((len(subtest.group(1)), subtest.group(2).strip()))
            continue
        point = _POINT.match(line)
        if not point or len(point.group(1)) % 4:
            continue  # YAML diagnostics (indented by two more), comments, plans, printed lines
        indent, title = len(point.group(1)), (point.group(3) or "").strip()
        status = _tap_status(point.group(2), point.group(4))
        if status == FAILED and title == "timeout!":
            _raise_if_expired(lines[number + 1:number + 1 + TAP_TIMEOUT_LOOKAHEAD])
        while open_ and open_[-1][0] > indent:  # subtests whose points never came (a killed child)
            open_.pop()
        if open_ and open_[-1][0] == indent:  # this point closes the subtest opened at its indent
            path = [t for _, t in open_]
            open_.pop()
            if len(path) == 1:
                top += 1
                file = path[0]
                if status == FAILED and not any(t.startswith(file + "::") and s in (FAILED, ERROR)
                                                for t, s in results.items()) \
                        and FAILED not in direct.get(file, set()):
                    direct.setdefault(file, set()).add(FAILED)  # the file crashed, or failed outside any test
                continue
            merge(results, f"{path[0]}::{' '.join(path[1:])}", status)
        elif open_:  # an assertion of the subtest opened one level up
            path = [t for _, t in open_]
            if len(path) == 1:
                direct.setdefault(path[0], set()).add(status)
        elif indent == 0:
            top += 1
    if not top:
        raise ValueError("the tap report holds no test point at its top level: empty, truncated or another "
                         "reporter's")
    for file, seen in direct.items():
        merge(results, f"{file}::{FILE_LEVEL}", FAILED if FAILED in seen else PASSED if PASSED in seen else SKIPPED)
    return results


def _raise_if_expired(after: list[str]) -> None:
    """tap killed a test file at its own per-file timeout (30 s unless ``--timeout``/``TAP_TIMEOUT`` says
    otherwise; a loaded machine reaches it): the subtests it cut show as failed or absent, so the run did not
    finish and is no evidence about them."""
    for line in after:
        expired = _EXPIRED.match(line)
        if expired:
            raise ValueError(f"tap stopped {expired.group(1)} at its own per-file timeout (timeout!): the run did "
                             "not finish, so its failed and missing tests are no evidence")


def _tap_status(word: str, directive: str | None) -> str:
    if directive:
        return SKIPPED          # SKIP, or TODO (a todo's failure is expected, its pass not yet a promise)
    return PASSED if word.lower() == "ok" else FAILED
