"""Which tasks a stream runs on a day (pure).

A fixed panel runs the same tasks every day. A sample draws ``size`` tasks stratified by a task
field (``repo`` by default): each stratum gets its share of the sample by largest remainder
(at least one task per stratum while the size allows), then tasks are drawn without replacement
inside each stratum. The draw is seeded by the stream's name and the day (or the name alone when
``rotate`` is false), so the same day always gets the same tasks, on any machine.
"""

from __future__ import annotations

import hashlib
from datetime import date

import numpy as np

from evalharness.drift.config import SampleSpec, StreamConfig
from evalharness.errors import ConfigError

__all__ = ["day_tasks", "stratified_sample", "seed_of"]


def seed_of(*parts: str) -> int:
    """A 64-bit seed from text: the same on every machine and Python (no hash randomisation)."""
    return int.from_bytes(hashlib.sha256(":".join(parts).encode()).digest()[:8], "big")


def day_tasks(stream: StreamConfig, tasks: dict[str, dict[str, object]], day: date) -> list[str]:
    """The task ids ``stream`` runs on ``day``; ``tasks`` maps each pack task id to its fields."""
    if stream.tasks is not None:
        unknown = [t for t in stream.tasks if t not in tasks]
        if unknown:
            raise ConfigError(f"stream {stream.name}: tasks not in pack {stream.pack}: {', '.join(unknown)}")
        return list(stream.tasks)
    assert stream.sample is not None
    seed = seed_of(stream.name, day.isoformat()) if stream.sample.rotate else seed_of(stream.name)
    return stratified_sample(tasks, stream.sample, seed, where=f"stream {stream.name}")


def stratified_sample(tasks: dict[str, dict[str, object]], spec: SampleSpec, seed: int,
                      where: str = "sample") -> list[str]:
    """``spec.size`` task ids, strata in proportion to their sizes, sorted by id."""
    if spec.size > len(tasks):
        raise ConfigError(f"{where}: sample.size {spec.size} is more than the pack's {len(tasks)} tasks")
    strata: dict[str, list[str]] = {}
    for task_id in sorted(tasks):
        fields = tasks[task_id]
        if spec.strata is not None and spec.strata not in fields:
            raise ConfigError(f"{where}: sample.strata {spec.strata!r} is not a task field "
                              f"(task {task_id} has: {', '.join(sorted(fields))})")
        key = "" if spec.strata is None else str(fields[spec.strata])
        strata.setdefault(key, []).append(task_id)
    shares = _allocate(spec.size, {k: len(v) for k, v in strata.items()})
    rng = np.random.default_rng(seed)
    chosen: list[str] = []
    for key in sorted(strata):
        members = strata[key]
        chosen += [members[i] for i in rng.choice(len(members), size=shares[key], replace=False)]
    return sorted(chosen)


def _allocate(size: int, counts: dict[str, int]) -> dict[str, int]:
    """Proportional allocation by largest remainder, capped by each stratum's size; ties by stratum name."""
    total = sum(counts.values())
    exact = {k: size * n / total for k, n in counts.items()}
    shares = {k: min(counts[k], int(v)) for k, v in exact.items()}
    order = sorted(counts, key=lambda k: (-(exact[k] - int(exact[k])), k))
    while sum(shares.values()) < size:
        for k in order:
            if shares[k] < counts[k] and sum(shares.values()) < size:
                shares[k] += 1
    return shares
