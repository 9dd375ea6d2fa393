"""JavaScript/TypeScript mutants from Stryker's instrumenter, as injection sites (pure).

Stryker (``@stryker-mutator/instrumenter``, ``STRYKER_VERSION``) lists each mutant as a span of one file and
its replacement code; ``data/eh_stryker.mjs`` prints them as JSON, run inside the pack's environment image
(installed there at image build, ``install_step``). A site keeps the span, so applying it is a splice: every
other byte of the file stays, the defect patch has one hunk and the gold patch (its reverse) restores the file
exactly. Library files only (``library_files``): never test files, test helpers, mocks, snapshots, runner or
compiler configuration, ``node_modules``, declaration files, or built, bundled or minified code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterator

from evalharness.languages import node_surface
from evalharness.sources.inject.mutations import Site

STRYKER_VERSION = "8.7.1"
"""The pinned instrumenter: 8.x still runs on Node 18 (bookworm's); 9 and later want Node 20 or 22."""
STRYKER_DIR = "/opt/evalharness/stryker"
INSTRUMENTER = f"{STRYKER_DIR}/node_modules/@stryker-mutator/instrumenter/dist/src/index.js"
DRIVER = "/tmp/eh_stryker.mjs"
CODE_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".jsx", ".tsx")
SKIP_DIRS = frozenset({"dist", "build", "lib-cov", "coverage", "out", "docs", "doc", "examples", "example",
                       "benchmark", "benchmarks", "bench", "scripts", "tools", "types", "typings", ".github",
                       "vendor", "bower_components"}) | node_surface.TEST_DIRS | node_surface.MANAGER_DIRS
_GENERATED = re.compile(r"\.(?:min|bundle|umd|esm|cjs)\.[cm]?js$|\.d\.[cm]?ts$", re.I)
CLASSES = {
    "EqualityOperator": "flipped_comparison / wrong_boundary (< to <=, === to !==)",
    "ConditionalExpression": "negated_condition (a condition made always true or always false)",
    "LogicalOperator": "negated_condition (&& to ||, ?? to &&)",
    "BlockStatement": "dropped_branch (a block emptied)",
    "ArithmeticOperator": "off_by_one (+ to -, * to /)",
    "UpdateOperator": "off_by_one (++ to --)",
    "UnaryOperator": "negated_condition (-x to +x)",
    "BooleanLiteral": "changed_default (true to false, !x to x)",
    "StringLiteral": "changed_default (a string emptied or filled)",
    "ArrayDeclaration": "changed_default (an array emptied or filled)",
    "ObjectLiteral": "changed_default (an object emptied)",
    "ArrowFunction": "early_return (a function returning undefined)",
    "MethodExpression": "removed_call (a method swapped: trim to trimStart, some to every, ...)",
    "AssignmentOperator": "off_by_one (+= to -=)",
    "OptionalChaining": "(none: a?.b to a.b)",
    "Regex": "(none: a regular expression changed)",
}
"""Stryker's mutator names (reported as they are) and the nearest of the Python mutation classes."""


def install_step() -> str:
    """The environment's setup step that installs the pinned instrumenter outside the work tree (at image build,
    host network); the tasks' tests never load it."""
    return (f"mkdir -p {STRYKER_DIR} && npm install --prefix {STRYKER_DIR} --no-save --no-package-lock "
            f"--ignore-scripts --no-audit --no-fund @stryker-mutator/instrumenter@{STRYKER_VERSION}")


@dataclass(frozen=True)
class JsSite(Site):
    """A Stryker mutant: ``start``/``end`` are offsets in UTF-16 code units (JavaScript's string indices)."""

    start: int = 0
    end: int = 0
    replacement: str = ""

    @property
    def module(self) -> str:
        return self.path.rsplit(".", 1)[0]


