"""Problem statements of injected defects, written from the failing behaviour (pure).

A statement names the failing tests (without their file) and quotes what the first one reports, as a
user running the suite would. It never names the mutated location: no file path, no line number, and
not the mutated function's name unless the failing test itself calls it (``public_calls``). Every
piece (a test name, a line of a failure message) is checked on its own and left out when it leaks,
by two checks: ``location_leaks`` (strict, ours) and the shared ``sources.leak.check_statement``.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Iterable

from evalharness.sources.leak import check_statement

MAX_TESTS = 5
MAX_LINES = 12
MAX_LINE_CHARS = 160
CODE_SUFFIXES = (".py", ".pyi", ".pyx", ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".jsx", ".tsx")
"""The library's source files (Python, JavaScript, TypeScript): a statement names none of the repository's."""
_PATHLIKE = re.compile(r"[\w.\-/\\]*\w\.(?:py|pyc|pyi|pyx|[cm]?[jt]sx?)\b")
_JS_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_LINE = re.compile(r"\blines?\s*\d+|:\d+(?::\d+)?\b|#L\d+", re.IGNORECASE)
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{4,}|(?<=\bat )0x[0-9a-fA-F]+")
_CUT_ADDRESS = re.compile(r"(?<=\.\.\.)(?=[0-9a-fA-F]*[0-9])[0-9a-fA-F]{4,}(?=>)")
"""The tail of an address pytest's saferepr cut in the middle: ``<mod.Foo ...7f4a59861990>`` (no ``0x`` left)."""
_TEMP_PATH = re.compile(r"(?:/private)?(?:/var/folders/[^\s'\"]+?/T|/tmp)/(?!\.\.\.)[^\s'\"(),\]>:]+")
_VOLATILE_CALL = re.compile(r"\bwhere (-?\d+) = (?:<built-in function |<function |[\w.]*\.)?"
                            r"(id|hash|getpid|getppid|get_ident|get_native_id|time|time_ns|monotonic|perf_counter)\b")
_LABELLED = re.compile(r"\b(pid|ppid|thread|ident|started(?: daemon)?)([ =:]+)\d{2,}\b", re.IGNORECASE)
_PARSE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Failure:
    """One failing test as the pre-screen saw it."""

    test: str
    """Its node id (``tests/test_a.py::TestX::test_y``)."""
    message: str
    """What the test reported (JUnit's failure message: the assertion, or the exception)."""


@dataclass(frozen=True)
class Location:
    """What a statement must not name: the mutated file and function, and the repository's files."""

    path: str
    function: str
    """The innermost name of the mutated function ("" at module level)."""
    repo_files: tuple[str, ...] = ()


def display_name(test: str) -> str:
    """A node id without its file: ``tests/test_a.py::TestX::test_y[1]`` -> ``TestX.test_y[1]``."""
    return ".".join(test.split("::")[1:]) or test


def public_calls(test: str, files: dict[str, bytes]) -> set[str]:
    """Names the test function's own code calls or refers to (``f(...)``, ``obj.f(...)``, a default
    ``key=mod.f`` it then calls): what a reporter running it can name."""
    path, *names = test.split("::")
    if path.endswith(CODE_SUFFIXES[3:]):  # JavaScript/TypeScript: every name the test file uses (no per-test scope)
        try:
            return set(_JS_NAME.findall(files[path].decode()))
        except (KeyError, UnicodeDecodeError):
            return set()
    try:
        with _PARSE_LOCK:  # CPython 3.11's ast.parse is not safe in threads (SystemError: recursion depth mismatch)
            tree = ast.parse(files[path].decode())
    except (KeyError, SyntaxError, UnicodeDecodeError):
        return set()
    names = [re.sub(r"\[.*$", "", n) for n in names]
    scope: ast.AST = tree
    for name in names:
        found = next((n for n in ast.walk(scope) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                      ast.ClassDef)) and n.name == name), None)
        if found is None:
            return set()
        scope = found
    calls = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Name):
            calls.add(node.id)
        elif isinstance(node, ast.Attribute):
            calls.add(node.attr)
    return calls


def location_leaks(text: str, where: Location, allowed: Iterable[str] = ()) -> list[str]:
    """What in ``text`` names the mutated location: a file path, a line number, the function's name (unless
    ``allowed``, the test's own calls, holds it). Strict by design: any ``*.py`` path and any word match."""
    leaks = [m.group() for m in _PATHLIKE.finditer(text)]
    leaks += [m.group() for m in _LINE.finditer(text)]
    leaks += [p for p in (where.path, *where.repo_files) if "/" in p and p in text]
    name = where.function
    if name and name not in set(allowed) and names(text, name):
        leaks.append(name)
    return leaks


