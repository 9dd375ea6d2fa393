"""Log parsers: pure functions from test-run artifacts to per-test statuses.

Every parser takes a ``TestRun`` (log text, optional JUnit XML, exit code) and returns
``{test_id: TestStatus}``. Test ids are pytest node ids (``path::Class::name[param]``) where
the source allows it. Parsers never decide resolution; ``grade`` does.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from enum import Enum
from typing import Callable


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


def _junit_node_id(case: ET.Element) -> str:
    """Rebuild a pytest node id from an xunit1 testcase (which carries a ``file`` attribute)."""
    name = case.get("name", "")
    classname = case.get("classname", "")
    file = case.get("file")
    if not file:
        return f"{classname}::{name}" if classname else name
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file.replace("/", ".")
    rest = classname[len(module) + 1:] if classname.startswith(module + ".") else ""
    parts = [file, *[p for p in rest.split(".") if p], name]
    return "::".join(parts)


def parse_junit(run: TestRun) -> ParseResult:
    """Parse pytest's JUnit XML (``-o junit_family=xunit1``). Printed log lines cannot forge it."""
    if not run.junit_xml:
        return {}
    root = ET.fromstring(run.junit_xml)
    results: ParseResult = {}
    for case in root.iter("testcase"):
        node = _junit_node_id(case)
        tags = {child.tag for child in case}
        if "failure" in tags:
            status = TestStatus.FAILED
        elif "error" in tags:
            status = TestStatus.ERROR
        elif "skipped" in tags:
            skipped = case.find("skipped")
            kind = skipped.get("type", "") if skipped is not None else ""
            status = TestStatus.XFAIL if "xfail" in kind else TestStatus.SKIPPED
        else:
            status = TestStatus.PASSED
        # a test reported twice (call failed, teardown errored) keeps its worst status
        if results.get(node) not in (TestStatus.FAILED, TestStatus.ERROR):
            results[node] = status
    return results


PARSERS: dict[str, Parser] = {
    "junit": parse_junit,
}


def parse(name: str, run: TestRun) -> ParseResult:
    try:
        parser = PARSERS[name]
    except KeyError:
        raise ValueError(f"unknown log parser {name!r}; known: {', '.join(sorted(PARSERS))}") from None
    return parser(run)
