"""Text probes: what the tests demand against what the statement says (pure; ``docs/audit.md``).

Three probes read a task's statement, gold patch and test patch (``testtext.read_tests``: names and
asserted strings of the test patch's added lines), and the code at base when the audit has it:

- ``underspecified``: the tests need a name or message that only the gold patch brings and that the
  statement never gives, so a correct fix cannot know it;
- ``strict_literals``: the tests pin exact strings or private details found nowhere a solver can read;
- ``leak``: the statement carries the gold patch's code (``sources.leak.check_statement``).

Measured against human labels (OpenAI's SWE-bench Verified annotations, Agentless's Lite
classification) by ``benchmarks/audit_labels.py``; numbers in BENCHMARKS.md.
"""

from __future__ import annotations

import re

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.probes import register
from evalharness.audit.probes._evidence import Known, group_literals, group_uses, where_json
from evalharness.audit.probes.testtext import MIN_LITERAL, read_tests
from evalharness.sources.leak import added_code, check_statement, names_tests_use
from evalharness.types import TaskSpec

_TOKENS = re.compile(r"\w+|[^\s\w]")
_SPACE = re.compile(r"\s+")
MIN_DIFF_LINE = 10
"""Shortest removed line of a statement's diff (code characters) that is matched against the base."""
MIN_NAME = 3
"""Shorter names (``x``, ``ok``) are never counted as hidden requirements."""


_ASSERTED = ("asserted string (a string of a logical line with assert, an assert*/raises/warns/fnmatch_lines "
             "call, match= or ==/!=, or one bound by NAME = '...' to a name such a line uses; at least "
             f"{MIN_LITERAL} characters with a letter)")
_BRINGS = ("its added lines bind it, as a def, class, parameter, assignment or attribute, and its removed and "
           "context lines never mention it; an import is no definition")
_BASE = ("git grep of the base commit; without base code, the patches' removed and context lines stand for the "
         "base, and the evidence says so")
_SAID = ("a name as a whole word, case-insensitive, a_b also as 'a b'; a string as each of its pieces between "
         "glob/regex wildcards, escaped punctuation unescaped, whitespace collapsed")
_SEVERITY = ("Severity: 1 when all of them are used only outside the FAIL_TO_PASS tests, 2 for one or two used by "
             "FAIL_TO_PASS tests, 3 for three or more; flagged at 1.")


def _severity(items: list[dict]) -> int:
    """0 none; 1 only outside FAIL_TO_PASS tests; 2 one or two in FAIL_TO_PASS tests; 3 three or more."""
    in_f2p = sum(1 for item in items if item["fail_to_pass"])
    return 0 if not items else 1 if not in_f2p else 2 if in_f2p <= 2 else 3


def _finding(probe, task: TaskSpec, ctx_base, items: list[dict], evidence: dict, what: str) -> Finding:
    severity = _severity(items)
    reason = (f"{len(items)} {what}: " + ", ".join(repr(i["text"])[:60] for i in items[:5])) if items else f"no {what}"
    return Finding(task.instance_id, probe.name, probe.family, flagged=severity >= probe.flag_at,
                   severity=severity, reason=reason, evidence={"items": items, **evidence},
                   inputs_hash=inputs_hash(probe.name, probe.version, task.problem_statement, task.patch,
                                           task.test_patch, task.FAIL_TO_PASS, ctx_base))


def _nothing_read(probe, task: TaskSpec) -> Finding:
    """No test line to read: the task adds no tests (they sit at base, as in injected tasks). Not a clean bill."""
    return Finding(task.instance_id, probe.name, probe.family, False, 0,
                   "the task's test patch adds no test lines (its tests sit at base); this probe reads only the "
                   "tests a task adds", {"test_patch_bytes": len(task.test_patch)}, status="skipped",
                   inputs_hash=inputs_hash(probe.name, probe.version, task.test_patch))


