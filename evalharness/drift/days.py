"""A day's trials -> the day's status (pure): ok, partial, outage or empty.

- ``outage``: the fraction of the day's planned trials lost to infrastructure (stored as an
  infrastructure outcome, or not stored at all) is at least ``outage_fraction``. The whole day
  is left out of the statistic, which stays as it was.
- ``partial``: some trials lost to infrastructure, fewer than that: the rest count, the lost
  ones are left out (never counted as failures). Running the day again retries them.
- ``empty``: no usable trial and no infrastructure loss (every task a task error).
- ``ok``: every planned trial has a usable result.
Task errors (broken tasks) are left out and named; they are not infrastructure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

__all__ = ["DayStatus", "day_status", "COUNTED"]

NOT_THE_AGENTS = ("task_error", "verifier_error")
"""A broken task, or a Harbor verifier that gave no valid reward: counted apart as task errors, never usable."""
COUNTED = ("ok", "partial")
"""Statuses whose usable trials enter the statistic."""


@dataclass(frozen=True)
class DayStatus:
    status: str
    planned: int
    usable: int
    resolved: int
    infra: int
    task_errors: int
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def day_status(trials: Iterable[Mapping], planned: int, outage_fraction: float = 0.5) -> DayStatus:
    """Classify a day from its stored trials (rows with ``outcome``, ``resolved``, ``infra``)."""
    rows = list(trials)
    task_errors = sum(1 for r in rows if r["outcome"] in NOT_THE_AGENTS)
    infra_rows = [r for r in rows if r["infra"] and r["outcome"] not in NOT_THE_AGENTS]
    usable = [r for r in rows if not r["infra"] and r["outcome"] not in NOT_THE_AGENTS]
    missing = max(0, planned - len(rows))
    lost = len(infra_rows) + missing
    resolved = sum(1 for r in usable if r["resolved"])
    status, reason = _verdict(planned, lost, len(usable), infra_rows, missing, outage_fraction)
    return DayStatus(status, planned, len(usable), resolved, lost, task_errors, reason)


def _verdict(planned: int, lost: int, usable: int, infra_rows: list, missing: int,
             outage_fraction: float) -> tuple[str, str]:
    if planned and lost / planned >= outage_fraction:
        return "outage", f"{lost} of {planned} trials lost to infrastructure{_why(infra_rows, missing)}"
    if lost:
        return "partial", f"{lost} of {planned} trials lost to infrastructure, left out{_why(infra_rows, missing)}"
    if not usable:
        return "empty", "no usable trial (task errors only)" if planned else "no trial planned"
    return "ok", ""


def _why(infra_rows: list, missing: int) -> str:
    """The commonest infrastructure outcomes, e.g. ' (model_unavailable x9, not run x1)'."""
    counts: dict[str, int] = {}
    for r in infra_rows:
        counts[str(r["outcome"])] = counts.get(str(r["outcome"]), 0) + 1
    if missing:
        counts["not run"] = missing
    if not counts:
        return ""
    return " (" + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) + ")"
