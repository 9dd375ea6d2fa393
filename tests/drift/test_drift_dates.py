"""Which date a drift day is (pure, no store): the stream's time zone decides, UTC unless drift.yaml says otherwise.

The newcomer's case (issue 27): cron at 06:00 local time on a machine east of UTC+6 runs before midnight UTC,
so the run counted for the previous date. Pins: the zone ignored (the UTC date used); --day not overriding
the zone; a misspelt zone accepted (and failing at 06:00 the next morning) instead of a clear config error.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from evalharness.drift.config import parse_config
from evalharness.drift.dates import stream_days, today_in
from evalharness.errors import ConfigError


def _local(zone_hours: int, hour: int) -> datetime:
    """``hour`` o'clock on 2026-03-02 in a zone ``zone_hours`` east of UTC, as an aware UTC datetime."""
    return datetime(2026, 3, 2, hour, tzinfo=timezone(timedelta(hours=zone_hours))).astimezone(timezone.utc)


@pytest.mark.parametrize("name,hours", [("Asia/Tokyo", 9), ("Asia/Bangkok", 7), ("Australia/Brisbane", 10)])
def test_a_run_at_six_in_the_morning_east_of_utc_counts_for_the_local_date(name, hours):
    now = _local(hours, 6)
    assert now.date() == date(2026, 3, 1)  # the premise: in UTC it is still the day before
    assert today_in(name, now) == date(2026, 3, 2)
    assert today_in("UTC", now) == date(2026, 3, 1)  # the default: the UTC date, as documented


def test_west_of_utc_a_late_evening_run_keeps_its_local_date():
    now = datetime(2026, 3, 2, 3, 30, tzinfo=timezone.utc)  # 22:30 on 03-01 in New York (UTC-5 in March)
    assert today_in("America/New_York", now) == date(2026, 3, 1)


def test_each_stream_gets_its_own_date_and_day_overrides_every_zone():
    now = _local(9, 6)
    zones = {"tokyo": "Asia/Tokyo", "utc": "UTC"}
    assert stream_days(zones, None, now) == {"tokyo": date(2026, 3, 2), "utc": date(2026, 3, 1)}
    assert stream_days(zones, date(2026, 2, 27), now) == {"tokyo": date(2026, 2, 27), "utc": date(2026, 2, 27)}


def test_the_zone_is_a_checked_config_key_defaulting_to_utc():
    stream = {"name": "s", "pack": "p", "harness": "h", "tasks": ["a"], "short_baseline": True}
    assert parse_config({"streams": [stream]}, "drift.yaml").streams[0].timezone == "UTC"
    assert parse_config({"streams": [{**stream, "timezone": "Asia/Tokyo"}]}, "drift.yaml").streams[0].timezone \
        == "Asia/Tokyo"
    for bad in ("Asia/Tokio", "+09:00", "../../etc/passwd"):
        with pytest.raises(ConfigError, match=r"streams\[s\]\.timezone: .*is not a time zone"):
            parse_config({"streams": [{**stream, "timezone": bad}]}, "drift.yaml")


def test_now_must_be_aware():
    with pytest.raises(ValueError, match="aware"):
        today_in("UTC", datetime(2026, 3, 2, 6))


def test_drift_run_without_day_runs_each_stream_for_its_local_date(tmp_path):
    """Through run_drift on a real store: days already stored run nothing, so no engine is needed; a stream in
    Tokyo and one in UTC at 06:00 Tokyo time run for two dates, each with its own alert file."""
    import yaml
    from drift_support import store_day

    from evalharness.drift.config import load_config
    from evalharness.drift.run import run_drift
    from evalharness.drift.state import settings_of
    from evalharness.drift.tables import DriftTables
    from evalharness.store import Store, database_url

    streams = [{"name": n, "pack": "no-pack-needed", "harness": "h", "tasks": ["a", "b"], "short_baseline": True, "timezone": z}
               for n, z in (("tokyo", "Asia/Tokyo"), ("utc", "UTC"))]
    (tmp_path / "drift.yaml").write_text(yaml.safe_dump({"store": "runs/evalharness.db", "streams": streams}))
    config = load_config(tmp_path / "drift.yaml")
    tables = DriftTables(Store(database_url(config.store)))
    for stream, day in zip(config.streams, ("2026-03-02", "2026-03-01")):
        tables.new_epoch(stream.name, day, settings_of(stream))
        store_day(tables, day, [("a", True, False), ("b", False, False)], 2, stream=stream.name)
    out = run_drift(config, None, now=_local(9, 6), log=lambda m: None)
    assert {s.stream: (s.day, s.error) for s in out.streams} == {"tokyo": ("2026-03-02", None),
                                                                  "utc": ("2026-03-01", None)}
    assert all(s.action.startswith("unchanged") for s in out.streams)  # the stored days: nothing was run
    assert out.day is None and sorted(out.alert_files) == ["2026-03-01", "2026-03-02"]
    assert all(path.exists() for path in out.alert_files.values())
    with pytest.raises(ConfigError, match="different days"):
        run_drift(config, None, now=_local(9, 6), alert_file=tmp_path / "one.json", log=lambda m: None)
