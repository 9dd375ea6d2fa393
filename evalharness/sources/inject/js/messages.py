"""What a failing Node test reports, read from the runner's results file (pure): the statement quotes it.

Keyed by the ids ``grading/nodelogs.py`` gives (``FILE::NAME``), first failure of each test. Only what a user
running the test sees of the behaviour: the failing assertion's title and tap's ``found``/``wanted``/``diff``
(never its ``at``, ``stack`` or ``source``: they name files and lines), jest's and mocha's failure message
without its stack frames.
"""

from __future__ import annotations

import json
import re

import yaml

from evalharness.grading import nodelogs

TAP_KEYS = ("message", "found", "wanted", "compare", "pattern", "diff", "expected", "actual")
_STACK_FRAME = re.compile(r"^\s*at\s|^\s*\S+\.[cm]?[jt]sx?:\d+")
_SUBTEST = re.compile(r"^( *)# Subtest: (.*)$")
_POINT = re.compile(r"^( *)(ok|not ok)\b(?: +\d+)?(?: +-)?(?: +(.*?))?(?: +# +.*)?\s*$", re.I)


def failure_messages(log_parser: str, text: str | None) -> dict[str, str]:
    """Each failing test's message, by test id, from a results file of ``log_parser``'s format ({} when the
    format is not read here or the file is absent)."""
    if not text:
        return {}
    reader = {"tap": tap_messages, "jest_json": jest_messages, "mocha_json": mocha_messages}.get(log_parser)
    try:
        return reader(text) if reader else {}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def tap_messages(text: str) -> dict[str, str]:
    """tap's stream: a ``not ok`` assertion inside subtests, its title and its YAML diagnostics' values."""
    out: dict[str, str] = {}
    open_: list[tuple[int, str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        subtest = _SUBTEST.match(line)
        if subtest:
            open_.append((len(subtest.group(1)), subtest.group(2).strip()))
            continue
        point = _POINT.match(line)
        if not point:
            continue
        indent = len(point.group(1))
        while open_ and open_[-1][0] > indent:
            open_.pop()
        if open_ and open_[-1][0] == indent:   # the point that closes a subtest
            open_.pop()
            continue
        if point.group(2).lower() != "not ok" or len(open_) < 2:
            continue
        test = f"{open_[0][1]}::{' '.join(t for _, t in open_[1:])}"
        if test not in out:
            out[test] = "\n".join([(point.group(3) or "").strip(), *_diagnostics(lines, i + 1, indent + 2)]).strip()
    return out


def _diagnostics(lines: list[str], start: int, indent: int) -> list[str]:
    if start >= len(lines) or lines[start].strip() != "---":
        return []
    block = []
    for line in lines[start + 1:]:
        if line.strip() == "...":
            break
        block.append(line[indent:])
    try:
        data = yaml.safe_load("\n".join(block))
    except yaml.YAMLError:
        return []
    if not isinstance(data, dict):
        return []
    out = []
    for key in TAP_KEYS:
        if key in data and not isinstance(data[key], (dict, list)):
            value = _scalar(data[key]).rstrip("\n")
            out += [f"{key}: {value}"] if "\n" not in value else [f"{key}:", *value.splitlines()]
    return out


def _scalar(value: object) -> str:
    """A YAML scalar as JavaScript prints it: ``null``, ``true``, ``false`` (not Python's None, True, False)."""
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


def _without_stack(message: str) -> str:
    return "\n".join(line for line in message.splitlines() if not _STACK_FRAME.match(line)).strip()


def jest_messages(text: str) -> dict[str, str]:
    """jest's (and vitest's) JSON report: ``failureMessages`` of each failed test, the suite's message for
    ``FILE::(suite)``."""
    report = json.loads(text)
    ids = nodelogs.parse_jest_json(text)
    out: dict[str, str] = {}
    for suite in report.get("testResults", []):
        file = nodelogs._relative(suite.get("name", suite.get("testFilePath", "")))
        for case in suite.get("assertionResults", []):
            test = f"{file}::{' > '.join([*case.get('ancestorTitles', []), case.get('title', '')])}"
            if case.get("status") == "failed" and test in ids and case.get("failureMessages"):
                out.setdefault(test, _without_stack("\n".join(case["failureMessages"])))
        if f"{file}::{nodelogs.SUITE}" in ids and suite.get("message"):
            out.setdefault(f"{file}::{nodelogs.SUITE}", _without_stack(suite["message"]))
    return out


def mocha_messages(text: str) -> dict[str, str]:
    """mocha's JSON report: each failure's ``err.message`` by its ``fullTitle``."""
    report = json.loads(text)
    out: dict[str, str] = {}
    for case in report.get("failures", []):
        test = f"{nodelogs._relative(case.get('file', ''))}::{case.get('fullTitle', '')}"
        out.setdefault(test, _without_stack(str((case.get("err") or {}).get("message", ""))))
    return out
