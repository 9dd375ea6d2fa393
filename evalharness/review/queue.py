"""The review queue: which patches are reviewed, under which opaque ids, in which order for each reviewer.

An *item* is one patch to judge: an agent trial of the runs that left a non-empty ``patch.diff`` in its trial
folder (``runs_dir / detail``; the reference harness ``oracle`` is left out, its patch *is* the gold patch, which
the gold arm already reviews blinded), or a task's gold patch from the pack the runs were made with (the gold arm,
the reviewers' own baseline). Decisions made here, all pure (no store, no files; ``sources`` reads those):

- ``--sample K`` draws K agent items stratified by configuration (harness/model): each configuration gets its
  share by largest remainder (at least one each while K allows), drawn by a generator seeded with ``seed``, so
  every reviewer who passes the same ``--sample`` and ``--seed`` reviews the same patches.
- Gold: ``gold`` items (default: one per ``GOLD_EVERY`` agent items, rounded up), one per task, drawn seeded from
  the tasks of the agent items, so the baseline is measured on the tasks the agents were judged on.
- Ids: ``item_id`` is an HMAC of the item's key (``agent:run:trial`` or ``gold:pack:task``) under a secret the
  caller keeps (per runs folder); the same patch has the same id in every queue, and no id says what it is.
- Order: a shuffle seeded by the reviewer's name (``reviewer_order``), then the items that still need reviewers
  (fewer than ``needed`` distinct reviewers other than this one) before those that have enough, and this
  reviewer's own reviewed items last. Only counts of reviewers enter the order, never their verdicts.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

GOLD_EVERY = 5
"""One gold item per this many agent items by default."""
SKIPPED_HARNESSES = frozenset({"oracle"})
"""Harnesses whose patches are not reviewed: the oracle applies the gold patch."""


@dataclass
class Item:
    """One patch to review. ``public()`` is all the page sees; the rest stays on the server."""

    item_id: str
    arm: str
    pack: str
    task_id: str
    patch: str
    statement: str = ""
    tests: dict[str, dict[str, str]] = field(default_factory=dict)
    """``{"FAIL_TO_PASS": {test: status}, "PASS_TO_PASS": {test: status}}``."""
    trajectory: dict[str, Any] | None = None
    """Summary (steps, commands, final message); shown only when trajectories are on (never with gold)."""
    run_id: str | None = None
    trial_id: str | None = None
    config: str | None = None

    @property
    def key(self) -> str:
        return item_key(self.arm, self.pack, self.task_id, self.run_id, self.trial_id)

    def store_fields(self) -> dict[str, Any]:
        """What ``Store.record_reviews`` needs to name the item."""
        return {"pack": self.pack, "task_id": self.task_id, "arm": self.arm, "run_id": self.run_id,
                "trial_id": self.trial_id}


def item_key(arm: str, pack: str, task_id: str, run_id: str | None = None, trial_id: str | None = None) -> str:
    return f"agent:{run_id}:{trial_id}" if arm == "agent" else f"gold:{pack}:{task_id}"


def opaque_id(secret: bytes, key: str) -> str:
    """A short id that names the item to the server holding ``secret`` and to nobody else."""
    return "i" + hmac.new(secret, key.encode(), hashlib.sha256).hexdigest()[:12]


def sample_agent(items: list[Item], k: int | None, seed: int) -> list[Item]:
    """``k`` items stratified by configuration (all of them when ``k`` is None or at least their number)."""
    if k is None or k >= len(items):
        return list(items)
    if k < 0:
        raise ValueError("a sample size is not negative")
    strata: dict[str, list[Item]] = {}
    for item in sorted(items, key=lambda i: i.key):
        strata.setdefault(item.config or "", []).append(item)
    shares = _allocate(k, {c: len(v) for c, v in strata.items()})
    rng = random.Random(seed)
    chosen = []
    for config in sorted(strata):
        chosen += rng.sample(strata[config], shares[config])
    return chosen


def _allocate(k: int, sizes: Mapping[str, int]) -> dict[str, int]:
    """``k`` split over strata in proportion to ``sizes`` (largest remainder, ties by name), none above its size,
    and every stratum at least one while ``k`` allows."""
    total = sum(sizes.values())
    names = sorted(sizes)
    share = {c: min(sizes[c], math.floor(k * sizes[c] / total)) for c in names}
    if k >= len(names):
        for c in names:
            share[c] = max(share[c], 1)
    while sum(share.values()) > k:  # the minimum of one took too many: take back from the largest shares
        c = max(names, key=lambda n: (share[n], n))
        share[c] -= 1
    by_remainder = sorted(names, key=lambda c: (-(k * sizes[c] / total - math.floor(k * sizes[c] / total)), c))
    while sum(share.values()) < k:
        for c in by_remainder:
            if sum(share.values()) < k and share[c] < sizes[c]:
                share[c] += 1
    return share


def gold_count(n_agent: int, gold: int | None, n_tasks: int) -> int:
    """How many gold items: ``gold`` when given (at most one per task), else one per ``GOLD_EVERY`` agent items."""
    wanted = math.ceil(n_agent / GOLD_EVERY) if gold is None else gold
    if gold is not None and gold > n_tasks:
        raise ValueError(f"--gold {gold}: the agent items cover only {n_tasks} tasks (one gold item per task)")
    return min(wanted, n_tasks)


def pick_gold(agent: list[Item], gold: list[Item], count: int, seed: int) -> list[Item]:
    """``count`` gold items of the agent items' tasks, drawn seeded."""
    tasks = {(i.pack, i.task_id) for i in agent}
    candidates = sorted((g for g in gold if (g.pack, g.task_id) in tasks), key=lambda g: g.key)
    return random.Random(f"gold:{seed}").sample(candidates, min(count, len(candidates)))


def reviewer_order(item_ids: Iterable[str], reviewer: str) -> list[str]:
    """``item_ids`` shuffled by a seed derived from the reviewer's name: the same every time for them."""
    seed = int.from_bytes(hashlib.sha256(f"review-order:{reviewer.strip()}".encode()).digest()[:8], "big")
    ids = sorted(set(item_ids))
    random.Random(seed).shuffle(ids)
    return ids


def queue_order(item_ids: Iterable[str], reviewer: str, reviewers_of: Mapping[str, set[str]], needed: int
                ) -> list[str]:
    """The reviewer's order: items still needing reviewers first, then those with enough, then their own."""
    def rank(item_id: str) -> int:
        who = reviewers_of.get(item_id, set())
        if reviewer in who:
            return 2
        return 0 if len(who) < needed else 1

    return sorted(reviewer_order(item_ids, reviewer), key=rank)


def needing(item_ids: Iterable[str], reviewers_of: Mapping[str, set[str]], needed: int) -> list[str]:
    """Items with fewer than ``needed`` distinct reviewers."""
    return [i for i in item_ids if len(reviewers_of.get(i, set())) < needed]
