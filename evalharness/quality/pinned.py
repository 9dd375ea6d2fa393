"""The ``pinned_message`` check (pure): do the tests demand a sentence only the gold patch writes?

A gold patch that adds a message (a warning, an error text) and a test patch that checks that message word for
word (an assertion, a snapshot) make a task no statement-reader can pass unless the statement gives the message:
node-semver's "Warn when defaulting to --inc=patch" pinned one exact warning sentence in a tap snapshot
(BENCHMARKS.md, "Mined tasks read by hand: Node"). A message assembled from short pieces is not seen
(more-itertools' zip_unequal task pins one built from runs of 3 words and a message already at base).

A message is a run of at least ``pinned_min_words`` words inside a string literal on an added line of the gold
patch (``'...'``, ``"..."``, `` `...` ``; a template's or format string's placeholders, ``${x}``, ``{x}``,
``%s``, split it into runs; words are separated by spaces), not already in the gold patch's removed lines (a
message that moved is at base) and not a doctest's expected output (the line after ``>>>``).
It is pinned when it appears in the test patch's added lines, and stated when the statement holds it (case and
spacing aside). The check fails on the first pinned message the statement does not hold.
"""

from __future__ import annotations

import re

from evalharness.quality.gate import DEFAULT, Check, Thresholds
from evalharness.quality.goldpatch import parse_diff

_LITERAL = re.compile(r"""'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\\n]|\\.)*)`""")
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\{[^{}]*\}|%[-+ #0-9.]*[sdifrxXeEgGoc]|\\[nrt]")
_LETTER = re.compile(r"[A-Za-z]")
_DOCTEST = (">>>", "...")


def messages(patch: str, min_words: int = DEFAULT.pinned_min_words) -> list[str]:
    """The messages the patch adds: runs of ``min_words`` words or more in string literals of added lines that
    its removed lines do not hold."""
    files = parse_diff(patch)
    removed = _squash(" ".join(line for f in files for line in f.removed))
    found: list[str] = []
    for change in files:
        for before, line in zip(["", *change.added], change.added):
            if before.strip().startswith(_DOCTEST):
                continue  # a doctest's expected output: what the function returns, no message
            for literal in _LITERAL.finditer(line):
                text = next(g for g in literal.groups() if g is not None)
                for run in _PLACEHOLDER.split(text):
                    run = run.strip(" \t.,;:!?-")
                    if _words(run) >= min_words and _squash(run) not in removed and run not in found:
                        found.append(run)
    return found


def _words(text: str) -> int:
    """Words separated by spaces (an identifier such as ``random_combination`` is one)."""
    return sum(bool(_LETTER.search(token)) for token in text.split())


def check_pinned(statement: str, gold: str, test_patch: str, thresholds: Thresholds = DEFAULT) -> Check:
    """Fails when the test patch's added lines hold a message the gold patch adds and the statement does not."""
    tests = _squash(" ".join(line for f in parse_diff(test_patch) for line in f.added))
    stated = _squash(statement)
    for message in messages(gold, thresholds.pinned_min_words):
        key = _squash(message)
        if key in tests and key not in stated:
            return Check("pinned_message", False, f"the tests check the message {message[:120]!r} word for word; "
                         "the gold patch writes it and the statement does not give it")
    return Check("pinned_message", True, "the tests pin no message of the gold patch that the statement lacks")


def _squash(text: str) -> str:
    return " ".join(text.lower().split())
