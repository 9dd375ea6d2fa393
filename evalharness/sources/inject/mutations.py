"""Mutation classes: procedural, formatting-preserving defects of library code (libcst).

Each class is a rule that lists, for one node of a module's concrete syntax tree, the nodes that
could replace it. A module's sites of one class are numbered in traversal order, so a site is
(class, file, ordinal) and re-applying it gives the same bytes. libcst keeps every byte it is not
told to change, so the defect is the only difference, and the gold patch (its reverse) restores
the file exactly.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from evalharness.sources.inject.gate import module_name

Variant = "cst.CSTNode | cst.RemovalSentinel"


@dataclass(frozen=True)
class Site:
    """One place a mutation class can change, and what it becomes there."""

    mutation: str
    path: str
    ordinal: int
    """Index among this class's sites in this file, in traversal order."""
    line: int
    function: str
    """Qualified name of the enclosing function or class ("Cache.pop"), "" at module level."""
    before: str
    after: str

    @property
    def module(self) -> str:
        """The dotted module of ``path`` ("src/pkg/a.py" -> "pkg.a"; a leading "src/" is a layout, not a name)."""
        return module_name(self.path)

    @property
    def function_name(self) -> str:
        """The innermost name of ``function`` ("Cache.pop" -> "pop")."""
        return self.function.rsplit(".", 1)[-1]

    @property
    def key(self) -> str:
        return f"{self.path}:{self.mutation}:{self.ordinal}"


def _code(node: cst.CSTNode) -> str:
    return " ".join(cst.Module([]).code_for_node(node).split())


# --- the rules: node -> replacements -------------------------------------------------------------

_FLIP = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan, cst.LessThanEqual: cst.GreaterThanEqual,
         cst.GreaterThanEqual: cst.LessThanEqual, cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal,
         cst.Is: cst.IsNot, cst.IsNot: cst.Is, cst.In: cst.NotIn, cst.NotIn: cst.In}
_BOUNDARY = {cst.LessThan: cst.LessThanEqual, cst.LessThanEqual: cst.LessThan,
             cst.GreaterThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.GreaterThan}
_EXCEPTIONS = {"ValueError": "TypeError", "TypeError": "ValueError", "KeyError": "IndexError",
               "IndexError": "KeyError", "AttributeError": "TypeError", "RuntimeError": "ValueError",
               "NotImplementedError": "TypeError", "LookupError": "ValueError", "ZeroDivisionError": "ValueError",
               "OverflowError": "TypeError", "StopIteration": "ValueError"}


def _operator(old: cst.CSTNode, new_type: type) -> cst.CSTNode:
    """``new_type`` with ``old``'s surrounding whitespace (two-word operators keep one space between)."""
    ws = {"whitespace_before": old.whitespace_before, "whitespace_after": old.whitespace_after}
    return new_type(**ws)


def _compare(table: dict) -> Callable[[cst.CSTNode, cst.CSTNode], list]:
    def rule(original, updated):
        if isinstance(original, cst.ComparisonTarget) and type(original.operator) in table:
            return [updated.with_changes(operator=_operator(updated.operator, table[type(original.operator)]))]
        return []
    return rule


def _int_value(node: cst.CSTNode) -> int | None:
    if isinstance(node, cst.Integer) and node.value.isdigit():
        value = int(node.value)
        return value if value < 10_000 else None
    return None


def off_by_one(original, updated):
    """``n`` -> ``n + 1`` for a small integer literal; ``x + 1`` / ``x - 1`` -> ``x``."""
    if isinstance(original, cst.BinaryOperation) and isinstance(original.operator, (cst.Add, cst.Subtract)) \
            and _int_value(original.right) == 1 and not original.lpar:
        return [updated.left]
    value = _int_value(original)
    if value is not None:
        return [updated.with_changes(value=str(value + 1))]
    return []


def dropped_branch(original, updated, *, in_elif: bool = False):
    """An ``if``'s ``elif``/``else`` dropped, or (without one) the whole ``if`` statement removed."""
    if not isinstance(original, cst.If):
        return []
    if original.orelse is not None:
        return [updated.with_changes(orelse=None)]
    return [] if in_elif else [cst.RemovalSentinel.REMOVE]