def _item(text: str, kind: str, wheres, **extra) -> dict:
    return {"text": text, "kind": kind, "where": where_json(wheres),
            "fail_to_pass": any(w.fail_to_pass for w in wheres), **extra}


class _ReadsAddedTests:
    """A probe over the test patch's added lines: skipped when the task adds none."""

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        base = ctx.base_code(task)
        tests = read_tests(task.test_patch, task.FAIL_TO_PASS)
        if not tests.files:
            return _nothing_read(self, task)
        return self.decide(task, base, Known.of(task, base), tests)


class Underspecified(_ReadsAddedTests):
    name = "underspecified"
    family = "underspecified"
    version = 4
    needs = "base"
    flag_at = 1
    rule = (
        "From the test patch's added lines, take every name the tests use (called, imported, an attribute after a "
        "dot, a keyword argument; not one the added lines define, no keyword or builtin, at least "
        f"{MIN_NAME} characters) and every {_ASSERTED}. One is a hidden requirement when the gold patch brings it "
        f"(a name: {_BRINGS}; a string: its added lines hold it and its removed and context lines do not), the "
        f"code at base does not hold it ({_BASE}), and the statement never mentions it ({_SAID}). {_SEVERITY}"
    )

    def decide(self, task: TaskSpec, base, known: Known, tests) -> Finding:
        items = []
        for name, uses in group_uses(tests.uses).items():
            if len(name) >= MIN_NAME and known.gold_defines(name) and not known.said(name, name=True) \
                    and not known.at_base(name, name=True):
                items.append(_item(name, uses[0].kind, [u.where for u in uses]))
        for value, lits in group_literals(tests.literals).items():
            if known.gold_adds(value) and not known.said(value) and not known.at_base(value):
                items.append(_item(value, "message", [lit.where for lit in lits], source=lits[0].source))
        searched = {"base_code": known.base_mode, "test_files": tests.files,
                    "names_used": len(group_uses(tests.uses)), "strings_asserted": len(group_literals(tests.literals))}
        return _finding(self, task, ctx_base_id(task, base), items, searched, "hidden requirement(s)")


class StrictLiterals(_ReadsAddedTests):
    name = "strict_literals"
    family = "overly_strict"
    version = 5
    needs = "base"
    flag_at = 1
    rule = (
        f"From the test patch's added lines, take (a) every {_ASSERTED} (exact messages, reprs, printed output) "
        "that the tests do not supply themselves (it is not part of a string of their non-asserting added lines, "
        "such as the name of an object they create), (b) every private name the tests touch (one leading "
        "underscore, not a dunder, as an attribute, a keyword argument, an import or a name) and (c) every name "
        f"the tests use that the gold patch brings ({_BRINGS}): a test calling it rejects a correct fix that names "
        f"it otherwise. One is implementation-bound when the statement does not hold it ({_SAID}) and the code at "
        f"base does not hold it either ({_BASE}). {_SEVERITY}"
    )

    def decide(self, task: TaskSpec, base, known: Known, tests) -> Finding:
        items = []
        for value, lits in group_literals(tests.literals).items():
            if not tests.supplied(value) and not known.said(value) and not known.at_base(value):
                items.append(_item(value, "exact_string", [lit.where for lit in lits], source=lits[0].source,
                                   gold_adds=known.gold_adds(value)))
        for name, uses in group_uses(tests.uses).items():
            if len(name) < MIN_NAME or known.said(name, name=True):
                continue
            private = name.startswith("_") and not name.startswith("__")
            kind = "private_name" if private else "new_name" if known.gold_defines(name) else ""
            if kind and not known.at_base(name, name=True):
                items.append(_item(name, kind, [u.where for u in uses]))
        searched = {"base_code": known.base_mode, "test_files": tests.files,
                    "strings_asserted": len(group_literals(tests.literals))}
        return _finding(self, task, ctx_base_id(task, base), items, searched, "implementation-bound assertion(s)")


