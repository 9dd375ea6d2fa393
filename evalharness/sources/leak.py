"""Leak check: does a problem statement give away the fix? (pure; ``docs/backlog.md``)

A statement is what a reporter could write: the behaviour they saw, the public API they called,
the error they got. It must not carry what only the fix knows. ``check_statement`` returns one
``Leak`` per offending piece of text (an empty list means the statement passes); the rules:

- ``gold_code``: a run of the gold patch's added code, compared as normalised token sequences
  (whitespace ignored, quotes unified, comments and docstring lines of the patch left out). A run
  is a leak when it is at least ``MIN_TOKENS`` (5) tokens *and* ``MIN_CHARS`` (20) characters of
  token text long, is not wholly code the patch removes or keeps as context (what the base
  already holds, which a reporter may quote) and is not only words (prose in a string). So
  ``return x`` (2 tokens) or ``if n is None:`` (5 tokens, 10 characters) never trigger;
  ``raise ValueError('n must be positive')`` does. Import lines of the patch are not compared.
- ``file_path``: a path (``pkg/mod.py``, ``mod.py``, ``/home/u/src/pkg/mod.py``) naming a file the
  gold or test patch changes, or another code file of the repository (``repo_files``) below its top
  level; or a dotted name that is a hidden test module (``tests.test_mod.TestX``) or a private module
  the gold patch changes (``pkg._impl.helper``). Top-level project files (``setup.py``,
  ``pyproject.toml``, ``README.md``), paths outside the repository and public import paths
  (``pkg.errors.BadInput``, what a reporter imports) pass.
- ``location``: a line number (``line 42``, ``lines 3-5``, ``#L42``, ``L42``), or one of a repository
  file (``mod.py:42``, ``File "mod.py", line 42``; a line of the user's own script passes), or a
  function, method or class of the base code that the gold patch changes (its hunk headers and the
  definitions its changes sit in), or a phrase placing code (``in function _edge of module pkg.geo``).
- ``identifier``: a name the gold patch defines (``def``/``class``/assignment in added lines)
  that the removed and context lines never mention: a new helper, constant or attribute.

Names in ``allowed`` pass every name rule (``file_path``, ``location``, ``identifier``): the public
API the failing test calls, names the base code has that the change's description legitimately
uses. A plain lowercase word (``flatten``) counts as a name only where the statement writes it as
code (`` `flatten` ``, ``flatten(``, ``.flatten``), so prose is not mistaken for identifiers.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterable

MIN_TOKENS = 5
"""Shortest run of gold-patch tokens that counts as leaked code."""
MIN_CHARS = 20
"""...and it must also hold at least this many characters of token text (whitespace excluded)."""
KINDS = ("gold_code", "file_path", "location", "identifier")

CODE_SUFFIXES = (".py", ".pyi", ".pyx", ".pxd", ".c", ".h", ".cpp", ".cc", ".rs", ".js", ".ts", ".go",
                 ".java", ".rb")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\*\*|//|==|!=|<=|>=|->|:=|[^\sA-Za-z0-9_]")
_PATH = re.compile(r"(?<![\w.-])/?(?:[\w.-]+/)*[\w.-]+\.[A-Za-z]{1,5}(?![\w/])")
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LINE_NUMBER = re.compile(
    r"\blines?\s+\d+(?:\s*(?:-|–|to|and)\s*\d+)?\b"   # line 42, lines 3-5
    r"|(?-i:#L\d+(?:-L?\d+)?\b)"                       # #L42 (a source browser's anchor)
    r"|(?-i:\bL\d+(?:-L?\d+)?\b)",                     # L42 (not l1, a norm)
    re.IGNORECASE)
_PATH_LINE = re.compile(  # a line number of a named file: `File "p.py", line 3` or p.py:3
    r"""File\s+["']([^"'\n]+)["'],\s+line\s+\d+"""
    r"|(?<![\w.-])(/?(?:[\w.-]+/)*[\w.-]+\.(?:py|pyx|pyi|c|h|cpp|rs|js|ts|go)):\d+\b")
_NAME = r"`?([A-Za-z_]\w*(?:\.\w+)*(?:\(\))?)`?"
_PLACING = re.compile(
    rf"\b(?:in|inside|within)\s+(?:the\s+)?(?:function|method|class|module|file)\s+{_NAME}"
    rf"|{_NAME}\s+(?:function|method|class)\s+(?:in|of)\s+(?:the\s+)?(?:module|file)\s+{_NAME}",
    re.IGNORECASE)
_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_ASSIGNED = re.compile(r"^(?:\s*(?:self|cls)\.)?([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")


@dataclass(frozen=True)
class Leak:
    """One piece of a statement that gives away the fix."""

    kind: str
    """One of ``KINDS``."""
    text: str
    """The offending text, as the statement has it."""
    reason: str
    """Why it leaks, in words a pack author can act on."""
    offset: int = -1
    """Where ``text`` starts in the statement (-1: not located)."""

    def __str__(self) -> str:
        return f"{self.kind}: {self.text!r} ({self.reason})"


@dataclass
class _Patch:
    """What a unified diff says, as the rules need it."""

    paths: set[str]
    added: list[list[str]]      # blocks of consecutive added code lines
    base: list[str]             # removed and context lines (what the base holds)
    changed: set[str]           # functions and classes the hunks sit in
    defined: set[str]           # names the added lines define


def check_statement(statement: str, *, gold_patch: str, repo_files: Iterable[str] = (),
                    allowed: Iterable[str] = (), test_patch: str = "") -> list[Leak]:
    """Every leak in ``statement`` by the rules of this module, in the order they appear."""
    gold, tests = _parse(gold_patch), _parse(test_patch)
    allow = _allowed_names(allowed)
    files = {p.strip("/") for p in repo_files} | gold.paths | tests.paths
    leaks = (_gold_code(statement, gold) + _file_paths(statement, gold.paths, tests.paths, files, allow)
             + _locations(statement, gold, files, allow) + _identifiers(statement, gold, allow))
    return sorted(_dedupe(leaks), key=lambda leak: (leak.offset, leak.kind))


def added_code(patch: str) -> list[str]:
    """The added lines of a patch that the ``gold_code`` rule compares (no comments, no docstrings)."""
    return [line for block in _parse(patch).added for line in block]


def names_tests_use(test_patch: str, test_files: Iterable[str] = ()) -> set[str]:
    """Names the tests use but do not define: the public API they call, which a reporter can know.

    Read from the test patch's added and context lines (a new parametrized case adds a line that
    names no function; the test calling it is context), and from ``test_files``, the full text of
    the test files as the task's tests see them, when the caller has them. Names the tests define
    (test functions, helpers, fixtures) are left out. The usual ``allowed`` of a task.
    """
    lines = [line[1:] for line in test_patch.splitlines()
             if line[:1] in ("+", " ") and not line.startswith("+++")]
    for text in test_files:
        lines += text.splitlines()
    used = {name for line in lines for name in _WORD.findall(line)}
    defined = {name for line in lines for name in _defined_names(line)}
    return {name for name in used - defined if not keyword.iskeyword(name)}


# --- the patch -------------------------------------------------------------------------------

def _parse(patch: str) -> _Patch:
    parsed = _Patch(set(), [], [], set(), set())
    block: list[str] = []
    in_string = False
    code_file = False
    enclosing: set[str] = set()
    for line in patch.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            path = line[4:].split("\t")[0].strip()
            if path != "/dev/null":
                path = path[2:] if path[:2] in ("a/", "b/") else path
                parsed.paths.add(path)
                code_file = path.endswith(CODE_SUFFIXES)
            continue
        if line.startswith("diff --git") or line.startswith("index ") or line.startswith("\\"):
            continue
        hunk = _HUNK.match(line)
        if hunk:
            in_string = False
            block = _flush(parsed, block)
            enclosing = _defined_names(hunk.group(1))
            continue
        if not line[:1] in ("+", "-", " ") or not code_file:
            continue
        sign, text = line[0], line[1:]
        was_string = in_string
        in_string ^= (text.count('"""') + text.count("'''")) % 2 == 1
        if sign == "+":
            enclosing = _defined_names(text) or enclosing
            parsed.changed |= enclosing
            if _is_code(text, was_string or in_string):
                block.append(text)
                parsed.defined |= _defined_names(text) | _assigned_names(text)
            continue
        block = _flush(parsed, block)
        parsed.base.append(text)
        if sign == "-":
            parsed.changed |= enclosing | _defined_names(text)
        enclosing = _defined_names(text) or enclosing
    _flush(parsed, block)
    parsed.defined -= {name for text in parsed.base for name in _WORD.findall(text)}
    parsed.changed -= parsed.defined
    return parsed


