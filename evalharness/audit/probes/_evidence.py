"""Shared questions of the text probes: does the statement say it, does the base have it, does the gold add it.

Pure helpers over a task's text and its ``BaseCode`` (``context.py``). Without base code, "at base"
is read from the patches: the gold patch's removed and context lines and the test patch's removed
and context lines are what the base is known to hold, so more looks new than really is; findings say
which way was used (``base_code`` in their evidence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evalharness.audit.context import BaseCode
from evalharness.audit.probes.testtext import Literal, Use, Where, defined_names

MIN_FRAGMENT = 4
"""Shortest piece of an asserted string (between wildcards) that is looked for."""
_WILDCARDS = re.compile(r"\*|\?|\(\.[+*]\)|\.\*|\.\+|\\n|\n|\^|\$")
_SPACE = re.compile(r"\s+")
_ESCAPED = re.compile(r"\\([^\w\s])")
"""A regex's escaped punctuation (``e\\.g\\.``) stands for the character itself."""


@dataclass
class Known:
    """What a task's statement, gold patch and base say, with the lookups the probes need."""

    statement: str
    gold_added: str
    gold_kept: str
    """The gold patch's removed and context lines."""
    tests_kept: str
    base: BaseCode | None
    gold_defined: set[str] = field(default_factory=set)
    """Names the gold patch's added lines bind (``testtext.defined_names``)."""

    @classmethod
    def of(cls, task, base: BaseCode | None) -> "Known":
        gold_added, gold_kept = _sides(task.patch)
        _, tests_kept = _sides(task.test_patch)
        return cls(task.problem_statement, gold_added, gold_kept, tests_kept, base, defined_names(task.patch))

    @property
    def base_mode(self) -> str:
        return "git base commit" if self.base is not None else "unavailable: decided from the patches only"

    def said(self, text: str, *, name: bool = False) -> bool:
        """The statement holds ``text``: a name as a whole word (case-insensitive, ``a_b`` also as
        ``a b``), a string as each of its pieces between wildcards (whitespace collapsed)."""
        if name:
            words = [w for w in text.strip("_").split("_") if w]
            spaced = r"[\s_-]+".join(re.escape(w) for w in words) or re.escape(text)
            return bool(re.search(rf"(?<![\w]){spaced}(?!\w)", self.statement, re.IGNORECASE))
        said = _norm(self.statement)
        return all(_norm(piece) in said for piece in fragments(text))

    def at_base(self, text: str, *, name: bool = False) -> bool:
        """The code at base holds ``text`` (a name, or every piece of a string)."""
        pieces = [text] if name else fragments(text)
        if self.base is not None:
            return all(self.base.contains(piece) for piece in pieces)
        kept = self.gold_kept + "\n" + self.tests_kept
        return all(_has(kept, piece, name) for piece in pieces)

    def gold_defines(self, name: str) -> bool:
        """The gold patch brings the name: its added lines bind it (a new function, class, parameter,
        attribute, constant) and its removed and context lines never mention it. An import is not a
        definition: it names what exists elsewhere."""
        return name in self.gold_defined and not _has(self.gold_kept, name, True)

    def gold_adds(self, text: str, *, name: bool = False) -> bool:
        """The gold patch's added lines hold ``text`` and its removed/context lines do not."""
        pieces = [text] if name else fragments(text)
        return bool(pieces) and all(_has(self.gold_added, p, name) and not _has(self.gold_kept, p, name)
                                    for p in pieces)


def fragments(value: str) -> list[str]:
    """The pieces of an asserted string between glob/regex wildcards (escaped punctuation unescaped),
    each at least ``MIN_FRAGMENT`` long."""
    pieces = [_ESCAPED.sub(r"\1", p).strip() for p in _WILDCARDS.split(value)]
    return [p for p in pieces if len(p) >= MIN_FRAGMENT] or ([value.strip()] if value.strip() else [])


def where_json(wheres: list[Where]) -> list[str]:
    """``path:line (test, FAIL_TO_PASS)`` for each distinct place, at most five."""
    seen = []
    for w in wheres:
        text = f"{w.path}:{w.line}" + (f" in {w.test}" if w.test else "")
        text += " (FAIL_TO_PASS)" if w.fail_to_pass else ""
        if text not in seen:
            seen.append(text)
    return seen[:5]


def group_uses(uses: list[Use]) -> dict[str, list[Use]]:
    grouped: dict[str, list[Use]] = {}
    for use in uses:
        grouped.setdefault(use.name, []).append(use)
    return grouped


def group_literals(literals: list[Literal]) -> dict[str, list[Literal]]:
    grouped: dict[str, list[Literal]] = {}
    for lit in literals:
        grouped.setdefault(lit.value, []).append(lit)
    return grouped


def _sides(patch: str) -> tuple[str, str]:
    added, kept = [], []
    for line in patch.splitlines():
        if line.startswith(("+++", "---", "diff --git", "index ", "@@")):
            continue
        if line[:1] == "+":
            added.append(line[1:])
        elif line[:1] in ("-", " "):
            kept.append(line[1:])
    return "\n".join(added), "\n".join(kept)


def _has(text: str, piece: str, name: bool) -> bool:
    if name:
        return bool(re.search(rf"(?<!\w){re.escape(piece)}(?!\w)", text))
    return piece in text


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()
