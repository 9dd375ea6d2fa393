"""Which mutants to try and keep (pure): stratified order, duplicates, the final spread.

- **Order.** Sites are tried round-robin: across modules, then across the functions of a module, then
  across mutation classes, with every tie broken by a ``random.Random(seed)``. The first N kept
  mutants are then spread over modules and functions as far as the kills allow.
- **Duplicates.** Two killed mutants are duplicates when they make the same set of tests fail *and*
  change the same code the same way (the hunk's changed lines, whitespace removed): the same
  defect in two copies of one line. The first one discovered is kept.
- **Spread.** At most ``per_function`` kept tasks per function: another kill in a function that already
  has its share waits until every other candidate has been taken.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Callable, Hashable, Sequence, TypeVar

T = TypeVar("T")


def spread(items: Sequence[T], keys: Sequence[Callable[[T], Hashable]], rng: random.Random) -> list[T]:
    """``items`` interleaved round-robin by ``keys[0]``, each group interleaved by the next key, leaves
    shuffled; group order shuffled by ``rng``, so the result depends only on the items and the seed."""
    if not keys:
        out = sorted(items, key=repr)  # the input's order never matters, only the seed
        rng.shuffle(out)
        return out
    groups: dict[Hashable, list[T]] = defaultdict(list)
    for item in items:
        groups[keys[0](item)].append(item)
    names = sorted(groups, key=repr)
    rng.shuffle(names)
    lanes = [spread(groups[name], keys[1:], rng) for name in names]
    out: list[T] = []
    for depth in range(max((len(lane) for lane in lanes), default=0)):
        out += [lane[depth] for lane in lanes if depth < len(lane)]
    return out


def duplicate_key(failing: frozenset[str] | set[str], hunk_code: str) -> tuple:
    """Same failing tests and the same change of code: the same task twice."""
    return (frozenset(failing), hunk_code)


def dedupe(candidates: Sequence[T], key: Callable[[T], Hashable]) -> tuple[list[T], list[tuple[T, T]]]:
    """Kept candidates in order, and (duplicate, the kept one it repeats) pairs."""
    first: dict[Hashable, T] = {}
    kept, dropped = [], []
    for item in candidates:
        k = key(item)
        if k in first:
            dropped.append((item, first[k]))
        else:
            first[k] = item
            kept.append(item)
    return kept, dropped