def _flush(parsed: _Patch, block: list[str]) -> list[str]:
    if block:
        parsed.added.append(block)
    return []


def _is_code(text: str, in_docstring: bool) -> bool:
    stripped = text.strip()
    if not stripped or in_docstring or stripped.startswith(("#", ">>>", "...", "import ", "from ")):
        return False
    return not (stripped.startswith(('"""', "'''")) and stripped.endswith(('"""', "'''")))


def _defined_names(text: str) -> set[str]:
    match = _DEFINITION.match(text)
    return {match.group(1)} if match else set()


def _assigned_names(text: str) -> set[str]:
    match = _ASSIGNED.match(text)
    return {match.group(1)} if match and not keyword.iskeyword(match.group(1)) else set()


# --- gold_code -------------------------------------------------------------------------------

def _tokens(text: str) -> list[tuple[str, int, int]]:
    """Normalised tokens with their spans: quotes unified, whitespace dropped."""
    return [("'" if m.group() == '"' else m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _grams(tokens: list[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + MIN_TOKENS]) for i in range(len(tokens) - MIN_TOKENS + 1)}


def _gold_code(statement: str, gold: _Patch) -> list[Leak]:
    base = set().union(*(_grams([t for t, _, _ in _tokens(line)]) for line in gold.base)) if gold.base else set()
    added: set[tuple[str, ...]] = set()
    for block in gold.added:
        added |= _grams([t for t, _, _ in _tokens("\n".join(block))])
    said = _tokens(statement)
    grams = [tuple(t for t, _, _ in said[i:i + MIN_TOKENS]) for i in range(len(said) - MIN_TOKENS + 1)]
    hits = [i for i, gram in enumerate(grams) if gram in added]
    return [_code_leak(statement, said, start, end) for start, end in _runs(hits)
            if sum(len(t) for t, _, _ in said[start:end]) >= MIN_CHARS
            and any(grams[i] not in base for i in range(start, end - MIN_TOKENS + 1))
            and not all(_WORD.fullmatch(t) for t, _, _ in said[start:end])]


def _runs(starts: list[int]) -> list[tuple[int, int]]:
    """Overlapping windows of ``MIN_TOKENS`` merged into (first token, one past the last) spans."""
    runs: list[tuple[int, int]] = []
    for i in starts:
        if runs and i <= runs[-1][1]:
            runs[-1] = (runs[-1][0], i + MIN_TOKENS)
        else:
            runs.append((i, i + MIN_TOKENS))
    return runs


def _code_leak(statement: str, said: list[tuple[str, int, int]], start: int, end: int) -> Leak:
    begin, finish = said[start][1], said[end - 1][2]
    return Leak("gold_code", statement[begin:finish],
                f"{end - start} tokens of code the gold patch adds", begin)


# --- file_path -------------------------------------------------------------------------------

def _file_paths(statement: str, gold: set[str], tests: set[str], files: set[str],
                allow: set[str]) -> list[Leak]:
    leaks = []
    code = {f for f in files if "/" in f and f.endswith(CODE_SUFFIXES)}
    for match in _PATH.finditer(statement):
        leak = _path_leak(match.group(), gold, tests, code, allow)
        if leak:
            leaks.append(Leak("file_path", match.group(), leak, match.start()))
    for match in _DOTTED.finditer(statement):
        parts = match.group().split(".")
        private = any(part.startswith("_") and not part.startswith("__") for part in parts)
        if any(".".join(parts[:n]) in allow for n in range(2, len(parts) + 1)):
            continue
        for path in _module_files(match.group()):
            reason = _path_leak(path, gold if private else set(), tests, set(), allow)
            if reason:
                leaks.append(Leak("file_path", match.group(), f"module {path}: {reason}", match.start()))
                break
    return leaks


def _path_leak(said: str, gold: set[str], tests: set[str], code: set[str], allow: set[str]) -> str:
    said = said.strip("/")
    if said in allow or said.split("/")[-1] in allow:
        return ""
    if _matches(said, gold):
        return "the gold patch changes this file"
    if _matches(said, tests):
        return "a hidden test file"
    return "a code file of the repository" if _matches(said, code) else ""


def _matches(said: str, paths: Iterable[str]) -> bool:
    """``said`` names one of ``paths``: the same path, a tail of it, or it with a prefix in front."""
    return any(p == said or p.endswith("/" + said) or said.endswith("/" + p) for p in paths)


def _module_files(dotted: str) -> list[str]:
    """Files a dotted name can be a module of: ``a.b.c`` -> ``a/b/c.py``, ``a/b.py`` (not packages)."""
    parts = dotted.split(".")
    if parts[-1] in CODE_SUFFIXES_WORDS:
        return []
    return ["/".join(parts[:n]) + ".py" for n in range(len(parts), 1, -1)]


CODE_SUFFIXES_WORDS = {s.lstrip(".") for s in CODE_SUFFIXES} | {"txt", "md", "rst", "cfg", "toml", "ini"}


# --- location --------------------------------------------------------------------------------

def _locations(statement: str, gold: _Patch, files: set[str], allow: set[str]) -> list[Leak]:
    leaks, spans = [], []
    for match in _PATH_LINE.finditer(statement):
        spans.append(match.span())
        path = (match.group(1) or match.group(2)).strip("/")
        if _matches(path, files) and path not in allow:
            leaks.append(Leak("location", match.group(), "a line number of a repository file", match.start()))
    leaks += [Leak("location", m.group(), "a line number", m.start()) for m in _LINE_NUMBER.finditer(statement)
              if not any(start <= m.start() < end for start, end in spans)]
    for match in _PLACING.finditer(statement):
        names = [g for g in match.groups() if g]
        if any(_is_codeish_name(match.group(), n) and n.removesuffix("()") not in allow for n in names):
            leaks.append(Leak("location", match.group(), "places the code to change", match.start()))
    for name in sorted(gold.changed - allow):
        leaks += [Leak("location", name, "names a function or class the gold patch changes", offset)
                  for offset in _name_offsets(statement, name)]
    return leaks


def _is_codeish_name(phrase: str, name: str) -> bool:
    """A name written as code: quoted, called, dotted, with ``_``, digits or inner capitals."""
    if keyword.iskeyword(name):
        return False
    return f"`{name}`" in phrase or bool(re.search(r"[_.\d(]|[a-z][A-Z]", name))


# --- identifier ------------------------------------------------------------------------------

def _identifiers(statement: str, gold: _Patch, allow: set[str]) -> list[Leak]:
    return [Leak("identifier", name, "a name only the gold patch defines", offset)
            for name in sorted(gold.defined - allow - gold.changed) for offset in _name_offsets(statement, name)]


def _name_offsets(statement: str, name: str) -> list[int]:
    """Where ``name`` appears as a whole name; a plain lowercase word only where written as code."""
    plain = name.isalpha() and name.islower()
    offsets = []
    for match in re.finditer(rf"(?<![\w]){re.escape(name)}(?!\w)", statement):
        before, after = statement[max(0, match.start() - 1):match.start()], statement[match.end():match.end() + 1]
        if not plain or before in ("`", ".") or after in ("`", "("):
            offsets.append(match.start())
    return offsets


# --- helpers ---------------------------------------------------------------------------------

def _allowed_names(allowed: Iterable[str]) -> set[str]:
    names = set()
    for name in allowed:
        names |= {name, name.split(".")[-1], PurePosixPath(name).name}
    return names


def _dedupe(leaks: list[Leak]) -> list[Leak]:
    seen, kept = set(), []
    for leak in leaks:
        if (leak.kind, leak.offset, leak.text) not in seen:
            seen.add((leak.kind, leak.offset, leak.text))
            kept.append(leak)
    return kept