def swapped_arguments(original, updated):
    """The first two positional arguments of a call swapped."""
    if not isinstance(original, cst.Call) or len(original.args) < 2:
        return []
    a, b = original.args[0], original.args[1]
    if a.keyword or b.keyword or a.star or b.star or _code(a.value) == _code(b.value):
        return []
    args = list(updated.args)
    args[0], args[1] = args[0].with_changes(value=args[1].value), args[1].with_changes(value=args[0].value)
    return [updated.with_changes(args=args)]


def changed_default(original, updated):
    """A parameter's default changed: ``True`` <-> ``False``, ``n`` -> ``n + 1``."""
    if not isinstance(original, cst.Param) or original.default is None:
        return []
    default = original.default
    if isinstance(default, cst.Name) and default.value in ("True", "False"):
        return [updated.with_changes(default=default.with_changes(value="False" if default.value == "True"
                                                                    else "True"))]
    value = _int_value(default)
    if value is not None:
        return [updated.with_changes(default=default.with_changes(value=str(value + 1)))]
    return []


def removed_call(original, updated):
    """A statement that is only a call (``self._grow()``, ``items.append(x)``) removed."""
    if isinstance(original, cst.SimpleStatementLine) and len(original.body) == 1 \
            and isinstance(original.body[0], cst.Expr) and isinstance(original.body[0].value, cst.Call):
        return [cst.RemovalSentinel.REMOVE]
    return []


def wrong_exception_type(original, updated):
    """``raise ValueError(...)`` -> ``raise TypeError(...)``, or an ``except`` clause catching the wrong type."""
    target = None
    if isinstance(original, cst.Raise) and original.exc is not None:
        target = original.exc.func if isinstance(original.exc, cst.Call) else original.exc
        if isinstance(target, cst.Name) and target.value in _EXCEPTIONS:
            exc = updated.exc
            new_name = target.with_changes(value=_EXCEPTIONS[target.value])
            return [updated.with_changes(exc=exc.with_changes(func=new_name) if isinstance(exc, cst.Call)
                                         else new_name)]
    if isinstance(original, cst.ExceptHandler) and isinstance(original.type, cst.Name) \
            and original.type.value in _EXCEPTIONS:
        return [updated.with_changes(type=original.type.with_changes(value=_EXCEPTIONS[original.type.value]))]
    return []


_NEEDS_PARENS = (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)


