"""The drift tables, on their own MetaData, created beside the store's tables on the same engine.

- ``drift_days``: one row per (stream, day): the day's run and its status and counts.
- ``drift_baselines``: one row per baseline epoch of a stream: the day it starts collecting from,
  the settings it was made with, and once frozen its first and last day and the frozen baseline.
  ``drift rebaseline`` adds a row; the latest row of a stream is its current epoch.
- ``drift_alerts``: one row per (stream, day, kind), with its numbers and when ``--on-alert`` was
  told (a re-run of the same day does not tell it again). Append-only: an alert is kept as it was
  first raised (its ``raised_at`` and numbers), keyed by the day it was raised; a later run never
  rewrites, moves or removes it.
- ``drift_notes``: append-only notes of what a later run of an already-evaluated day found
  (``2026-02-07 re-run on 2026-12-06: now ok ...``): a late result adds information beside the
  alerts, never in their place.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from evalharness.store import Store

__all__ = ["DriftTables", "metadata"]

metadata = sa.MetaData()

drift_days = sa.Table(
    "drift_days", metadata,
    sa.Column("stream", sa.String(80), primary_key=True),
    sa.Column("day", sa.String(10), primary_key=True),
    sa.Column("run_id", sa.String(80), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("planned", sa.Integer, nullable=False),
    sa.Column("usable", sa.Integer, nullable=False),
    sa.Column("resolved", sa.Integer, nullable=False),
    sa.Column("infra", sa.Integer, nullable=False),
    sa.Column("task_errors", sa.Integer, nullable=False, server_default="0"),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

drift_baselines = sa.Table(
    "drift_baselines", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("stream", sa.String(80), nullable=False, index=True),
    sa.Column("from_day", sa.String(10), nullable=False),
    sa.Column("settings", sa.Text, nullable=False),
    sa.Column("frozen_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("first_day", sa.String(10), nullable=True),
    sa.Column("last_day", sa.String(10), nullable=True),
    sa.Column("json", sa.Text, nullable=True),
)

drift_alerts = sa.Table(
    "drift_alerts", metadata,
    sa.Column("stream", sa.String(80), primary_key=True),
    sa.Column("day", sa.String(10), primary_key=True),
    sa.Column("kind", sa.String(20), primary_key=True),
    sa.Column("json", sa.Text, nullable=False),
    sa.Column("notified_at", sa.DateTime(timezone=True), nullable=True),
)


drift_notes = sa.Table(
    "drift_notes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("stream", sa.String(80), nullable=False, index=True),
    sa.Column("day", sa.String(10), nullable=False),
    sa.Column("noted_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("json", sa.Text, nullable=False),
)


def _now() -> datetime:
    return datetime.now(timezone.utc)


class DriftTables:
    """Reads and writes of the drift tables through a Store's engine."""

    def __init__(self, store: Store):
        self.store, self.engine = store, store.engine
        metadata.create_all(self.engine)

    # --- days ---
    def day(self, stream: str, day: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(drift_days).where((drift_days.c.stream == stream) &
                                                           (drift_days.c.day == day))).mappings().first()
        return dict(row) if row else None

    def days(self, stream: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(drift_days).where(drift_days.c.stream == stream)
                                .order_by(drift_days.c.day)).mappings()
            return [dict(r) for r in rows]

    def streams(self) -> list[str]:
        with self.engine.connect() as conn:
            names = {r[0] for r in conn.execute(sa.select(drift_days.c.stream).distinct())}
            names |= {r[0] for r in conn.execute(sa.select(drift_baselines.c.stream).distinct())}
        return sorted(names)

    def put_day(self, stream: str, day: str, **values: Any) -> None:
        values = {**values, "updated_at": _now()}
        key = (drift_days.c.stream == stream) & (drift_days.c.day == day)
        with self.engine.begin() as conn:
            if conn.execute(sa.select(drift_days.c.day).where(key)).first():
                conn.execute(drift_days.update().where(key).values(**values))
            else:
                conn.execute(drift_days.insert().values(stream=stream, day=day, **values))

    # --- baselines ---
    def epoch(self, stream: str) -> dict[str, Any] | None:
        """The stream's current baseline epoch (the latest row), settings and baseline decoded."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(drift_baselines).where(drift_baselines.c.stream == stream)
                               .order_by(drift_baselines.c.id.desc()).limit(1)).mappings().first()
        return None if row is None else _decoded(row)

    def epochs(self, stream: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(drift_baselines).where(drift_baselines.c.stream == stream)
                                .order_by(drift_baselines.c.id)).mappings()
            return [_decoded(r) for r in rows]

    def new_epoch(self, stream: str, from_day: str, settings: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(drift_baselines.insert().values(stream=stream, from_day=from_day,
                                                         settings=json.dumps(settings, sort_keys=True)))

    def freeze(self, epoch_id: int, *, first_day: str, last_day: str, baseline: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(drift_baselines.update().where(drift_baselines.c.id == epoch_id).values(
                frozen_at=_now(), first_day=first_day, last_day=last_day,
                json=json.dumps(baseline, sort_keys=True, default=_plain)))

    # --- alerts ---
    def put_alert(self, alert: dict[str, Any]) -> bool:
        """Record an alert unless one of its (stream, day, kind) is recorded already (append-only: the
        recorded one is kept as raised); True when it was not told to --on-alert before."""
        key = ((drift_alerts.c.stream == alert["stream"]) & (drift_alerts.c.day == alert["day"]) &
               (drift_alerts.c.kind == alert["kind"]))
        text = json.dumps({**alert, "raised_at": _now().isoformat(timespec="seconds")}, sort_keys=True,
                          default=_plain)
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(drift_alerts.c.notified_at).where(key)).first()
            if row is None:
                conn.execute(drift_alerts.insert().values(stream=alert["stream"], day=alert["day"],
                                                          kind=alert["kind"], json=text))
                return True
            return row.notified_at is None

    def mark_notified(self, alerts: list[dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            for a in alerts:
                conn.execute(drift_alerts.update().where(
                    (drift_alerts.c.stream == a["stream"]) & (drift_alerts.c.day == a["day"]) &
                    (drift_alerts.c.kind == a["kind"])).values(notified_at=_now()))

    def alerts(self, stream: str | None = None, day: str | None = None) -> list[dict[str, Any]]:
        """Recorded alerts as raised (of a stream, of a day, or both), by day, stream and kind."""
        query = sa.select(drift_alerts).order_by(drift_alerts.c.day, drift_alerts.c.stream, drift_alerts.c.kind)
        if stream is not None:
            query = query.where(drift_alerts.c.stream == stream)
        if day is not None:
            query = query.where(drift_alerts.c.day == day)
        with self.engine.connect() as conn:
            return [{**json.loads(r.json), "notified_at": r.notified_at} for r in conn.execute(query)]

    # --- notes ---
    def add_note(self, note: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(drift_notes.insert().values(stream=note["stream"], day=note["day"], noted_at=_now(),
                                                     json=json.dumps(note, sort_keys=True, default=_plain)))

    def notes(self, stream: str | None = None, day: str | None = None) -> list[dict[str, Any]]:
        """Notes in the order they were written (of a stream, of a day, or both)."""
        query = sa.select(drift_notes).order_by(drift_notes.c.id)
        if stream is not None:
            query = query.where(drift_notes.c.stream == stream)
        if day is not None:
            query = query.where(drift_notes.c.day == day)
        with self.engine.connect() as conn:
            return [json.loads(r.json) for r in conn.execute(query)]


def _decoded(row: Any) -> dict[str, Any]:
    """A drift_baselines row with its settings and baseline decoded."""
    baseline = json.loads(row["json"]) if row["json"] else None
    return {**row, "settings": json.loads(row["settings"]), "baseline": baseline}


def _plain(value: Any) -> Any:
    """JSON for numpy scalars and other stragglers."""
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
