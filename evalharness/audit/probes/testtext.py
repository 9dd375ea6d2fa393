"""What a task's tests require, read from the added lines of its test patch (pure).

The text probes (``statement.py``) ask of each thing a test requires whether the statement says it
and whether the code at base already has it. This module finds those things:

- ``Use``: a name an added test line uses (``new_func(``, ``.attr``, ``kw=`` in a call, a name
  imported from the library), outside strings and comments, that the added lines do not define
  themselves (``def``/``class`` names and parameters, assignment, ``for``/``as``/``lambda`` targets)
  and that is not a keyword, a builtin or ``self``/``cls``;
- ``Literal``: a string constant of an added test line that sits in an assertion (a line with
  ``assert``, an ``assert*``/``raises``/``warns``/``fnmatch_lines`` call, a ``match=`` argument, or
  ``==``/``!=``), or is bound by a ``NAME = "..."`` line to a name a later assertion uses, with at
  least ``MIN_LITERAL`` characters and a letter: an exact value the test demands.

Each carries where it occurs (file, line number in the patched file, the test function holding it)
and whether that function is one of the task's FAIL_TO_PASS tests. Lines are tokenized with
Python's ``tokenize`` after their indentation is dropped, so hunks that start deep inside a
function still tokenize; a block that does not tokenize is read again line by line from where it broke.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
import warnings
from dataclasses import dataclass, field

MIN_LITERAL = 4
"""Shortest asserted string (characters of its value, stripped) that counts as an exact requirement."""
_IGNORED = set(dir(builtins)) | {"self", "cls", "pytest", "mark", "parametrize", "fixture", "raises", "warns",
                                 "unittest", "mock", "patch", "TestCase", "skipif", "xfail", "approx"}
_ASSERTING = re.compile(r"\bassert\w*\b|\b(?:raises|warns|fnmatch_lines|re_match_lines|match)\s*[(=]|[!=]=")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@ ?(.*)$")
_LEAD = 6
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")


@dataclass(frozen=True)
class Where:
    path: str
    line: int
    test: str
    """The test function the line sits in ('' at module level)."""
    fail_to_pass: bool


@dataclass(frozen=True)
class Use:
    name: str
    kind: str
    """``attribute`` (after a dot), ``keyword`` (a keyword argument), ``import`` or ``name``."""
    where: Where


@dataclass(frozen=True)
class Literal:
    value: str
    source: str
    """The literal as the test writes it."""
    where: Where


@dataclass
class TestText:
    uses: list[Use]
    literals: list[Literal]
    files: list[str]
    inputs: list[str] = field(default_factory=list)
    """The strings of added lines that assert nothing: data the tests themselves supply."""

    def supplied(self, value: str) -> bool:
        """The tests hand ``value`` in themselves (it sits in one of their non-asserted strings)."""
        value = value.strip()
        return any(value in text for text in self.inputs)


def read_tests(test_patch: str, fail_to_pass: list[str]) -> TestText:
    """Every requirement the added lines of ``test_patch`` state, in patch order."""
    f2p = {_test_name(t) for t in fail_to_pass}
    text = TestText([], [], [])
    defined: set[str] = set()
    constants: dict[str, list[Literal]] = {}  # NAME = "string" lines, asserted once an assertion uses NAME
    for path, block, lead in _added_blocks(test_patch):
        if path not in text.files:
            text.files.append(path)
        open_brackets = _open_assertion(lead)
        for tokens, wheres in _logical_lines(path, block, f2p):
            inside = open_brackets > 0
            open_brackets += sum((t.string in "([{") - (t.string in ")]}") for t in tokens if t.type == tokenize.OP)
            defined |= _defined(tokens)
            text.uses += [Use(name, kind, wheres[i]) for i, name, kind in _uses(tokens)]
            if inside or _asserts(tokens):
                text.literals += _literals(tokens, wheres)
                text.literals += [Literal(lit.value, lit.source, where) for t, where in zip(tokens, wheres)
                                  if t.type == tokenize.NAME for lit in constants.pop(t.string, [])]
            elif _constant(tokens):
                constants[tokens[0].string] = _literals(tokens, wheres)
            else:
                text.inputs += _strings(tokens)
    text.uses = [u for u in text.uses if u.name not in defined]
    text.inputs += [lit.value for lits in constants.values() for lit in lits]  # never asserted: data
    return text


def _constant(tokens: list[tokenize.TokenInfo]) -> bool:
    """``NAME = "string"``: a value the tests may assert through the name."""
    return (len(tokens) == 3 and tokens[0].type == tokenize.NAME and tokens[1].string == "="
            and tokens[2].type == tokenize.STRING)


def defined_names(patch: str) -> set[str]:
    """Names the added lines of ``patch`` bind (def/class and their parameters, assignment, for/as targets)."""
    names: set[str] = set()
    for path, block, _ in _added_blocks(patch):
        if path.endswith((".py", ".pyi", ".pyx")):
            for tokens, _ in _logical_lines(path, block, set()):
                names |= _defined(tokens)
    return names


def _test_name(test_id: str) -> str:
    """``path::Class::test_x[1]``, ``test_x (mod.Class)``, ``test_x`` -> ``test_x``."""
    name = test_id.split("::")[-1].split(" (")[0]
    return name.split("[")[0].strip()


def _added_blocks(patch: str):
    """(path, [(new line number, text, enclosing test)], lead) per run of consecutive added lines; ``lead``:
    the hunk's kept lines just before the run (up to ``_LEAD``), where an assertion may open."""
    path, number, test, block, kept, lead = "", 0, "", [], [], ""
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[4:].split("\t")[0].strip().removeprefix("b/")
            continue
        if line.startswith(("--- ", "diff --git", "index ", "\\")):
            continue
        hunk = _HUNK.match(line)
        if hunk:
            if block:
                yield path, block, lead
            block, kept, number = [], [], int(hunk.group(1))
            test = _enclosing(hunk.group(2), "")
            continue
        if line[:1] == "-":
            continue
        text = line[1:]
        test = _enclosing(text, test)
        if line[:1] == "+":
            lead = lead if block else "\n".join(kept[-_LEAD:])
            block.append((number, text, test))
        else:
            kept.append(text)
            if block:
                yield path, block, lead
                block = []
        number += 1
    if block:
        yield path, block, lead


