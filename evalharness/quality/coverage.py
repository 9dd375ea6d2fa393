"""The coverage gate (pure): do the FAIL_TO_PASS tests execute the code the gold patch changes, and does a
PASS_TO_PASS test guard a module it changes? (``docs/mining.md``, "The quality gate").

**What is measured, and on which side.** One diagnostic run (``evalharness.quality.measure``) with the gold
patch and the test patch applied records, per test, the lines each changed library ``.py`` file executes. The
gold side, not the base, because it is the only side where every changed line exists and every FAIL_TO_PASS
test can run to the end: a new function (a pure addition) has no line at base, and a test that imports a name
the gold patch adds fails at collection at base and executes nothing, which would read as "misses the change"
for every such task. At gold the FAIL_TO_PASS tests pass, so what they execute is what makes them pass.

**The changed lines** (``changed_lines``), per file on the gold side: every added line; for a block that only
removes lines, the lines right before and after the removal (the code the removal joins). Of those, only
executable lines count (``statement_lines``): a line of a statement maps to the statement's first line (a
continuation of a call, a line inside a dict literal); blank lines, comments, ``else:`` and docstrings are not
executable. A changed line that runs at import (a module constant, a ``def`` line, an import) counts for a test
when that test executes any line of the same file: the value it defines is what the test's code reads there.

**Decisions** (``decide``):

- ``f2p_misses_change``: the FAIL_TO_PASS tests together execute fewer than ``f2p_min_covered_lines``
  (default 1) executable changed lines: they pass for some reason other than the code the gold patch changes
  (a test of the version string, a test of an unrelated module).
- ``no_p2p_guard``: no PASS_TO_PASS test executes, in its own run (not at import), any line of any library
  ``.py`` file the gold patch changes: nothing guards the module against a fix that breaks what it did.

When nothing can be measured (no ``.py`` library file changed, a test command that is not pytest) both checks
pass and say so; when the run did not complete, reported none of the FAIL_TO_PASS tests, or executed no line
of the changed files at all (the tests import another copy of the code), the verdict is ``coverage_unmeasured``
(only a complete run is evidence, and a run that cannot see the files is no evidence that tests miss them).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from evalharness.quality.gate import DEFAULT, Check, Thresholds

VERDICTS = {
    "f2p_misses_change": "the FAIL_TO_PASS tests execute none of the lines the gold patch changes",
    "no_p2p_guard": "no PASS_TO_PASS test executes any line of a module the gold patch changes",
    "coverage_unmeasured": "the coverage run did not complete or did not report the FAIL_TO_PASS tests",
}
"""The coverage gate's verdicts (after validation, in ``packs mine``; ``packs gate --coverage``)."""
IMPORT = ""
"""The context of lines that ran outside any test (collection, imports)."""
SHOWN = 10
"""Tests named per list in a task's gate results (the counts are always complete)."""
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass
class CoverageData:
    """What one diagnostic run recorded: executed lines per context (a test id, or ``IMPORT``) and file, the
    source of each changed file as the run saw it, and whether the run completed."""

    executed: dict[str, dict[str, set[int]]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    """Each test's outcome in the run (passed, failed, skipped)."""
    complete: bool = True
    reason: str = ""
    """Why the run is no evidence (when not complete), or how it ran."""

    @classmethod
    def from_json(cls, data: dict) -> "CoverageData":
        executed = {ctx: {f: set(lines) for f, lines in files.items()}
                    for ctx, files in data.get("executed", {}).items()}
        return cls(executed, dict(data.get("sources", {})), dict(data.get("outcomes", {})),
                   bool(data.get("complete", False)), str(data.get("reason", "")))


def changed_lines(patch: str) -> dict[str, set[int]]:
    """The gold side's changed lines of each ``.py`` file of a diff (see the module doc); a file the patch
    deletes has none and is left out."""
    out: dict[str, set[int]] = {}
    path: str | None = None
    new = 0
    block_added = False
    block_removed = False
    before = 0

    def close_block() -> None:
        if path is not None and block_removed and not block_added:
            out[path].update(n for n in (before, new) if n > 0)

    for line in patch.splitlines():
        if line.startswith("diff --git "):
            close_block()
            match = re.match(r"diff --git a/(.+?) b/(.+)$", line)
            path = match.group(2) if match and match.group(2).endswith(".py") else None
            if path is not None:
                out.setdefault(path, set())
            block_added = block_removed = False
        elif path is None:
            continue
        elif line.startswith("+++ "):
            if line.strip() == "+++ /dev/null":
                out.pop(path, None)
                path = None
        elif line.startswith("--- "):
            continue
        elif (hunk := _HUNK.match(line)) is not None:
            close_block()
            new, block_added, block_removed = int(hunk.group(1)), False, False
            before = new - 1
        elif line.startswith("+"):
            out[path].add(new)
            new += 1
            block_added = True
        elif line.startswith("-"):
            block_removed = True
        elif line.startswith(" ") or line == "":
            close_block()
            block_added = block_removed = False
            before = new
            new += 1
    close_block()
    return out


def statement_lines(source: str) -> dict[int, int] | None:
    """Executable lines of a module: each line of a simple statement -> the statement's first line, a compound
    statement's header lines -> its first line; docstrings left out. None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines: dict[int, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring (or a bare string): never executed as a line
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            end = max(node.lineno, body[0].lineno - 1)  # the header: up to the first statement of the body
        else:
            end = node.end_lineno or node.lineno
        first = node.lineno
        for decorator in getattr(node, "decorator_list", []):
            first = min(first, decorator.lineno)
        for n in range(first, end + 1):
            lines[n] = node.lineno  # ast.walk goes outside in: an inner statement's line wins
    return lines


def executable_changes(changed: dict[str, set[int]], sources: dict[str, str]) -> dict[str, dict[int, int]]:
    """Per file: each executable changed line -> the line a run reports for it (its statement's first line);
    a file whose source is unknown or does not parse keeps its changed lines as they are."""
    out: dict[str, dict[int, int]] = {}
    for path, lines in changed.items():
        mapping = statement_lines(sources[path]) if path in sources else None
        if mapping is None:
            out[path] = {n: n for n in lines}
        else:
            out[path] = {n: mapping[n] for n in lines if n in mapping}
    return out


def _hits(test: str, path: str, wanted: dict[int, int], data: CoverageData) -> set[int]:
    """The changed lines of ``path`` that ``test`` executes: in its own context, or at import when the test
    executes any line of the file."""
    own = data.executed.get(test, {}).get(path, set())
    at_import = data.executed.get(IMPORT, {}).get(path, set()) if own else set()
    ran = own | at_import
    return {n for n, reported in wanted.items() if n in ran or reported in ran}


def _names(tests: list[str]) -> str:
    return ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")


@dataclass
class CoverageResult:
    """The two checks and what a reader needs to see why: fractions and which tests cover what."""

    checks: list[Check]
    details: dict

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def verdict(self) -> str | None:
        """The first failed check's name (the candidate's verdict), or None."""
        return next((c.name for c in self.checks if not c.passed), None)


def not_measured(why: str) -> CoverageResult:
    """Both checks passed because nothing can be measured (the reason says what)."""
    reason = f"not measured: {why}"
    return CoverageResult([Check("f2p_misses_change", True, reason), Check("no_p2p_guard", True, reason)],
                          {"measured": False, "reason": why})


def unmeasured(why: str) -> CoverageResult:
    """The run is no evidence: the one check ``coverage_unmeasured``, failed."""
    return CoverageResult([Check("coverage_unmeasured", False, why)], {"measured": False, "reason": why})


def decide(patch: str, data: CoverageData, f2p: list[str], p2p: list[str],
           thresholds: Thresholds = DEFAULT) -> CoverageResult:
    """The coverage checks of one task (see the module doc)."""
    changed = changed_lines(patch)
    if not changed:
        return not_measured("the gold patch changes no library .py file")
    if not data.complete:
        return unmeasured(f"the coverage run is no evidence: {data.reason}")
    seen = [t for t in f2p if t in data.executed or t in data.outcomes]
    if not seen:
        return unmeasured(f"the coverage run reported none of the {len(f2p)} FAIL_TO_PASS test(s) ({_names(f2p)})")
    wanted = executable_changes(changed, data.sources)
    total = sum(len(lines) for lines in wanted.values())
    if not total:
        return not_measured("the gold patch changes no executable line (comments, docstrings, blank lines)")
    if not any(files.get(path) for files in data.executed.values() for path in changed):
        return unmeasured("the coverage run executed no line of the changed files at all, not even at import: "
                          "the tests import another copy of the code (an installed one?), so nothing is measured")
    wanted = {path: lines for path, lines in wanted.items() if lines}
    covered, by_test = _f2p_hits(f2p, wanted, data)
    n_covered = sum(len(v) for v in covered.values())
    guards = {path: [t for t in p2p if data.executed.get(t, {}).get(path)] for path in wanted}
    guards = {path: tests for path, tests in guards.items() if tests}
    details = {
        "measured": True, "changed_lines": {p: sorted(v) for p, v in wanted.items()},
        "covered_lines": {p: sorted(v) for p, v in covered.items()}, "covered": n_covered, "executable": total,
        "covered_fraction": round(n_covered / total, 3),
        "f2p_covering": {t: by_test[t] for t in list(by_test)[:SHOWN]}, "f2p_covering_count": len(by_test),
        "f2p_missing_from_run": [t for t in f2p if t not in seen][:SHOWN],
        "f2p_not_passing": [t for t in seen if data.outcomes.get(t, "passed") != "passed"][:SHOWN],
        "p2p_guards": {p: {"count": len(ts), "tests": ts[:SHOWN]} for p, ts in guards.items()},
        "run": data.reason}
    files = ", ".join(sorted(wanted))
    return CoverageResult([_f2p_check(n_covered, total, len(seen), len(by_test), len(f2p), files, thresholds),
                           _p2p_check(guards, len(p2p), files)], details)


def _f2p_hits(f2p: list[str], wanted: dict[str, dict[int, int]], data: CoverageData
              ) -> tuple[dict[str, set[int]], dict[str, dict[str, list[int]]]]:
    """The changed lines the FAIL_TO_PASS tests execute, per file, and per test."""
    covered: dict[str, set[int]] = {}
    by_test: dict[str, dict[str, list[int]]] = {}
    for test in f2p:
        for path, lines in wanted.items():
            hits = _hits(test, path, lines, data)
            if hits:
                covered.setdefault(path, set()).update(hits)
                by_test.setdefault(test, {})[path] = sorted(hits)
    return covered, by_test


def _f2p_check(n_covered: int, total: int, seen: int, covering: int, f2p: int, files: str,
               thresholds: Thresholds) -> Check:
    need = thresholds.f2p_min_covered_lines
    if n_covered < need:
        return Check("f2p_misses_change", False,
                     f"the {seen} FAIL_TO_PASS test(s) execute {n_covered} of the {total} executable line(s) "
                     f"the gold patch changes (at least {need} needed) in {files}")
    return Check("f2p_misses_change", True, f"the FAIL_TO_PASS tests execute {n_covered} of {total} changed "
                 f"line(s) ({n_covered / total:.0%}); {covering} of {f2p} test(s) execute some")


def _p2p_check(guards: dict[str, list[str]], p2p: int, files: str) -> Check:
    if not guards:
        return Check("no_p2p_guard", False,
                     f"none of the {p2p} PASS_TO_PASS test(s) executes a line of {files}" if p2p else
                     f"the task has no PASS_TO_PASS test, so nothing guards {files}")
    return Check("no_p2p_guard", True, "; ".join(f"{p}: {len(ts)} PASS_TO_PASS test(s), e.g. {ts[0]}"
                                                 for p, ts in sorted(guards.items())))