def library_reason(path: str) -> str | None:
    """Why ``path`` is never mutated (None for a library file)."""
    p = PurePosixPath(path)
    if not path.endswith(CODE_SUFFIXES):
        return "not JavaScript or TypeScript"
    if _GENERATED.search(p.name):
        return "declaration, minified or bundled file"
    folder = next((d for d in p.parts[:-1] if d in SKIP_DIRS or d.startswith(".")), None)
    if folder:
        return f"under {folder}/ (tests, installed, built or tooling code)"
    if node_surface.is_test_file_name(p.name):
        return "a test file by its name"
    lower = p.name.lower()
    if lower.startswith(node_surface.RUNNER_CONFIG_PREFIXES) or ".config." in lower or lower.startswith("."):
        return "runner, compiler or tool configuration"
    return None


def library_files(files: dict[str, bytes]) -> Iterator[tuple[str, str]]:
    """The library files of a work tree, with their text (files that are not UTF-8 are left out)."""
    for path in sorted(files):
        if library_reason(path) is None:
            try:
                yield path, files[path].decode()
            except UnicodeDecodeError:
                continue


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def splice(text: str, start: int, end: int, replacement: str) -> str:
    """``text`` with UTF-16 offsets ``start:end`` replaced (exact for characters outside the BMP too)."""
    data = _utf16(text)
    if not 0 <= start <= end <= len(data) // 2:
        raise ValueError(f"span {start}:{end} lies outside the file ({len(data) // 2} UTF-16 units)")
    return (data[:2 * start] + _utf16(replacement) + data[2 * end:]).decode("utf-16-le", "surrogatepass")


def original_at(text: str, start: int, end: int) -> str:
    return _utf16(text)[2 * start:2 * end].decode("utf-16-le", "surrogatepass")


_DEFINITION = re.compile(
    r"^(\s*)(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:"
    r"function\s*\*?\s*([A-Za-z_$][\w$]*)"                                      # function name(
    r"|(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\(|[A-Za-z_$][\w$]*\s*=>)"
    r"|(?:static\s+|get\s+|set\s+|public\s+|private\s+|protected\s+|readonly\s+)*"
    r"(?!if\b|for\b|while\b|switch\b|catch\b|return\b)([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\([^;]*\)\s*(?::[^{;]+)?\{"
    r"|class\s+([A-Za-z_$][\w$]*))")


def enclosing_function(text: str, line: int) -> str:
    """The name of the function (or method, or class) a 1-based ``line`` lies in, by indentation: the nearest
    definition above it indented less (``""`` at top level). A heuristic: the site's spread and the statement's
    leak check read it; a miss only makes the leak check stricter on the file names, never looser."""
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return ""
    target = lines[line - 1]
    indent = len(target) - len(target.lstrip())
    for candidate in reversed(lines[:line]):
        match = _DEFINITION.match(candidate)
        if match and (len(match.group(1)) < indent or candidate is target and len(match.group(1)) <= indent):
            return next(g for g in match.groups()[1:] if g)
    return ""


def sites(found: list[dict], sources: dict[str, str]) -> list[JsSite]:
    """The sites of the driver's mutants whose span still holds their original text (a mutant is numbered
    among its file's mutants in Stryker's order)."""
    out: list[JsSite] = []
    ordinal: dict[str, int] = {}
    for m in found:
        path, text = m["file"], sources.get(m["file"])
        if text is None or original_at(text, m["start"], m["end"]) != m["original"] \
                or m["original"] == m["replacement"]:
            continue
        n = ordinal[path] = ordinal.get(path, -1) + 1
        out.append(JsSite(m["mutator"], path, n, m["line"], enclosing_function(text, m["line"]),
                          " ".join(m["original"].split())[:200], " ".join(m["replacement"].split())[:200],
                          start=m["start"], end=m["end"], replacement=m["replacement"]))
    return out


def apply(text: str, site: JsSite) -> str:
    """``text`` with ``site``'s mutant in place; every other byte unchanged."""
    return splice(text, site.start, site.end, site.replacement)
