"""Mutants of a gold patch: incomplete or wrong fixes a strong test suite should reject (``docs/audit.md``).

A mutant is the gold patch changed in one way, written as a patch against the base, of one of these kinds:

- ``dropped_hunk``: one hunk of the gold patch left out (when it has more than one);
- ``reverted_block``: one run of changed lines inside a hunk put back as it was at base (when the hunk has
  more than one such run);
- ``partial_file``: only one file's part of the fix (when it touches more than one file);
- ``ast:<class>``: one mutation class of ``sources/inject/mutations.py`` (or ``dropped_argument``: one
  argument of a call left out) applied to the patched file at a site that starts on a line the gold patch
  added.

Candidates are dropped when they equal the base or the gold, differ from the gold only where nothing can
matter (documentation files, comments, docstrings: same Python AST without docstrings), do not parse, or
repeat another. At most ``cap`` are kept, chosen by a seeded shuffle and taken in turn from the kinds
(and, inside ``ast``, in turn from the mutation classes), so every kind gets its share.
"""

from __future__ import annotations

import ast
import random
import re
from collections import Counter
from dataclasses import dataclass

import libcst as cst

from evalharness.audit.patchparts import (FilePatch, Hunk, PatchUnsupported, State, change_blocks, file_state,
                                          parse_patch, removed_by_line, render)
from evalharness.audit.argmutation import argument_sites, drop_argument
from evalharness.sources.inject import mutations

__all__ = ["DEFAULT_CAP", "STRUCTURAL", "Mutant", "PatchUnsupported", "generate", "parse_patch", "render"]

DEFAULT_CAP = 12
STRUCTURAL = ("dropped_hunk", "reverted_block", "partial_file")
_DOC_SUFFIXES = (".rst", ".md", ".txt", ".rdoc", ".adoc")
_DOC_NAMES = ("CHANGES", "CHANGELOG", "HISTORY", "NEWS", "AUTHORS", "CONTRIBUTORS", "README")

@dataclass(frozen=True)
class Mutant:
    kind: str
    """``dropped_hunk``, ``partial_file`` or ``ast:<mutation class>``."""
    description: str
    patch: str
    """The mutant as a patch against the base (what is graded)."""
    change: str
    """How it differs from the gold patch (a diff from the patched tree to the mutant's)."""

    @property
    def family(self) -> str:
        return self.kind.split(":")[0]


# --- what can matter ---------------------------------------------------------------------------

def is_doc_path(path: str) -> bool:
    """Documentation, not code: doc suffixes, a ``doc``/``docs`` folder, changelogs and the like."""
    parts = path.split("/")
    return (path.endswith(_DOC_SUFFIXES) or bool({"doc", "docs"} & set(parts[:-1]))
            or parts[-1].upper().startswith(_DOC_NAMES))


def _meaning(path: str, text: str | None) -> str | None:
    """What of a file can change behaviour: its AST without docstrings (Python), else its non-blank lines."""
    if text is None:
        return None
    if path.endswith(".py"):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            pass
        else:
            for node in ast.walk(tree):
                body = getattr(node, "body", None)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                        and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                        and isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
            return ast.dump(tree)
    keep = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return "\n".join(keep)


def _parses(path: str, text: str | None) -> bool:
    if text is None or not path.endswith(".py"):
        return True
    try:
        ast.parse(text)
        return True
    except (SyntaxError, ValueError):
        return False


def verdict(state: State, base: State, gold: State, seen: set) -> str:
    """Why a candidate is dropped (``same_as_base``, ``same_as_gold``, ``cannot_matter``, ``invalid_syntax``,
    ``duplicate``), or "" when it is kept (pure)."""
    full = {**gold, **state}
    if all(full[p] == base.get(p) for p in full):
        return "same_as_base"
    differ = [p for p in full if full[p] != gold[p]]
    if not differ:
        return "same_as_gold"
    if all(is_doc_path(p) or _meaning(p, full[p]) == _meaning(p, gold[p]) for p in differ):
        return "cannot_matter"
    if any(_parses(p, gold[p]) and not _parses(p, full[p]) for p in differ):
        return "invalid_syntax"
    key = tuple(sorted((p, full[p] or "") for p in full))
    if key in seen:
        return "duplicate"
    seen.add(key)
    return ""


