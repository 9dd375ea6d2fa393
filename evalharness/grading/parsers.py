"""Log parsers: pure functions from test-run artifacts to per-test statuses.

Every parser takes a ``TestRun`` (log text, optional JUnit XML, exit code) and returns
``{test_id: TestStatus}``. Test ids are pytest node ids (``path::Class::name[param]``) where
the source allows it. Parsers never decide resolution; ``grade`` does. The text parsers
live in ``textlogs``, the Node runners' report parsers in ``nodelogs`` (they read the results
file the test command wrote at ``{junit_xml}``, carried in ``TestRun.junit_xml``); this module holds the registry, the JUnit parser, the matching of
SWE-bench's test-id lists (``match_test_ids``) and the exit-code cross-check.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Callable

from evalharness.grading import nodelogs, textlogs


class TestStatus(str, Enum):
    __test__ = False  # not a pytest test class

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    XFAIL = "xfail"


@dataclass(frozen=True)
class TestRun:
    """What one run of the test command left behind."""

    __test__ = False

    log: str
    exit_code: int
    junit_xml: str | None = None


ParseResult = dict[str, TestStatus]
Parser = Callable[[TestRun], ParseResult]


# --- JUnit XML (pytest xunit1) ------------------------------------------------------------

def _dotted(path: str) -> str:
    """pytest's ``mangle_test_address`` for the file part of a node id: ``a/b.py`` -> ``a.b``."""
    return re.sub(r"\.py$", "", path.replace("/", "."))


def _module_length(parts: list[str], file: str | None, modules: dict[str, str]) -> int:
    """How many leading parts of a testcase's ``classname`` name its module."""
    dotted = ".".join(parts)
    if file and (dotted + ".").startswith(_dotted(file) + "."):
        return _dotted(file).count(".") + 1
    known = [m for m in modules if (dotted + ".").startswith(m + ".")]
    if known:
        return max(known, key=len).count(".") + 1
    # The file is not the module (a test inherited from a base class in another file) and
    # no sibling revealed it: the module ends at the last part named like a test module.
    test_like = [i for i, p in enumerate(parts) if p.startswith("test") or p.endswith("_test")]
    if test_like:
        return test_like[-1] + 1
    return next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts))


def _junit_node_id(case: ET.Element, modules: dict[str, str]) -> str:
    """Rebuild a pytest node id from an xunit1 testcase (``classname``, ``name``, ``file``)."""
    name, classname, file = case.get("name", ""), case.get("classname", ""), case.get("file")
    if not classname:  # a collection error: name is the dotted module, file its path
        return file or name
    parts = classname.split(".")
    size = _module_length(parts, file, modules)
    module = ".".join(parts[:size])
    if file and _dotted(file) == module:
        path = file
    else:
        path = modules.get(module) or "/".join(parts[:size]) + ".py"
    return "::".join([path, *parts[size:], name])


def _junit_status(case: ET.Element) -> TestStatus:
    statuses = [TestStatus.PASSED]
    for child in case:
        if child.tag == "failure":
            statuses.append(TestStatus.FAILED)
        elif child.tag == "error":
            statuses.append(TestStatus.ERROR)
        elif child.tag == "skipped":
            xfail = "xfail" in child.get("type", "")
            statuses.append(TestStatus.XFAIL if xfail else TestStatus.SKIPPED)
    return max(statuses, key=lambda s: textlogs.SEVERITY[s.value])


def _junit_root(xml: str) -> ET.Element:
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise ValueError(
            f"JUnit XML is not well-formed ({e}); the file is empty, truncated or not "
            "pytest's --junitxml output") from e
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"JUnit XML root is <{root.tag}>, expected <testsuites> or <testsuite>")
    return root


def parse_junit(run: TestRun) -> ParseResult:
    """Parse pytest's JUnit XML (``-o junit_family=xunit1``). Printed log lines cannot forge it.

    ``junit_xml=None`` means no file was written (e.g. the run was killed) and gives ``{}``;
    an empty or malformed file raises ``ValueError``. A node reported twice (the call
    failed and the teardown errored) keeps its worse status.
    """
    if run.junit_xml is None:
        return {}
    cases = list(_junit_root(run.junit_xml).iter("testcase"))
    modules = {_dotted(c.get("file", "")): c.get("file", "") for c in cases
               if c.get("file") and (c.get("classname", "") + ".").startswith(
                   _dotted(c.get("file", "")) + ".")}
    results: dict[str, str] = {}
    for case in cases:
        textlogs.merge(results, _junit_node_id(case, modules), _junit_status(case).value)
    return {test: TestStatus(status) for test, status in results.items()}


# --- registry -----------------------------------------------------------------------------

def _text(parse_log: Callable[[str], dict[str, str]]) -> Parser:
    def parser(run: TestRun) -> ParseResult:
        return {test: TestStatus(status) for test, status in parse_log(run.log).items()}

    parser.__name__ = parse_log.__name__
    parser.__doc__ = parse_log.__doc__
    return parser


def _report_file(parse_report: Callable[[str | None], dict[str, str]]) -> Parser:
    """A parser of the results file the test command wrote at ``{junit_xml}`` (a runner's JSON report)."""
    def parser(run: TestRun) -> ParseResult:
        return {test: TestStatus(status) for test, status in parse_report(run.junit_xml).items()}

    parser.__name__ = parse_report.__name__
    parser.__doc__ = parse_report.__doc__
    return parser


parse_pytest = _text(textlogs.parse_pytest_log)
parse_django = _text(textlogs.parse_django_log)
parse_sympy = _text(textlogs.parse_sympy_log)

