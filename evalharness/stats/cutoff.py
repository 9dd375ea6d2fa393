"""Contamination dates (pure): which tasks a date window holds, and scores split at a training cutoff.

A model may have seen a task created before its training cutoff, so one score mixes two
populations. ``cutoff_split`` gives each configuration whose model declares a cutoff its score on
tasks created on or before the cutoff and on tasks created after it, each with the interval the
score table uses (``summary.summarize``: task means, t or Wilson), and the difference after minus
before with an interval for two independent sets of tasks (Newcombe with one seed per task, else
Welch's t on task means). A negative difference is what contamination predicts.

Dates are ISO 8601: a date (``2024-04-30``) or a time (``2024-04-30T12:00:00Z``, ``...+02:00``); a
time without a zone is UTC. "After D" and "before D" are strict, and a date means its whole day
(UTC): after 2024-04-30 is from 2024-05-01T00:00Z on, before 2024-05-01 is until the end of
2024-04-30. So a cutoff of 2024-04-30 puts a task of that day *before* it. A task's ``created_at``
is an instant (a date alone: the start of its day). Tasks without a readable ``created_at`` are
never guessed into a side: a filter leaves them out and names them, a split counts them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from evalharness.errors import UserError
from evalharness.stats._frame import per_task, require_columns, usable_trials
from evalharness.stats.intervals import newcombe_difference, t_interval
from evalharness.stats.summary import SMALL_N, summarize

SIDES = ("before", "after")


@dataclass(frozen=True)
class When:
    """The span a date or time names: [start, end); a time has ``end == start``."""

    start: datetime
    end: datetime

    @property
    def is_day(self) -> bool:
        return self.end > self.start


def parse_when(text: str, what: str = "date") -> When:
    """A date or time (ISO 8601) as its span in UTC; a UserError naming ``what`` when it is neither."""
    value = (text or "").strip()
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise UserError(f"{what}: {text!r} is not a date",
                        "give YYYY-MM-DD (a whole day, UTC) or an ISO 8601 time such as 2024-04-30T12:00:00Z") from None
    day = len(value) == 10
    moment = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
    return When(moment, moment + timedelta(days=1) if day else moment)


def created_instant(text: str | None) -> datetime | None:
    """A task's ``created_at`` as an instant (a date: its start), or None when empty or unreadable."""
    if not text or not str(text).strip():
        return None
    try:
        return parse_when(str(text)).start
    except UserError:
        return None


def is_after(created: datetime, bound: When) -> bool:
    return created >= bound.end if bound.is_day else created > bound.start


def is_before(created: datetime, bound: When) -> bool:
    return created < bound.start


@dataclass
class Selection:
    """Tasks a date window keeps, and those it cannot place (named, never dropped silently)."""

    kept: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    undated: list[str] = field(default_factory=list)
    """No created_at, or one that is not a date (``unreadable`` says which)."""
    unreadable: dict[str, str] = field(default_factory=dict)


def select_created(created: Mapping[str, str | None], *, after: str | None = None,
                   before: str | None = None) -> Selection:
    """The task ids (``created``: id -> created_at) created after ``after`` and before ``before`` (strict)."""
    lo = parse_when(after, "--created-after") if after else None
    hi = parse_when(before, "--created-before") if before else None
    chosen = Selection()
    for task_id, text in created.items():
        moment = created_instant(text)
        if lo is None and hi is None:
            chosen.kept.append(task_id)
        elif moment is None:
            chosen.undated.append(task_id)
            if text and str(text).strip():
                chosen.unreadable[task_id] = str(text)
        elif (lo is None or is_after(moment, lo)) and (hi is None or is_before(moment, hi)):
            chosen.kept.append(task_id)
        else:
            chosen.outside.append(task_id)
    return chosen


def side_of(text: str | None, cutoff: When) -> str:
    """``before``, ``after`` or ``undated``: where a task's created_at falls against a cutoff."""
    moment = created_instant(text)
    if moment is None:
        return "undated"
    return "after" if is_after(moment, cutoff) else "before"