def _negate(test: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and not test.lpar:
        inner = test.expression
        if inner.lpar and not isinstance(inner, (cst.Tuple, cst.GeneratorExp)):
            inner = inner.with_changes(lpar=[], rpar=[])
        return inner
    if isinstance(test, _NEEDS_PARENS) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.UnaryOperation(operator=cst.Not(), expression=test)


_CONSTANTS = ("True", "False", "None", "TYPE_CHECKING", "__debug__")


def _is_constant(test: cst.BaseExpression) -> bool:
    """A condition that never changes: ``while True:``, ``if 0:``, ``if TYPE_CHECKING:``. Negating it makes a
    loop that is never entered (or never left) or removes a block wholesale: the suite hangs or breaks, no task."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.Attribute):
        test = test.attr
    return isinstance(test, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(test, cst.Name) and test.value in _CONSTANTS)


def negated_condition(original, updated):
    """The condition of an ``if``, ``elif``, ``while`` or conditional expression negated (never a constant one:
    ``while True`` -> ``while not True`` is a loop never entered, not a defect a test describes)."""
    if isinstance(original, (cst.If, cst.While, cst.IfExp)) and not _is_constant(original.test):
        return [updated.with_changes(test=_negate(updated.test))]
    return []


def early_return(original, updated):
    """A ``return`` inserted before the last statement of a function of two or more statements."""
    if not isinstance(original, cst.FunctionDef) or not isinstance(original.body, cst.IndentedBlock):
        return []
    body = list(updated.body.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    if len(body) - start < 2:
        return []
    ret = cst.SimpleStatementLine([cst.Return()])
    return [updated.with_changes(body=updated.body.with_changes(body=[*body[:-1], ret, body[-1]]))]


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


MUTATIONS: dict[str, Callable] = {
    "flipped_comparison": _compare(_FLIP),
    "off_by_one": off_by_one,
    "wrong_boundary": _compare(_BOUNDARY),
    "dropped_branch": dropped_branch,
    "swapped_arguments": swapped_arguments,
    "changed_default": changed_default,
    "removed_call": removed_call,
    "wrong_exception_type": wrong_exception_type,
    "negated_condition": negated_condition,
    "early_return": early_return,
}
"""Every mutation class by name; the name is the task's ``metadata.mutation``."""


# --- walking a module ----------------------------------------------------------------------------

class _Walker(cst.CSTTransformer):
    """Numbers one class's sites in traversal order; records them, or applies the ``target``-th."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, name: str, path: str, target: int | None):
        super().__init__()
        self.name, self.rule, self.path, self.target = name, MUTATIONS[name], path, target
        self.sites: list[Site] = []
        self.count = 0
        self.scope: list[str] = []
        self.skip = 0  # inside a docstring-free zone we never mutate: decorators, annotations, `__main__` blocks
        self.elifs: set[int] = set()
        self.defaults: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.scope.append(node.name.value)
        if isinstance(node, (cst.Decorator, cst.Annotation)) or _is_main_guard(node):
            self.skip += 1
        if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))
        if isinstance(node, cst.Param) and node.default is not None:
            self.defaults.add(id(node.default))
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        result = updated
        if not self.skip and id(original) not in self.defaults:
            for variant in self._variants(original, updated):
                if self.target is None:
                    self._record(original, variant)
                elif self.count == self.target:
                    result = variant
                self.count += 1
        if isinstance(original, (cst.Decorator, cst.Annotation)) or _is_main_guard(original):
            self.skip -= 1
        if isinstance(original, (cst.FunctionDef, cst.ClassDef)):
            self.scope.pop()
        return result

    def _variants(self, original, updated) -> list:
        if self.name == "dropped_branch":
            return dropped_branch(original, updated, in_elif=id(original) in self.elifs)
        return self.rule(original, updated)

    def _record(self, original, variant) -> None:
        line = self.get_metadata(PositionProvider, original).start.line
        after = "(removed)" if isinstance(variant, cst.RemovalSentinel) else _code(variant)
        self.sites.append(Site(self.name, self.path, self.count, line, ".".join(self.scope),
                               _code(original)[:200], after[:200]))


def _is_main_guard(node: cst.CSTNode) -> bool:
    return (isinstance(node, cst.If) and isinstance(node.test, cst.Comparison)
            and isinstance(node.test.left, cst.Name) and node.test.left.value == "__name__")


def sites(source: str, path: str, classes: list[str] | None = None) -> list[Site]:
    """Every site of every mutation class (or of ``classes``) in one module's source."""
    module = cst.parse_module(source)
    found: list[Site] = []
    for name in classes or MUTATIONS:
        walker = _Walker(name, path, None)
        MetadataWrapper(module, unsafe_skip_copy=True).visit(walker)
        found += [s for s in walker.sites if s.before != s.after]
    return found


def apply(source: str, site: Site) -> str:
    """``source`` with ``site``'s mutation applied; every other byte unchanged."""
    walker = _Walker(site.mutation, site.path, site.ordinal)
    mutated = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True).visit(walker)
    return mutated.code


def diff(path: str, old: str, new: str) -> str:
    """A git diff of one file from ``old`` to ``new`` (git's own diff, byte-exact), paths relative to the tree."""
    with tempfile.TemporaryDirectory(prefix="eh-inject-") as tmp:
        for side, text in (("a", old), ("b", new)):
            target = Path(tmp, side, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode())
        done = subprocess.run(["git", "diff", "--no-index", "--no-prefix", "--no-color", "--no-ext-diff",
                               "--full-index", f"a/{path}", f"b/{path}"], cwd=tmp, capture_output=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"git diff failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def hunk_code(patch: str) -> str:
    """The changed lines of a patch with all whitespace removed: two mutants that change the same code the
    same way have the same hunk code, wherever it is."""
    lines = [line for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return "\n".join("".join(line.split()) for line in lines)


def iter_library_files(files: dict[str, bytes]) -> Iterator[tuple[str, str]]:
    """The library modules of a source tree: Python files outside tests, docs, examples and build scripts."""
    skip_dirs = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmark", "benchmarks",
                 "scripts", "tools", ".github", "build", "dist"}
    for path in sorted(files):
        parts = path.split("/")
        name = parts[-1]
        if not name.endswith(".py") or set(parts[:-1]) & skip_dirs or name.startswith("test_") \
                or name.endswith("_test.py") or name in ("conftest.py", "setup.py", "noxfile.py", "fabfile.py"):
            continue
        try:
            yield path, files[path].decode()
        except UnicodeDecodeError:
            continue
