"""Text-log parsers: pytest ``-rA``/``-v`` output, Django's test runner, SymPy's ``bin/test``.

Pure functions ``log -> {test_id: status}``; a status is one of the plain values of
``parsers.TestStatus`` (``"passed"``, ``"failed"``, ``"error"``, ``"skipped"``, ``"xfail"``),
and ``parsers`` wraps these functions into its registry. The formats were learned by reading
pytest's terminal reporter, CPython's ``unittest.TextTestResult``, SymPy's
``runtests.PyTestReporter`` and the SWE-bench harness's log parsers; the code is our own.

A test reported twice (a pass then a teardown error; a printed fake "PASSED" line next to
the real "FAILED" one) keeps its worse status (``merge``). Printed lines can still fool a
text parser; ``parsers.consistent_with_exit_code`` and the JUnit parser are the defences.
"""

from __future__ import annotations

import re

PASSED, FAILED, ERROR, SKIPPED, XFAIL = "passed", "failed", "error", "skipped", "xfail"
SEVERITY = {PASSED: 0, XFAIL: 1, SKIPPED: 2, FAILED: 3, ERROR: 4}  # merge keeps the higher

Statuses = dict[str, str]


def merge(results: Statuses, test_id: str, status: str) -> None:
    """Record ``status`` for ``test_id`` unless a worse one is already recorded."""
    old = results.get(test_id)
    if old is None or SEVERITY[status] > SEVERITY[old]:
        results[test_id] = status


# --- pytest -------------------------------------------------------------------------------

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
_WORDS = {"PASSED": PASSED, "FAILED": FAILED, "ERROR": ERROR, "SKIPPED": SKIPPED,
          "XFAIL": XFAIL, "XPASS": PASSED}  # a non-strict xpass passed (pytest exits 0)
_W = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"
_SUMMARY = re.compile(rf"^({_W}) (.+)$")
_VERBOSE = re.compile(rf"^(\S+?::.*?) ({_W})(?: \(.*\))?(?:\s+\[\s*\d+%\])?$")
_XDIST = re.compile(rf"^\[gw\d+\] \[\s*\d+%\] ({_W}) (.+)$")
_SESSION_START = re.compile(r"^=+ test session starts =+$")
_SESSION_END = re.compile(r"^=+ .* in [\d.]+ ?s(?:econds)?(?: \([\d:.]+\))? =+$")
_NODE = re.compile(r"[^\s:\[\]]+\.\w+(?:::\S.*)?")


def _balanced(text: str) -> bool:
    return text.count("[") == text.count("]")


def _node_id(rest: str) -> str | None:
    """The pytest node id at the start of ``rest`` (summary lines add `` - message``).

    Parametrize ids may hold spaces, brackets and `` - ``, so the id ends at the first
    `` - `` (or blank) outside brackets; unbalanced ids fall back to the first `` - ``.
    """
    rest = rest.strip()
    dashes = [m.start() for m in re.finditer(" - ", rest)]
    node = next((rest[:i] for i in dashes if _balanced(rest[:i])), None)
    if node is None:
        depth = 0
        for i, char in enumerate(rest):
            depth += (char == "[") - (char == "]")
            if char.isspace() and depth == 0:
                node = rest[:i]
                break
    if node is None:
        node = rest[:dashes[0]] if dashes and not _balanced(rest) else rest
    return node if _NODE.fullmatch(node) else None


def _pytest_line(line: str, results: Statuses) -> None:
    match = _SUMMARY.match(line) or _XDIST.match(line)
    if match:
        word, rest = match.groups()
        if word == "SKIPPED" and rest.startswith("["):
            return  # "SKIPPED [2] path.py:17: reason" names a location, not a test
        node = _node_id(rest)
    elif match := _VERBOSE.match(line):
        node, word = match.groups()
        node = node if _NODE.fullmatch(node) else None
    else:
        return
    if node:
        merge(results, node, _WORDS[word])


def parse_pytest_log(log: str) -> Statuses:
    """Statuses from pytest's ``-rA`` short summary and ``-v`` progress lines.

    Output of pytest sessions nested in a test's captured output (pytest's own suite runs
    pytest inside tests) is skipped: lines count only outside a second "test session
    starts" banner, closed by its "N passed in 0.1s" line. With ``-q`` the outer banner is
    not printed, and nested sessions then count as the outer one.
    """
    results: Statuses = {}
    depth = 0
    for raw in log.splitlines():
        line = _ESCAPES.sub("", raw).rstrip()
        if _SESSION_START.match(line):
            depth += 1
        elif _SESSION_END.match(line):
            depth = max(depth - 1, 0)
        elif depth <= 1:
            _pytest_line(line, results)
    return results


# --- Django -------------------------------------------------------------------------------

# "test_x (app.tests.Class)" before Python 3.11, "test_x (app.tests.Class.test_x)" after;
# a subtest adds " [message]" and/or " (param=1)", and its status counts for its test.
_DJ_ID = r"(\w+) \(([A-Za-z_]\w*(?:\.\w+)+)\)"
_DJ_TEST = re.compile(_DJ_ID + r"(?: \[.*?\])?(?: \(.*?\))?(?= \.\.\.(?: |$)|$)")
_DJ_HEADER = re.compile(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): " + _DJ_ID)
_DJ_END = re.compile(r"^(Ran \d+ tests? in |={20,}$)")


