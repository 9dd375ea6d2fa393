"""The quality gate of injected defects (pure): which modules are never mutated, which mutants are never tried,
which discovered mutants are rejected, and the gate results a kept task carries.

- **Test-only modules** (``test_only_modules``), decided from the file tree and the imports: test files and
  anything under a test directory; helpers named for tests (``testing.py``, ``_testutils.py``,
  ``pytest_plugin.py``); modules that import a test framework or define pytest hooks; pytest plugins named by
  ``pytest_plugins`` or a ``pytest11`` entry point; modules that only tests import and that assert; and
  modules that only such helpers import. A defect there breaks the tests, not the library.
- **Lists** (``lists_rejection``): a mutant whose discovery saw a test change status between runs (flaky), or
  more than ``MOST`` of the suite fail (it breaks the library wholesale), is no task.
- **Runs** (``runs_rejection``): a discovery run of the defect that timed out means the mutant hangs; any run
  that did not complete gives no per-test evidence.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

MOST = 0.5
"""A mutant that fails more than this share of the tests that pass with its fix breaks the suite wholesale."""
TEST_FRAMEWORKS = ("pytest", "_pytest", "hypothesis", "nose", "nose2", "unittest")
_TEST_DIR = re.compile(r"^(tests?|testing|testsuite|unittests?|test_?utils?|\w+_tests?|tests?_\w+)$")
_TEST_FILE = re.compile(r"^(test_\w*|\w+_tests?|tests?|conftest)$")
_HELPER = re.compile(r"(^|_)(testing|testutils?|tests?_?(utils?|helpers?|support|common|base|tools?|fixtures?|"
                     r"mixins?|cases?)|pytest\w*|\w*pytest)($|_)")
_ENTRY = re.compile(r"pytest11")
_ENTRY_VALUE = re.compile(r"[\w.-]+\s*=\s*[\"']?([A-Za-z_][\w.]*)")


@dataclass(frozen=True)
class Check:
    """One gate check of a kept task: its name, and what it found (a sentence a person can read)."""

    name: str
    passed: bool
    detail: str


def module_name(path: str) -> str:
    """The dotted module of a file ("src/pkg/a.py" -> "pkg.a", "pkg/__init__.py" -> "pkg")."""
    parts = path.removesuffix(".py").split("/")
    parts = parts[1:] if parts[0] == "src" and len(parts) > 1 else parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def path_reason(path: str) -> str | None:
    """Why a file is test code by its path alone, or None."""
    p = PurePosixPath(path)
    test_dir = next((d for d in p.parts[:-1] if _TEST_DIR.match(d)), None)
    if test_dir:
        return f"under the test directory {test_dir}/"
    if _TEST_FILE.match(p.stem):
        return "a test file" if p.stem != "conftest" else "a pytest conftest"
    if _named_helper(path):
        return f"named as a test helper ({p.name})"
    return None


def _named_helper(path: str) -> bool:
    return _HELPER.search(PurePosixPath(path).stem.lstrip("_")) is not None


def _tree(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source.decode())
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """(module, [names]) of every import in ``tree``, relative imports resolved against ``module``."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            found.append((base, [a.name for a in node.names]))
    return found


def content_reason(tree: ast.Module, module: str, is_package: bool) -> str | None:
    """Why a module is test code by what it does: it imports a test framework or defines pytest hooks."""
    for imported, names in _imported_names(tree, module, is_package):
        top = imported.split(".")[0]
        if top == "unittest" and (imported == "unittest.mock" or names == ["mock"]):
            continue
        if top in TEST_FRAMEWORKS:
            return f"imports the test framework {top}"
    hooks = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and n.name.startswith("pytest_")]
    return f"defines the pytest hook {hooks[0]}" if hooks else None