SPLIT_COLUMNS = ["config", "model", "cutoff", *[f"{c}_{s}" for s in SIDES for c in
                 ("n_tasks", "n_trials", "resolve_rate", "ci_low", "ci_high", "interval")],
                 "n_undated", "difference", "diff_low", "diff_high", "diff_method", "note"]


def cutoff_split(df: pd.DataFrame, created: Mapping[str, str | None], cutoffs: Mapping[str, str | None], *,
                 level: float = 0.95, small_n: int = SMALL_N) -> pd.DataFrame:
    """One row per configuration whose model has a cutoff in ``cutoffs`` (model -> date): its score on tasks
    created on or before the cutoff and after it, with intervals, and the difference after - before.

    ``created``: task id -> created_at. Infrastructure failures and task errors are left out, as in the
    score table; undated tasks are counted (``n_undated``), in neither side."""
    require_columns(df, ["config", "model", "task_id", "resolved"], "cutoff_split")
    trials, _ = usable_trials(df)
    rows = []
    for (config, model), group in trials.groupby(["config", "model"], sort=True, observed=True):
        if not cutoffs.get(model):
            continue
        cutoff = parse_when(str(cutoffs[model]), f"training_cutoff of {model}")
        side = group["task_id"].map(lambda t: side_of(created.get(t), cutoff))
        rows.append(_split_row(str(config), str(model), str(cutoffs[model]), group.assign(_side=side),
                               level, small_n))
    return pd.DataFrame(rows, columns=SPLIT_COLUMNS)


def _split_row(config: str, model: str, cutoff: str, trials: pd.DataFrame, level: float, small_n: int) -> dict:
    row: dict = {"config": config, "model": model, "cutoff": cutoff,
                 "n_undated": int(trials.loc[trials["_side"] == "undated", "task_id"].nunique())}
    dated = trials[trials["_side"] != "undated"]
    summary = (summarize(per_task(dated, ["_side"]), ["_side"], level=level, small_n=small_n).set_index("_side")
               if len(dated) else pd.DataFrame())
    notes = []
    for s in SIDES:
        got = summary.loc[s] if s in summary.index else None
        row.update({f"n_tasks_{s}": int(got["n_tasks"]) if got is not None else 0,
                    f"n_trials_{s}": int(got["n_trials"]) if got is not None else 0,
                    f"resolve_rate_{s}": float(got["resolve_rate"]) if got is not None else np.nan,
                    f"ci_low_{s}": float(got["ci_low"]) if got is not None else np.nan,
                    f"ci_high_{s}": float(got["ci_high"]) if got is not None else np.nan,
                    f"interval_{s}": str(got["interval"]) if got is not None else "none"})
        if got is None:
            notes.append(f"no task created {s} the cutoff")
        elif got["note"]:
            notes.append(f"{s}: {got['note']}")
    row.update(zip(("difference", "diff_low", "diff_high", "diff_method"), _difference(summary, level)))
    row["note"] = "; ".join(notes)
    return row


def _difference(summary: pd.DataFrame, level: float) -> tuple[float, float, float, str]:
    """after - before: Newcombe's interval on task counts with one seed per task, else Welch's t on task means."""
    if not set(SIDES) <= set(summary.index):
        return np.nan, np.nan, np.nan, "none"
    a, b = summary.loc["after"], summary.loc["before"]
    diff = float(a["resolve_rate"] - b["resolve_rate"])
    if a["n_seeds_max"] == 1 and b["n_seeds_max"] == 1:
        lo, hi = newcombe_difference(a["successes"], a["n_tasks"], b["successes"], b["n_tasks"], level)
        return diff, lo, hi, "newcombe"
    if a["n_tasks"] < 2 or b["n_tasks"] < 2:
        return diff, np.nan, np.nan, "welch"
    va, vb = a["se"] ** 2, b["se"] ** 2
    se = float(np.sqrt(va + vb))
    dof = float((va + vb) ** 2 / (va ** 2 / (a["n_tasks"] - 1) + vb ** 2 / (b["n_tasks"] - 1))) if se > 0 else np.nan
    lo, hi = t_interval(diff, se, dof, level)
    return diff, float(lo), float(hi), "welch"
