"""The gate's shape (pure): one ``Check`` per rule with a reason a person can read, the ``Thresholds`` every
rule reads, and ``run_gate``, the one entry ``packs mine``, ``packs add-task`` and the SWE-bench import call.

A check's ``name`` is the verdict a rejected candidate gets in the mining report (``VERDICTS``); a check
that passes keeps its name and says why it passed, so a kept task's record shows what was checked.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Thresholds:
    """Every number the gate decides by (documented in docs/mining.md, "The quality gate")."""

    title_min_words: int = 6
    """A statement with fewer words (links, issue numbers and hashes left out) is a bare title."""
    named_min_words: int = 12
    """...and one with fewer than this that names no code (no `name`, name(), a_b, a.b) is one too."""
    body_min_words: int = 25
    """A body with this many words (tooling lines left out) describes something: a tooling title or a commit
    hash is then no reason to reject."""
    max_gold_bytes: int = 50_000
    """A larger gold patch is rejected (the largest hand-written one in humanize's and more-itertools'
    histories is 27 KB, SWE-bench Lite's 5 KB)."""
    data_share: float = 0.5
    """A gold patch is data-dominated when more than this share of its changed lines is data..."""
    data_min_lines: int = 20
    """...and at least this many changed lines are (a one-line fixture edit is no data dump)."""
    table_min_lines: int = 100
    """Literal-only lines of a code file count as data from this many in the file on (a generated table; a
    hand-written list of primes or an ``__all__`` of 40 names is code)."""
    squash_max_messages: int = 2
    """A statement made of more commit messages of a squashed branch than this is rejected (``squashed_branch``):
    in 20 mined tasks read by hand, 5 of the 6 squashes of 3 or more messages were unfair (BENCHMARKS.md,
    "Mined tasks read by hand")."""
    pinned_min_words: int = 4
    """A message (a run of words in a string literal the gold patch adds) of at least this many words that the
    tests check word for word must be in the statement (``pinned_message``)."""
    f2p_min_covered_lines: int = 1
    """The coverage gate: the FAIL_TO_PASS tests must execute at least this many of the executable lines the
    gold patch changes (``quality/coverage.py``), else ``f2p_misses_change``."""


DEFAULT = Thresholds()

VERDICTS = {
    "gold_too_large": "the gold patch is larger than the size cap (--max-gold-bytes)",
    "gold_generated": "the gold patch changes generated, compiled, vendored, minified or lock files",
    "gold_data_dominated": "most of the gold patch's changed lines are data (data files, literal tables)",
    "changelog": "the statement is a changelog or release note, not a description of behaviour",
    "ci_note": "the statement is a CI, tooling, formatting or dependency note, not a description of behaviour",
    "bare_title": "the statement is a bare title: too short, or short and naming no code, to tell what to build",
    "unseen_commit": "the statement points at a commit the agent cannot see (a revert, a commit hash)",
    "squashed_branch": "the statement is the commit messages of a squashed branch (several changes and fix-ups), "
                       "not a description of one behaviour",
    "pinned_message": "the tests check, word for word, a message the gold patch adds and the statement does not give",
}
"""Every check of the gate, in the order it runs (gold patch, then statement, then the tests against both), named as the verdict a candidate
gets when it fails."""


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    reason: str

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Gate:
    """The checks of one task, in the order they ran."""

    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_json(self) -> dict:
        return {"passed": self.passed, "checks": [c.to_json() for c in self.checks]}

    def summary(self) -> str:
        """One line: the failed checks with their reasons, or that every check passed."""
        if self.passed:
            return f"all {len(self.checks)} checks passed"
        return "; ".join(f"{c.name}: {c.reason}" for c in self.failed)


def run_gate(statement: str | None, patch: str | None, *, project: str = "", names: set[str] = frozenset(),
             squashed: int = 0, pinned: tuple[str, str] | None = None, thresholds: Thresholds = DEFAULT) -> Gate:
    """The gold patch's checks, then the statement's (either may be None: not checked). ``squashed``: how many
    commit messages of a merged branch the statement is made of (0: it is one message, an issue or a PR).
    ``pinned``: (gold patch, test patch), for ``pinned_message`` against the statement (None: not checked)."""
    from evalharness.quality.goldpatch import check_gold
    from evalharness.quality.statement import check_statement

    checks: list[Check] = []
    if patch is not None:
        checks += check_gold(patch, thresholds)
    if statement is not None:
        checks += check_statement(statement, project=project, names=names, squashed=squashed, thresholds=thresholds)
    if statement is not None and pinned is not None:
        from evalharness.quality.pinned import check_pinned

        checks.append(check_pinned(statement, *pinned, thresholds=thresholds))
    return Gate(checks)