def _asserts(tree: ast.Module) -> bool:
    """The module checks things the way a test helper does: ``assert``, ``raise AssertionError``, ``assert_*``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.lstrip("_").startswith("assert"):
            return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id == "AssertionError":
                return True
    return False


def _plugins_named(files: dict[str, bytes], trees: dict[str, ast.Module]) -> dict[str, str]:
    """Modules named as pytest plugins: ``pytest_plugins = [...]`` in a Python file, ``pytest11`` entry points."""
    named: dict[str, str] = {}
    for path, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytest_plugins"
                                                    for t in node.targets):
                for const in ast.walk(node.value):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str):
                        named.setdefault(const.value, f"a pytest plugin named in {path}")
    for path in ("pyproject.toml", "setup.cfg", "setup.py"):
        text = files.get(path, b"").decode(errors="replace")
        for match in _ENTRY.finditer(text):
            for value in _ENTRY_VALUE.finditer(text[match.end():match.end() + 400]):
                named.setdefault(value.group(1), f"a pytest plugin (pytest11 entry point in {path})")
    return named


def test_only_modules(files: dict[str, bytes]) -> dict[str, str]:
    """Every Python file of ``files`` (a source tree) that is test code, with why: never a mutation site."""
    py = sorted(p for p in files if p.endswith(".py"))
    trees = {p: t for p in py if (t := _tree(files[p])) is not None}
    by_module = {module_name(p): p for p in py}
    reasons = {p: r for p in py if (r := path_reason(p))}
    # test code that is not a test file or under a test directory: what only it imports is test code too
    helpers = {p for p in reasons if _named_helper(p) and not reasons[p].startswith("under")}

    def mark(path: str, reason: str) -> None:
        if path not in reasons:
            reasons[path] = reason
            helpers.add(path)

    for path, tree in trees.items():
        if (reason := content_reason(tree, module_name(path), path.endswith("__init__.py"))):
            mark(path, reason)
    for name, why in _plugins_named(files, trees).items():
        if name in by_module:
            mark(by_module[name], why)
    importers = {p: who for p, who in _importers(trees, by_module).items() if who and not p.endswith("__init__.py")}
    for path, who in importers.items():
        if who <= set(reasons) and path in trees and _asserts(trees[path]):
            mark(path, f"imported only by tests ({sorted(who)[0]}) and asserts: a test helper")
    changed = True
    while changed:
        changed = False
        for path, who in importers.items():
            if path not in reasons and who <= helpers:
                mark(path, f"imported only by the test helper {sorted(who)[0]}")
                changed = True
    return dict(sorted(reasons.items()))


def _importers(trees: dict[str, ast.Module], by_module: dict[str, str]) -> dict[str, set[str]]:
    """For each module of the tree, the files that import it."""
    importers: dict[str, set[str]] = {p: set() for p in by_module.values()}
    for path, tree in trees.items():
        for imported, names in _imported_names(tree, module_name(path), path.endswith("__init__.py")):
            targets = [f"{imported}.{n}" for n in names if f"{imported}.{n}" in by_module] or [imported]
            for target in targets:
                if target in by_module and by_module[target] != path:
                    importers[by_module[target]].add(path)
    return importers


# --- mutants --------------------------------------------------------------------------------------

def lists_rejection(fail_to_pass: int, pass_to_pass: int, flaky: list[str]) -> tuple[str, str] | None:
    """(verdict, reason) when discovery's lists make no task: flaky tests, or the suite broken wholesale."""
    if flaky:
        return "flaky", f"{len(flaky)} test(s) changed status between runs: {sorted(flaky)[:3]}"
    if breaks_most(fail_to_pass, fail_to_pass + pass_to_pass):
        return "breaks_most", (f"{fail_to_pass} of {fail_to_pass + pass_to_pass} tests fail: the defect breaks "
                               f"the suite wholesale (over {MOST:.0%})")
    return None


def breaks_most(failing: int, total: int) -> bool:
    """More than ``MOST`` of the suite fails: the mutant breaks the library, it does not make a task."""
    return total > 0 and failing > MOST * total


def runs_rejection(defect: list[tuple[str, float]], fix: list[tuple[str, float]]) -> tuple[str, str] | None:
    """(verdict, reason) when discovery's runs are no evidence: ``defect``/``fix`` are (outcome, seconds) of the
    runs with the defect and with its fix. Only complete runs count. A defect run that timed out while the fix's
    did not: the mutant ``hangs``; a defect run that died before reporting: the mutant ``crashed`` the suite;
    any other run that did not complete: ``incomplete_run`` (no per-test statuses are read from it)."""
    fix_timed_out = any(outcome == "tests_timed_out" for outcome, _ in fix)
    for outcome, seconds in defect:
        if outcome == "tests_timed_out" and not fix_timed_out:
            return "hangs", f"the suite with the defect timed out after {seconds:.0f} s; with its fix it did not"
        if outcome == "test_run_error":
            return "crashed", f"the suite with the defect died before reporting its tests ({seconds:.0f} s)"
    for side, runs in (("defect", defect), ("fix", fix)):
        for outcome, seconds in runs:
            if outcome in _INCOMPLETE:
                return "incomplete_run", (f"a run with the {side} ended {outcome} after {seconds:.0f} s: "
                                          "no per-test evidence")
    return None


_INCOMPLETE = ("tests_timed_out", "test_run_error", "sandbox_error", "harness_error", "tampered")