PARSERS: dict[str, Parser] = {
    "junit": parse_junit,
    "pytest": parse_pytest,
    "django": parse_django,
    "sympy": parse_sympy,
    # Node runners' JSON reports, read from the file written at {junit_xml} (docs/languages.md)
    "jest_json": _report_file(nodelogs.parse_jest_json),
    "mocha_json": _report_file(nodelogs.parse_mocha_json),
    "tap_json": _report_file(nodelogs.parse_tap_json),
    "tap": _report_file(nodelogs.parse_tap),
}

# The repositories of SWE-bench (Lite, Verified, full) and the runner their logs come from.
_REPO_PARSER = {
    "django/django": "django",
    "sympy/sympy": "sympy",
    **dict.fromkeys([
        "astropy/astropy", "marshmallow-code/marshmallow", "matplotlib/matplotlib",
        "mwaskom/seaborn", "pallets/flask", "psf/requests", "pvlib/pvlib-python",
        "pydata/xarray", "pydicom/pydicom", "pylint-dev/astroid", "pylint-dev/pylint",
        "pytest-dev/pytest", "pyvista/pyvista", "scikit-learn/scikit-learn",
        "sphinx-doc/sphinx", "sqlfluff/sqlfluff"], "pytest"),
}


def parse(name: str, run: TestRun) -> ParseResult:
    try:
        parser = PARSERS[name]
    except KeyError:
        raise ValueError(f"unknown log parser {name!r}; known: {', '.join(sorted(PARSERS))}") from None
    return parser(run)


def parser_for_repo(repo: str) -> str:
    """The parser name for a SWE-bench repository (``"django/django"`` -> ``"django"``)."""
    try:
        return _REPO_PARSER[repo.strip().lower()]
    except KeyError:
        raise ValueError(
            f"no known log parser for repository {repo!r}; set log_parser in the task pack "
            f"(one of {', '.join(sorted(PARSERS))})") from None


# --- matching a benchmark's test-id lists -------------------------------------------------

def _swebench_forms(test_id: str) -> set[str]:
    """The spellings SWE-bench's lists use for ``test_id``.

    Its pytest parser keeps the first blank-separated word of a node id (``f.py::t[a b]``
    -> ``f.py::t[a``; only where that word opens a parameter's bracket), and for pylint, requests and pydicom it shortens an absolute-path
    parameter to its last part (``t[/tmp/x/m.py]`` -> ``t[/m.py]``).
    """
    first = test_id.split()[0] if test_id.strip() else test_id
    # only a blank inside a parameter's brackets: a Node id's title has blanks of its own, and its first
    # word would match a sibling test ("f.js::add" for "f.js::add nested group")
    forms = {test_id, first} if "::" in test_id and "[" in first else {test_id}
    for form in list(forms):
        main, bracket, option = form.partition("[")
        if bracket and form.endswith("]"):
            option = option[:-1]
            if option.startswith("/") and not option.startswith("//") and "*" not in option:
                forms.add(f"{main}[/{option.rsplit('/', 1)[-1]}]")
    return forms


def match_test_ids(results: ParseResult, test_ids: Iterable[str]) -> dict[str, TestStatus | None]:
    """The status of each id of a benchmark list (FAIL_TO_PASS, ...), ``None`` if absent.

    Exact ids first; then SWE-bench's spellings of the parsed ids (``_swebench_forms``);
    then, for a Django id glued to migration output (``"Applying x...test_y (m.C)"``), the
    part after the last ``...``. Several parsed ids sharing one spelling give the worst.
    """
    spelled: dict[str, str] = {}
    for test, status in results.items():
        for form in _swebench_forms(test):
            textlogs.merge(spelled, form, status.value)
    matched: dict[str, TestStatus | None] = {}
    for test_id in test_ids:
        candidates = [test_id, test_id.rsplit("...", 1)[-1]]
        status = next((results.get(c) or spelled.get(c) for c in candidates
                       if c in results or c in spelled), None)
        matched[test_id] = TestStatus(status) if status else None
    return matched


# --- forgery resistance -------------------------------------------------------------------

def consistent_with_exit_code(results: ParseResult, exit_code: int) -> tuple[bool, str]:
    """Do the parsed statuses agree with the test command's exit code?

    pytest, Django's runtests.py and SymPy's bin/test exit non-zero exactly when a test
    failed or errored (or nothing ran). A non-zero exit with no failed/errored test parsed
    means the log does not show the failure: code under test may have printed fake
    "PASSED" lines, or the run died before its summary. Exit 0 with failures parsed, or
    with nothing parsed, means the parser read lines that were not the runner's verdict
    (or is the wrong parser for this log).
    """
    bad = sorted(t for t, s in results.items() if s in (TestStatus.FAILED, TestStatus.ERROR))
    if exit_code != 0 and not bad:
        return False, (f"exit code {exit_code} but none of the {len(results)} parsed tests "
                       "failed or errored: printed results may be forged, or the run died "
                       "before reporting")
    if exit_code == 0 and bad:
        return False, (f"exit code 0 but {len(bad)} parsed tests failed or errored "
                       f"(first: {bad[0]!r}): the log holds results the runner did not count")
    if exit_code == 0 and not results:
        return False, "exit code 0 but no test results were parsed: wrong log_parser for this log?"
    return True, f"exit code {exit_code} agrees with {len(bad)} failed/errored of {len(results)} tests"


def check_names(names: Iterable[str], where: str = "task pack") -> None:
    """Raise TaskPackError naming every parser in ``names`` that does not exist: a pack is plain data and
    names parsers; the grader, which owns them, checks the names (``Pack.log_parsers()``)."""
    from evalharness.errors import TaskPackError

    unknown = sorted(set(names) - set(PARSERS))
    if unknown:
        raise TaskPackError(f"{where} is invalid",
                            f"log_parser: unknown log parser {', '.join(map(repr, unknown))}; "
                            f"known: {', '.join(sorted(PARSERS))}")
