"""Which date a drift day is (pure): a calendar date in the stream's time zone, UTC unless it says otherwise.

A day is not the trials' wall-clock time: `drift run` counts its trials for one date, ``--day`` when given
(every stream), else today in each stream's ``timezone`` (an IANA name, read with ``zoneinfo``). A cron job
at 06:00 local time on a machine east of UTC+6 runs before midnight UTC: in UTC that is still yesterday's
date; with ``timezone: Asia/Tokyo`` (say) it counts for the local date.
"""

from __future__ import annotations

from datetime import date, datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["zone", "today_in", "stream_days"]


def zone(name: str) -> tzinfo:
    """The IANA time zone ``name``; ValueError naming it when there is no such zone. UTC needs no time zone
    database (a slim container may have none)."""
    if name == "UTC":
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not a time zone: give an IANA name such as UTC, Europe/Paris or "
                         "Asia/Tokyo") from None


def today_in(name: str, now: datetime | None = None) -> date:
    """The date it is in zone ``name`` at ``now`` (an aware datetime; default: the current time)."""
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        raise ValueError("now must be an aware datetime")
    return now.astimezone(zone(name)).date()


def stream_days(zones: dict[str, str], day: date | None, now: datetime | None = None) -> dict[str, date]:
    """Each stream's day: ``day`` for every stream when given, else today in the stream's time zone."""
    return {stream: day or today_in(tz, now) for stream, tz in zones.items()}
