"""A stream's state from the store: its days, its baseline epoch, and the drift verdict so far.

The series a detector sees is built from the stored days alone (no Docker): trials of the
``ok`` and ``partial`` days of the current epoch, each trial dated by its drift day (not by its
wall-clock start), infrastructure trials left out. Outage and empty days are not in it, so the
statistic does not move on them. The first ``baseline_days`` ok days of an epoch are its
baseline; the days after the last of them are monitored.

The statistics come from ``evalharness.stats.monitor`` (freeze_baseline, daily_counts,
detect_drift).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from evalharness.drift.days import COUNTED
from evalharness.drift.tables import DriftTables

__all__ = ["StreamState", "stream_state", "read_history", "freeze_if_due", "settings_of", "baseline_from_dict"]


@dataclass
class StreamState:
    stream: str
    days: list[dict[str, Any]]
    epoch: dict[str, Any] | None
    baseline: Any = None
    baseline_have: int = 0
    baseline_need: int = 0
    monitored: list[str] = field(default_factory=list)
    report: Any = None
    recorded: list[dict[str, Any]] = field(default_factory=list)
    """The alerts recorded as raised (drift_alerts), up to ``until``: never moved by a later result."""
    notes: list[dict[str, Any]] = field(default_factory=list)
    """What later runs of already-evaluated days found (drift_notes), up to ``until``."""

    @property
    def collecting(self) -> bool:
        return self.baseline is None


def settings_of(stream) -> dict[str, Any]:
    """What an epoch is made with (stored with it, so `drift status --db` needs no drift.yaml)."""
    return {"baseline_days": stream.baseline_days, "delta": stream.delta,
            "false_alarms_per_year": stream.false_alarms_per_year, "pmf": stream.pmf,
            "outage_fraction": stream.outage_fraction, "short_baseline": stream.short_baseline}


def baseline_to_dict(baseline: Any) -> dict[str, Any]:
    return baseline.to_dict()


def baseline_from_dict(data: dict[str, Any]) -> Any:
    from evalharness.stats.monitor import DriftBaseline

    return DriftBaseline.from_dict(data)


def _epoch_days(days: list[dict[str, Any]], epoch: dict[str, Any] | None) -> list[dict[str, Any]]:
    start = epoch["from_day"] if epoch else ""
    return [d for d in days if d["day"] >= start]


def day_frame(tables: DriftTables, days: list[dict[str, Any]]) -> pd.DataFrame:
    """The trials of these days, ``started_at`` set to each trial's drift day (UTC midnight)."""
    from evalharness.report.data import trials_frame

    if not days:
        return pd.DataFrame()
    frame = trials_frame(tables.store, [d["run_id"] for d in days])
    day_of = {d["run_id"]: pd.Timestamp(d["day"], tz="UTC") for d in days}
    frame["started_at"] = frame["run_id"].map(day_of)
    return frame


def freeze_if_due(tables: DriftTables, stream: str) -> bool:
    """Freeze the current epoch's baseline once it has ``baseline_days`` ok days; True when it froze now."""
    epoch = tables.epoch(stream)
    if epoch is None or epoch["baseline"] is not None:
        return False
    settings = epoch["settings"]
    ok = [d for d in _epoch_days(tables.days(stream), epoch) if d["status"] == "ok"]
    allow_short = settings.get("short_baseline", True)  # epochs stored before the minimum was enforced
    chosen = _baseline_days(ok, settings["baseline_days"], allow_short)
    if chosen is None:
        return False
    from evalharness.stats.monitor import freeze_baseline

    baseline = freeze_baseline(day_frame(tables, chosen), delta=settings["delta"],
                               false_alarms_per_year=settings["false_alarms_per_year"], pmf=settings["pmf"],
                               allow_short=allow_short)
    tables.freeze(epoch["id"], first_day=chosen[0]["day"], last_day=chosen[-1]["day"],
                  baseline={**baseline_to_dict(baseline)})
    return True


def _baseline_days(ok: list[dict[str, Any]], need: int, allow_short: bool) -> list[dict[str, Any]] | None:
    """The first ``need`` ok days; without ``allow_short``, more ok days until the baseline reaches the minimum
    (days lost to infrastructure can leave ``need`` days short of trials). None: keep collecting."""
    from evalharness.stats.monitor import short_baseline_problem

    for k in range(need, len(ok) + 1):
        if allow_short or not short_baseline_problem(k, sum(int(d.get("usable") or 0) for d in ok[:k])):
            return ok[:k]
    return None


def stream_state(tables: DriftTables, stream: str, until: str | None = None) -> StreamState:
    """Read-only: the stream's days (up to ``until``, an ISO day, when given), epoch, baseline and the
    detector's report on the monitored days. A re-run of an earlier day so gets that day's verdict."""
    days = [d for d in tables.days(stream) if until is None or d["day"] <= until]
    epoch = tables.epoch(stream)
    state = StreamState(stream, days, epoch)
    read_history(tables, state, until)
    if epoch is None:
        return state
    settings = epoch["settings"]
    in_epoch = _epoch_days(days, epoch)
    state.baseline_need = settings["baseline_days"]
    if epoch["baseline"] is None:
        state.baseline_have = sum(1 for d in in_epoch if d["status"] == "ok")
        return state
    state.baseline_have = state.baseline_need
    state.baseline = baseline_from_dict(epoch["baseline"])
    watched = [d for d in in_epoch if d["day"] > epoch["last_day"] and d["status"] in COUNTED and d["usable"] > 0]
    state.monitored = [d["day"] for d in watched]
    if watched:
        from evalharness.stats.monitor import daily_counts, detect_drift

        daily = daily_counts(day_frame(tables, watched))
        state.report = detect_drift(daily, state.baseline, alpha=0.05)
    return state


def read_history(tables: DriftTables, state: StreamState, until: str | None = None) -> None:
    """(Re)read the stream's recorded alerts and notes into ``state``, up to ``until`` when given."""
    kept = (lambda d: until is None or d["day"] <= until)
    state.recorded = [a for a in tables.alerts(state.stream) if kept(a)]
    state.notes = [n for n in tables.notes(state.stream) if kept(n)]


def alarm_days(report: Any) -> list[str]:
    """Every alarm day of a report (the detector restarts after each), or its first alarm."""
    if report is None:
        return []
    return list(report.alarm_days)


def last_statistic(state: StreamState) -> float | None:
    if state.report is None or not state.report.statistic:
        return None
    return float(state.report.statistic[-1])