def _django_status(tail: str) -> str | None:
    tail = tail.strip()
    if tail == "ok":
        return PASSED
    if tail.startswith("skipped"):
        return SKIPPED
    return {"FAIL": FAILED, "ERROR": ERROR, "expected failure": XFAIL,
            "unexpected success": FAILED}.get(tail)


def _split_description(line: str) -> tuple[str, str]:
    """``"Docstring line ... ok"`` -> (description, tail); the status may come later."""
    cuts = [m.start() for m in re.finditer(r" \.\.\. ", line)]
    for cut in reversed(cuts):
        if _django_status(line[cut + 5:]) is not None:
            return line[:cut], line[cut + 5:]
    return line[:cuts[0]], line[cuts[0] + 5:]


def parse_django_log(log: str) -> Statuses:
    """Statuses from ``runtests.py --verbosity 2`` (unittest's verbose result lines).

    Ids are what the runner prints, ``"test_x (module.Class)"``. A test with a docstring
    prints its first line below the id (``"Docstring line ... ok"``); SWE-bench's lists
    name such tests by that line, so the status is also recorded under it (an alias).
    Several tests may share one line (cache backends' copies of a test): the alias gets the
    worst status of those that ran, and "skipped" only if all were skipped.
    Stray output between ``" ... "`` and the status (stderr of the runner) is skipped; a
    later line holding only the status closes the pending test. ``FAIL:``/``ERROR:``
    headers (which also report failed subtests) are merged in.
    """
    results: Statuses = {}
    aliases: list[tuple[str, str]] = []
    pending = waiting_doc = None
    for raw in log.splitlines():
        line = raw.strip()
        if waiting_doc and " ... " in line:
            description, tail = _split_description(line)
            aliases.append((waiting_doc, description))
            pending, waiting_doc = waiting_doc, None
        else:
            waiting_doc, tail = None, None
            header = _DJ_HEADER.match(line)
            starts = [] if header else list(_DJ_TEST.finditer(line))
            if header:
                test_id = f"{header.group(2)} ({header.group(3)})"
                merge(results, test_id, ERROR if header.group(1) == "ERROR" else FAILED)
            elif starts:
                last = starts[-1]
                pending = f"{last.group(1)} ({last.group(2)})"
                if last.end() == len(line):
                    waiting_doc, pending = pending, None
                else:
                    tail = line[last.end() + 5:]
            elif _DJ_END.match(line):
                pending = None
            elif pending:
                tail = line if _django_status(line) in (PASSED, FAILED, ERROR) else None
        status = _django_status(tail) if tail is not None else None
        if pending and status:
            merge(results, pending, status)
            pending = None
    named: dict[str, list[str]] = {}
    for test_id, description in aliases:
        if test_id in results:
            named.setdefault(description, []).append(results[test_id])
    for description, statuses in named.items():
        ran = [s for s in statuses if s != SKIPPED]  # a skipped twin says nothing of the code
        for status in ran or statuses:
            merge(results, description, status)
    return results


# --- SymPy --------------------------------------------------------------------------------

_SY_TEST = re.compile(r"^(test_\w+)(?:\s+(.*?))?$")
_SY_FILE_MARK = re.compile(r"\s*\[(?:OK|FAIL)\]$")
_SY_IMPORT_FAIL = re.compile(r"^(\S+\.py)\[\?\]\s+Failed to import")
_SY_HEADER = re.compile(r"^_*\s*\S+\.py::?(test_\w+)\s*_*$")
_SY_CHARS = {"ok": PASSED, "F": FAILED, "E": ERROR, "T": ERROR, "f": XFAIL, "X": PASSED}


def _sympy_status(rest: str) -> str | None:
    if rest in _SY_CHARS:
        return _SY_CHARS[rest]
    if len(rest) > 1 and rest[-1] in "swKT" and rest[-2] == " ":
        return SKIPPED  # "<reason> s": skipped, "Slow w", "Timeout T", "KeyboardInterrupt K"
    return None


def parse_sympy_log(log: str) -> Statuses:
    """Statuses from SymPy's ``bin/test --verbose`` (``"test_name ok"``, ``F``, ``E``, ...).

    Ids are bare function names, as the runner prints them (and SWE-bench lists them).
    The right-aligned ``[OK]``/``[FAIL]`` file mark after a file's last test is dropped.
    A name whose status follows on a later line (the test printed output) stays pending.
    The ``path.py:test_name`` headers of the failure report are merged in as failures.
    """
    results: Statuses = {}
    pending, previous = None, ""
    for raw in log.splitlines():
        line = _SY_FILE_MARK.sub("", raw.rstrip())  # result lines start in column 0
        header = _SY_HEADER.match(line) if set(previous) == {"_"} else None
        test = _SY_TEST.match(line)
        if header:
            merge(results, header.group(1), FAILED)
        elif test:
            status = _sympy_status(test.group(2) or "")
            pending = None if status else test.group(1)
            if status:
                merge(results, test.group(1), status)
        elif pending and line in _SY_CHARS:
            merge(results, pending, _SY_CHARS[line])
            pending = None
        elif broken := _SY_IMPORT_FAIL.match(line):
            merge(results, broken.group(1), ERROR)
        previous = line
    return results