# --- candidates and the choice -----------------------------------------------------------------

def candidates(files: list[FilePatch], base: State, gold: State, added: dict[str, dict[int, str]]
               ) -> list[tuple[str, str, State]]:
    """Every candidate mutant as (kind, description, changed files), in a stable order (``added``: per path,
    the lines of the patched file the gold patch added -> what their run of changed lines removed)."""
    out: list[tuple[str, str, State]] = []
    n_hunks = sum(len(f.hunks) for f in files)
    for fp in files:
        for j, hunk in enumerate(fp.hunks):
            if n_hunks > 1:
                kept = [h for k, h in enumerate(fp.hunks) if k != j]
                out.append(("dropped_hunk", f"{fp.path}: hunk {j + 1} of {len(fp.hunks)} left out "
                            f"(base line {hunk.old_start})", {fp.path: file_state(fp, base[fp.path], kept)}))
    for fp in files:
        for j, hunk in enumerate(fp.hunks):
            blocks = change_blocks(hunk)
            for b, (lo, hi) in enumerate(blocks if len(blocks) > 1 else []):
                reverted = Hunk(hunk.old_start, hunk.old_len, hunk.new_start,
                                [(" ", t) if op == "-" and lo <= k < hi else (op, t)
                                 for k, (op, t) in enumerate(hunk.lines) if not (op == "+" and lo <= k < hi)])
                hunks = [reverted if k == j else h for k, h in enumerate(fp.hunks)]
                out.append(("reverted_block", f"{fp.path}: change {b + 1} of {len(blocks)} in hunk {j + 1} "
                            f"reverted (base line {hunk.old_start})", {fp.path: file_state(fp, base[fp.path], hunks)}))
    if len(files) > 1:
        for fp in files:
            out.append(("partial_file", f"only the change to {fp.path}", {fp.path: gold[fp.path]}
                        | {f.path: base[f.path] for f in files if f is not fp}))
    for fp in files:
        out += _ast_candidates(fp, gold[fp.path], added.get(fp.path, {}))
    return out


COMMUTATIVE = {"min", "max", "gcd", "lcm", "hypot", "isclose", "math.gcd", "math.lcm", "math.hypot", "math.isclose",
               "operator.add", "operator.mul", "operator.eq", "operator.ne", "np.maximum", "np.minimum"}
"""Calls whose first two arguments can be swapped without changing the result (an equivalent mutant)."""


def _part_of_the_fix(site: mutations.Site, removed: str) -> bool:
    """A site is the fix's own code unless it is already in what its change removed (a token the gold patch
    kept on a line it changed), or it swaps the arguments of a commutative call."""
    if site.mutation == "swapped_arguments" and site.before.split("(")[0].strip() in COMMUTATIVE:
        return False
    return not (removed and re.search(rf"(?<![\w.]){re.escape(site.before)}(?!\w)", removed))


def _ast_candidates(fp: FilePatch, text: str | None, added: dict[int, str]) -> list[tuple[str, str, State]]:
    if text is None or not fp.path.endswith(".py") or is_doc_path(fp.path):
        return []
    lines = text.splitlines(keepends=True)
    out = []
    for start, end, indent in units(text, added):
        snippet = "".join(line[indent:] if line.strip() else line for line in lines[start - 1:end])
        try:
            found = [s for s in mutations.sites(snippet, fp.path) if s.line + start - 1 in added]
            found += [s for s in argument_sites(snippet, fp.path) if s.line + start - 1 in added]
        except (cst.ParserSyntaxError, RecursionError):
            continue
        for site in found:
            if not _part_of_the_fix(site, added[site.line + start - 1]):
                continue
            try:
                mutated = (drop_argument(snippet, site) if site.mutation == "dropped_argument"
                           else mutations.apply(snippet, site))
            except (cst.ParserSyntaxError, RecursionError, ValueError):
                continue
            body = "".join(" " * indent + line if line.strip() else line
                           for line in mutated.splitlines(keepends=True))
            out.append((f"ast:{site.mutation}", f"{fp.path}:{site.line + start - 1}: {site.before[:80]} -> "
                        f"{site.after[:80]}", {fp.path: "".join(lines[:start - 1]) + body + "".join(lines[end:])}))
    return out