class Leak:
    name = "leak"
    family = "solution_leak"
    version = 2
    needs = "task"
    flag_at = 1
    rule = (
        "Two ways a statement gives the fix away. gold_code: sources.leak.check_statement's rule, a run of at "
        "least 5 tokens and 20 characters of the gold patch's added code (whitespace ignored, quotes unified, "
        "comments, docstrings and imports left out) that is not wholly code the base already holds (the "
        "patch's removed and context lines) and not only words. proposed_patch: the statement holds a diff "
        "against the repository, a line starting with '-' whose code (whitespace collapsed, at least "
        f"{MIN_DIFF_LINE} characters) is a removed or context line of the gold patch, and a line starting with "
        "'+' whose code is not: the reporter's own fix of the code the gold patch changes. Flagged when either "
        "is found. Severity: 3 when the gold_code runs cover half or more of the gold patch's added code "
        "tokens; 2 for a proposed patch, 20 or more leaked tokens, or two runs or more; 1 for one short run. "
        "check_statement's other kinds (file paths, locations, identifiers) are in the evidence but do not "
        "flag: they place the fix, not give it."
    )

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        leaks = check_statement(task.problem_statement, gold_patch=task.patch, test_patch=task.test_patch,
                                allowed=names_tests_use(task.test_patch))
        code = [leak for leak in leaks if leak.kind == "gold_code"]
        proposed = proposed_patch(task.problem_statement, task.patch)
        gold_tokens = sum(len(_TOKENS.findall(line)) for line in added_code(task.patch))
        leaked = sum(len(_TOKENS.findall(leak.text)) for leak in code)
        share = leaked / gold_tokens if gold_tokens else 0.0
        severity = (3 if code and share >= 0.5 else 2 if proposed or leaked >= 20 or len(code) >= 2
                    else 1 if code else 0)
        evidence = {"gold_code": [{"text": leak.text[:300], "offset": leak.offset, "reason": leak.reason}
                                  for leak in code],
                    "proposed_patch": proposed, "leaked_tokens": leaked, "gold_added_tokens": gold_tokens,
                    "share": round(share, 3),
                    "also_found": [str(leak)[:200] for leak in leaks if leak.kind != "gold_code"][:10]}
        said = [f"{len(code)} run(s) of the gold patch's code ({leaked} of {gold_tokens} added tokens)"] if code else []
        said += [f"a proposed patch ({len(proposed['removed'])} removed, {len(proposed['added'])} added lines)"] \
            if proposed else []
        reason = "the statement holds " + " and ".join(said) if said else "no fix in the statement"
        return Finding(task.instance_id, self.name, self.family, flagged=severity >= self.flag_at,
                       severity=severity, reason=reason, evidence=evidence,
                       inputs_hash=inputs_hash(self.name, self.version, task.problem_statement, task.patch,
                                               task.test_patch))


def proposed_patch(statement: str, gold_patch: str) -> dict:
    """The statement's diff lines against the gold patch's base lines ({} when it holds no such diff)."""
    kept = {_SPACE.sub(" ", line[1:]).strip() for line in gold_patch.splitlines()
            if line[:1] in ("-", " ") and not line.startswith("---")}
    removed, added = [], []
    for line in statement.splitlines():
        sign, code = line.lstrip()[:1], _SPACE.sub(" ", line.lstrip()[1:]).strip()
        if sign == "-" and len(code) >= MIN_DIFF_LINE and code in kept and not line.lstrip().startswith("---"):
            removed.append(code)
        elif sign == "+" and code and code not in kept and not line.lstrip().startswith("+++"):
            added.append(code)
    return {"removed": removed[:10], "added": added[:10]} if removed and added else {}


def ctx_base_id(task: TaskSpec, base) -> str:
    """What the finding's base-code answers depend on (the base commit, or none)."""
    return f"base:{task.base_commit}" if base is not None else "patches-only"


UNDERSPECIFIED = register(Underspecified())
STRICT_LITERALS = register(StrictLiterals())
LEAK = register(Leak())
