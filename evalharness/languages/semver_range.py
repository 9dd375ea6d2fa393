"""Does a package.json ``engines.node`` range accept a Node version? (pure; npm's range grammar, the common part)

Handles ``||`` alternatives, hyphen ranges (``16 - 20``), comparators (``>=``, ``>``, ``<=``, ``<``, ``=``),
caret, tilde and x-ranges (``18``, ``18.x``, ``*``). A range it cannot read gives None, never a guess.
"""

from __future__ import annotations

import re

_PART = re.compile(r"^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(?:[-+].*)?$")
_COMPARATOR = re.compile(r"^(>=|<=|>|<|=|\^|~>?|)\s*(.+)$")

Version = tuple[int, int, int]


def _partial(text: str) -> list[int | None] | None:
    match = _PART.match(text.strip())
    if not match:
        return None
    parts = [None if g is None or g in "xX*" else int(g) for g in match.groups()]
    for i in range(1, 3):  # after a wildcard everything is a wildcard
        if parts[i - 1] is None:
            parts[i] = None
    return parts


def _filled(parts: list[int | None]) -> Version:
    return tuple(p or 0 for p in parts)  # type: ignore[return-value]


def _upper(parts: list[int | None], level: int) -> Version:
    """The exclusive bound one step above ``parts`` at ``level`` (0 major, 1 minor)."""
    major, minor = parts[0] or 0, parts[1] or 0
    return (major + 1, 0, 0) if level == 0 else (major, minor + 1, 0)


def _comparator(token: str, version: Version) -> bool | None:
    op, rest = _COMPARATOR.match(token).groups()
    parts = _partial(rest)
    if parts is None:
        return None
    low = _filled(parts)
    known = sum(p is not None for p in parts)
    if op in ("", "="):
        return known == 0 or version[:known] == tuple(parts[:known])
    if op == "^":
        level = 0 if (parts[0] or 0) > 0 or known == 1 else 1
        return low <= version < _upper(parts, level)
    if op.startswith("~"):
        return low <= version < _upper(parts, 0 if known == 1 else 1)
    if op == ">=":
        return version >= low
    if op == "<":
        return version < low
    if op == ">":
        return version >= _upper(parts, 0 if known == 1 else 1) if known < 3 else version > low
    return version < _upper(parts, 0 if known == 1 else 1) if known < 3 else version <= low  # "<="


def _alternative(text: str, version: Version) -> bool | None:
    hyphen = re.match(r"^\s*(\S+)\s+-\s+(\S+)\s*$", text)
    if hyphen:
        return _all([f">={hyphen.group(1)}", f"<={hyphen.group(2)}"], version)
    tokens = re.sub(r"(>=|<=|>|<|=|\^|~>?)\s+", r"\1", text).split()
    return _all(tokens or ["*"], version)


def _all(tokens: list[str], version: Version) -> bool | None:
    answers = [_comparator(t, version) for t in tokens]
    return None if None in answers else all(answers)


def accepts(spec: str, version: str) -> bool | None:
    """Does the range ``spec`` accept ``version`` ("18.20.4")? None when the range cannot be read."""
    want = _partial(version)
    if want is None or None in want:
        raise ValueError(f"not a full version: {version!r}")
    answers = [_alternative(alt, _filled(want)) for alt in spec.split("||")]
    if None in answers:
        return None
    return any(answers)