def units(text: str, added) -> list[tuple[int, int, int]]:
    """The smallest functions (else top-level statements) holding added lines, as (first line, last line,
    indentation): mutating a unit alone is much faster than the whole module, and gives the same bytes.
    A unit is only used when cutting its indentation and putting it back gives its exact text; the whole
    module is the one unit when the file does not parse here."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [(1, len(text.splitlines()), 0)]
    lines = text.splitlines(keepends=True)
    found: set[tuple[int, int, int]] = set()
    for n in sorted(added):
        unit = None
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _span(node)[0] <= n <= _span(node)[1]:
                if unit is None or _span(node)[0] >= _span(unit)[0]:
                    unit = node
        if unit is not None and not _cuts(lines, *_span(unit), unit.col_offset):
            unit = None
        if unit is None:
            unit = next((s for s in tree.body if _span(s)[0] <= n <= _span(s)[1]), None)
            if unit is None:
                continue
        found.add((*_span(unit), unit.col_offset))
    return sorted(found)


def _span(node: ast.AST) -> tuple[int, int]:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return first, node.end_lineno or node.lineno


def _cuts(lines: list[str], start: int, end: int, indent: int) -> bool:
    """Do the lines ``start..end`` all begin with ``indent`` spaces (blank lines aside)?"""
    return all(not line.strip() or line[:indent] == " " * indent for line in lines[start - 1:end])


def choose(found: list[tuple[str, str, State]], cap: int, rng: random.Random) -> list[tuple[str, str, State]]:
    """At most ``cap``, in turn from the kinds (dropped_hunk, partial_file, ast) and, inside ast, from the
    mutation classes; each group shuffled by ``rng``."""
    groups: dict[str, dict[str, list]] = {}
    for item in found:
        family = item[0].split(":")[0]
        groups.setdefault(family, {}).setdefault(item[0], []).append(item)
    queues = []
    for family in STRUCTURAL + ("ast",):
        kinds = groups.get(family, {})
        for items in kinds.values():
            rng.shuffle(items)
        queues.append(_round_robin([kinds[k] for k in sorted(kinds)]))
    return _round_robin(queues)[:cap]


def _round_robin(lists: list[list]) -> list:
    out, i = [], 0
    while any(i < len(x) for x in lists):
        out += [x[i] for x in lists if i < len(x)]
        i += 1
    return out


def generate(patch: str, base: State, *, cap: int = DEFAULT_CAP, seed: int | str = 0) -> tuple[list[Mutant], Counter]:
    """The mutants of ``patch`` (``base``: every touched path -> its text at base, None if absent) and the
    count of candidates dropped, by reason. Deterministic for a given ``seed``."""
    files = parse_patch(patch)
    if not files:
        raise PatchUnsupported("the gold patch has no hunks")
    base = {fp.path: base.get(fp.path) for fp in files} | {fp.old_path: base.get(fp.old_path)
                                                            for fp in files if fp.old_path}
    added: dict[str, list[int]] = {fp.path: [] for fp in files}
    gold = {fp.path: file_state(fp, base[fp.path], fp.hunks, added[fp.path]) for fp in files}
    dropped: Counter = Counter()
    kept, seen = [], set()
    kept_lines = {fp.path: removed_by_line(fp, added[fp.path]) for fp in files}
    for kind, description, state in candidates(files, base, gold, kept_lines):
        why = verdict(state, base, gold, seen)
        if why:
            dropped[why] += 1
        else:
            kept.append((kind, description, state))
    chosen = choose(kept, cap, random.Random(f"{seed}"))
    dropped["over_cap"] = len(kept) - len(chosen)
    mutants = [Mutant(kind, description, render(base, {**gold, **state}), render(gold, {**gold, **state}))
               for kind, description, state in chosen]
    return mutants, +dropped