def _open_assertion(lead: str) -> int:
    """How many brackets of an assertion the kept lines before a run leave open (``fnmatch_lines([``: 2)."""
    plain = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"", "''", lead)
    opened = sum(plain.count(c) for c in "([{") - sum(plain.count(c) for c in ")]}")
    return opened if opened > 0 and _ASSERTING.search(plain) else 0


def _enclosing(text: str, current: str) -> str:
    match = _DEF.match(text)
    if match:
        return match.group(1)
    if text[:1] not in ("", " ", "\t", "@", ")", "]", "#") and text.strip():
        return ""  # back at module level
    return current


def _logical_lines(path: str, block: list[tuple[int, str, str]], f2p: set[str]):
    """(tokens, a Where per token) per logical line; a block that breaks tokenizing resumes after the break."""
    start = 0
    while start < len(block):
        lines = [text.lstrip() + "\n" for _, text, _ in block[start:]]
        logical: list[tokenize.TokenInfo] = []
        stopped = None
        try:
            for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
                if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                    yield from _emit(logical, path, block, start, f2p)
                    logical = []
                elif tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                    logical.append(tok)
        except (tokenize.TokenError, IndentationError, SyntaxError) as broke:
            stopped = _broken_line(broke, len(lines))
            yield from _emit([t for t in logical if t.start[0] - 1 < stopped], path, block, start, f2p)
        start += (stopped + 1) if stopped is not None else len(lines)