def names(text: str, function: str) -> bool:
    """``text`` names ``function``: its name without leading underscores, between non-alphanumeric characters
    (so ``test__bump_total`` and ``bump()`` both name ``_bump``; ``forget`` does not name ``get``). A special
    method is named only in full (``__call__``, not the word "call")."""
    dunder = function.startswith("__") and function.endswith("__") and len(function) > 4
    core = function if dunder else (function.lstrip("_") or function)
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(core)}(?![A-Za-z0-9])", text) is not None


def mask_run_values(text: str) -> str:
    """``text`` with what differs from run to run masked: memory addresses (``0x...``, also the tail pytest
    leaves of one it cut short), temporary paths (``/tmp/...``), and process ids, object ids, hashes and clock
    readings that pytest's assertion rewriting shows (``where 139957308096208 = id(...)``)."""
    for value, name in {(m.group(1), m.group(2)) for m in _VOLATILE_CALL.finditer(text)}:
        text = re.sub(rf"(?<![\w.]){re.escape(value)}(?![\w.])", f"<{name}>", text)
    text = _LABELLED.sub(lambda m: f"{m.group(1)}{m.group(2)}<{m.group(1).split()[0].lower()}>", text)
    text = _ADDRESS.sub("0x...", text)
    text = _CUT_ADDRESS.sub("", text)
    return _TEMP_PATH.sub(lambda m: "/tmp/...", text)


def run_values(text: str) -> list[str]:
    """What in ``text`` still differs from run to run (``mask_run_values`` leaves none)."""
    patterns = (_ADDRESS, _CUT_ADDRESS, _TEMP_PATH, _VOLATILE_CALL)
    return [m.group() for pattern in patterns for m in pattern.finditer(text)]


VARIES = "<varies>"
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def mask_differences(first: str, second: str) -> str:
    """``first`` with what differs in ``second`` (the same test's message from another run) masked as
    ``<varies>``: the run-specific values no pattern knows, e.g. a process id a library function returns."""
    a, b = _TOKEN.findall(first), _TOKEN.findall(second)
    out: list[str] = []
    for op, i1, i2, _, _ in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out += a[i1:i2]
        elif not out or out[-1] != VARIES:
            out.append(VARIES)
    return "".join(out)


def stable_messages(first: dict[str, str], second: dict[str, str]) -> dict[str, str]:
    """Each test's message of ``first`` with run-specific values masked: by pattern (``mask_run_values``), and
    where ``second``, another run of the same tests, says something else (``mask_differences``)."""
    return {t: mask_differences(mask_run_values(m), mask_run_values(second.get(t, m))) for t, m in first.items()}


def _clean(message: str) -> list[str]:
    lines = [line.rstrip() for line in mask_run_values(message.strip()).splitlines()]
    lines = [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " ..." for line in lines]
    return lines[:MAX_LINES] + (["..."] if len(lines) > MAX_LINES else [])


def write_statement(failures: list[Failure], *, library: str, where: Location, gold_patch: str,
                    files: dict[str, bytes]) -> str | None:
    """The statement for a defect whose failing tests are ``failures`` (sorted by test id), or None when
    nothing can be said without naming the mutated location."""
    allowed = set().union(*(public_calls(f.test, files) for f in failures)) if failures else set()

    def safe(piece: str) -> bool:
        return not location_leaks(piece, where, allowed) and not check_statement(
            piece, gold_patch=gold_patch, repo_files=where.repo_files, allowed=allowed)

    names = [display_name(f.test) for f in failures]
    shown = [n for n in names if safe(n)]
    quoted = next(((f, [ln for ln in _clean(f.message) if safe(ln)]) for f in failures
                   if safe(display_name(f.test)) and any(safe(ln) for ln in _clean(f.message))), None)
    if not shown or quoted is None:
        return None
    first, lines = quoted
    count = len(failures)
    listed = "\n".join(f"- `{n}`" for n in shown[:MAX_TESTS])
    more = count - min(len(shown), MAX_TESTS)
    text = (f"`{display_name(first.test)}` fails: {lines[0][:100]}\n\n"
            f"Running the test suite of {library}, {count} test{'s' if count > 1 else ''} fail"
            f"{'' if count > 1 else 's'} and every other test passes:\n\n{listed}\n"
            + (f"- and {more} more\n" if more > 0 else "")
            + f"\n`{display_name(first.test)}` reports:\n\n```\n" + "\n".join(lines) + "\n```\n\n"
            "The tests describe the intended behaviour. Fix the library so that they pass again without "
            "breaking the rest of the suite.\n")
    return text if safe(text) else None
