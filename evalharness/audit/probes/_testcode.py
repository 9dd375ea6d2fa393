"""The code a task's tests run, rebuilt without Docker: test files after the test patch, library modules after
the gold patch (base text from ``ctx.base_code``, hunks applied here), and the listed tests' scopes.

Pure apart from reading the base through ``BaseCode``. A hunk that does not match the base leaves the file
to what the patch alone shows (its added lines), never a guess.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from evalharness.audit.context import BaseCode
from evalharness.types import TaskSpec

_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def split_patch(patch: str) -> dict[str, str]:
    """Per file (its ``b/`` path): that file's part of a unified diff."""
    starts = list(_FILE.finditer(patch))
    return {m.group(2): patch[m.start():(starts[i + 1].start() if i + 1 < len(starts) else len(patch))]
            for i, m in enumerate(starts)}


def apply_file_patch(old: str, diff: str) -> str | None:
    """``old`` with the hunks of one file's diff applied, or None when a hunk's context does not match."""
    lines, out, pos = old.splitlines(), [], 0
    body = diff.splitlines()
    i = 0
    while i < len(body):
        m = _HUNK.match(body[i])
        i += 1
        if not m:
            continue
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        if start < pos:
            return None
        out.extend(lines[pos:start])
        pos = start
        while i < len(body) and not body[i].startswith(("@@", "diff --git")):
            tag, text = body[i][:1], body[i][1:]
            if tag in (" ", "-"):
                if pos >= len(lines) or lines[pos] != text:
                    return None
                pos += 1
                if tag == " ":
                    out.append(text)
            elif tag == "+":
                out.append(text)
            i += 1
    out.extend(lines[pos:])
    return "\n".join(out) + "\n"


def added_lines(diff: str) -> str:
    return "\n".join(line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))


@dataclass
class CachedBase:
    """A ``BaseCode`` whose reads are kept (a probe reads one module for each call into it)."""

    base: BaseCode
    files: dict = field(default_factory=dict)

    def contains(self, text: str) -> bool:
        return self.base.contains(text)

    def read(self, path: str) -> str | None:
        if path not in self.files:
            self.files[path] = self.base.read(path)
        return self.files[path]


def cached(base: BaseCode | None) -> BaseCode | None:
    return None if base is None else CachedBase(base)


def patched(path: str, patch: str, base: BaseCode | None) -> str | None:
    """File ``path`` at base with ``patch`` applied (the patch's added lines when the base cannot be read)."""
    diff = split_patch(patch).get(path)
    old = base.read(path) if base is not None else None
    if diff is None:
        return old
    if "--- /dev/null" in diff:
        return apply_file_patch("", diff)
    if old is not None:
        new = apply_file_patch(old, diff)
        if new is not None:
            return new
    return added_lines(diff)


@dataclass
class Scope:
    """One listed test's code: its function (and class) node, the module's fixtures and helpers, its file."""

    path: str
    test: str
    node: ast.AST
    helpers: list[ast.AST]
    tree: ast.Module


def listed_scopes(task: TaskSpec, base: BaseCode | None) -> tuple[list[Scope], list[str]]:
    """The listed tests found in their files (test patch applied), and the names not found there."""
    trees = {}
    for path in task.test_files:
        try:
            trees[path] = ast.parse(patched(path, task.test_patch, base) or "")
        except SyntaxError:
            pass
    scopes, missing = [], []
    for test in (*task.FAIL_TO_PASS, *task.PASS_TO_PASS):
        if "::" in test:
            path, *parts = test.split("::")
            where = [(path, _find(trees[path], parts))] if path in trees else []
        else:  # a bare name (SymPy's, Django's style): the first test file defining it
            where = [(path, _find_anywhere(tree, test.split("[", 1)[0].split(" ", 1)[0])) for path, tree in trees.items()]
        path, node = next(((p, n) for p, n in where if n is not None), (None, None))
        if node is None:
            missing.append(test)
        else:
            scopes.append(Scope(path, test, node, _helpers(trees[path]), trees[path]))
    return scopes, missing


def _find_anywhere(tree: ast.Module, name: str) -> ast.AST | None:
    return next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == name), None)


def _find(tree: ast.Module, parts: list[str]) -> ast.AST | None:
    body, node = tree.body, None
    for part in parts:
        name = part.split("[", 1)[0]
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            return None
        body = getattr(node, "body", [])
    return node


def _helpers(tree: ast.Module) -> list[ast.AST]:
    """Module-level code other than tests: fixtures, helper functions, constants (tests of other lists are out)."""
    return [n for n in tree.body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                                         and n.name.lower().startswith("test"))]


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted origin for the module's imports (``from a.b import c as d`` gives d -> a.b.c)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def module_paths(dotted: str) -> list[str]:
    """Candidate files of a module (flat and src/ layouts; a package's __init__)."""
    rel = dotted.replace(".", "/")
    return [f"{rel}.py", f"{rel}/__init__.py", f"src/{rel}.py", f"src/{rel}/__init__.py"]