def _emit(tokens, path, block, start, f2p):
    if tokens:
        wheres = []
        for tok in tokens:
            number, _, test = block[start + tok.start[0] - 1]
            wheres.append(Where(path, number, test, test in f2p))
        yield tokens, wheres


def _broken_line(error: Exception, count: int) -> int:
    line = getattr(error, "lineno", None) or (error.args[1][0] if len(error.args) > 1 else count)
    return max(0, min(count - 1, int(line) - 1))


def _defined(tokens: list[tokenize.TokenInfo]) -> set[str]:
    """Names a line binds: def/class and their parameters, assignment, for/as/lambda targets."""
    words = [t.string for t in tokens]
    names: set[str] = set()
    if words[:1] in (["def"], ["class"], ["async"]):
        names |= {t.string for t in tokens if t.type == tokenize.NAME and not keyword.iskeyword(t.string)}
    for i, word in enumerate(words):
        if word in ("for", "as", "lambda", "global", "nonlocal"):
            names |= {w for w in _names_until(words[i + 1:], ("in", ":", ")", "=", "\n"))}
    depth, targets = 0, []
    for tok in tokens:
        depth += tok.string in "([{" and tok.type == tokenize.OP
        depth -= tok.string in ")]}" and tok.type == tokenize.OP
        if depth == 0 and tok.type == tokenize.OP and tok.string in ("=", ":=", "+=", "-=", "|=", "*="):
            names |= {w for w in targets if w.isidentifier() and not keyword.iskeyword(w)}
            break
        targets.append(tok.string)
    return names


def _names_until(words: list[str], stops: tuple[str, ...]) -> list[str]:
    out = []
    for word in words:
        if word in stops:
            break
        if word.isidentifier() and not keyword.iskeyword(word):
            out.append(word)
    return out


def _uses(tokens: list[tokenize.TokenInfo]) -> list[tuple[int, str, str]]:
    words = [t.string for t in tokens]
    if words[:1] in (["def"], ["class"], ["async"]):
        return []
    importing = words[:1] in (["from"], ["import"])
    out, depth = [], 0
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.OP:
            depth += tok.string in "([{"
            depth -= tok.string in ")]}"
            continue
        if tok.type != tokenize.NAME or keyword.iskeyword(tok.string) or tok.string in _IGNORED:
            continue
        before = words[i - 1] if i else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if importing:
            out.append((i, tok.string, "import"))
        elif before == ".":
            out.append((i, tok.string, "attribute"))
        elif after == "=" and depth > 0:
            out.append((i, tok.string, "keyword"))
        else:
            out.append((i, tok.string, "name"))
    return out


def _value(source: str):
    """The value of a string token, or None (bytes, f-strings and broken literals have none here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # '\\e' in a test's regex: an invalid escape, still a string
        try:
            value = ast.literal_eval(source)
        except (ValueError, SyntaxError):
            return None
    return value if isinstance(value, str) else None


def _strings(tokens: list[tokenize.TokenInfo]) -> list[str]:
    values = [_value(tok.string) for tok in tokens if tok.type == tokenize.STRING]
    return [v for v in values if v and v.strip()]


def _asserts(tokens: list[tokenize.TokenInfo]) -> bool:
    return bool(_ASSERTING.search(" ".join(t.string for t in tokens if t.type != tokenize.STRING)))


def _literals(tokens: list[tokenize.TokenInfo], wheres: list[Where]) -> list[Literal]:
    """The strings of an asserting logical line (an assertion anywhere in it, or one the lines before
    it left open, makes all its strings asserted), long enough and with a letter."""
    found = []
    for tok, where in zip(tokens, wheres):
        prefix = tok.string[:tok.string.find(tok.string[-1])].lower() if tok.type == tokenize.STRING else ""
        if tok.type != tokenize.STRING or "b" in prefix or "f" in prefix:
            continue
        value = _value(tok.string)
        if value is not None and len(value.strip()) >= MIN_LITERAL and re.search(r"[A-Za-z]", value):
            found.append(Literal(value, tok.string, where))
    return found
