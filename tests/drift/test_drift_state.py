"""The baseline and verdict from stored days, without Docker: trials written into a real SQLite store.

Pins: partial or outage days counted towards the baseline; an outage day moving the statistic; the
series dated by the trials' wall-clock time instead of their drift day; rebaseline losing old days.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest

from drift_support import store_day as _store_day

from evalharness.drift.config import parse_config
from evalharness.drift.run import summarise
from evalharness.drift.state import freeze_if_due, settings_of, stream_state
from evalharness.drift.tables import DriftTables
from evalharness.store import Store, database_url

TASKS = [f"t{i}" for i in range(20)]
RATES = np.linspace(0.2, 0.9, len(TASKS))


def _stream(baseline_days=8):
    return parse_config({"streams": [{"name": "s", "pack": "p", "harness": "h", "tasks": TASKS,
                                      "baseline_days": baseline_days, "short_baseline": True}]}, "d.yaml").streams[0]


def _day(i: int) -> str:
    return (date(2026, 1, 1) + timedelta(days=i)).isoformat()


@pytest.fixture
def tables(tmp_path):
    t = DriftTables(Store(database_url(tmp_path / "x.db")))
    t.new_epoch("s", _day(0), settings_of(_stream()))
    return t


def _draw(rng, rates, infra=0):
    """(task, resolved, infra) per task: the first ``infra`` tasks lost to infrastructure, the rest drawn."""
    return [(t, False, True) if i < infra else (t, bool(rng.random() < r), False)
            for i, (t, r) in enumerate(zip(TASKS, rates))]


def test_the_baseline_counts_ok_days_only_and_outages_leave_the_statistic_alone(tables):
    rng = np.random.default_rng(1)
    _store_day(tables, _day(0), _draw(rng, RATES, infra=3), 20)  # partial: not a baseline day
    assert tables.day("s", _day(0))["status"] == "partial"
    for i in range(1, 9):
        _store_day(tables, _day(i), _draw(rng, RATES), 20)
        frozen = freeze_if_due(tables, "s")
        assert frozen == (i == 8), i
    state = stream_state(tables, "s")
    assert state.epoch["first_day"] == _day(1) and state.epoch["last_day"] == _day(8)
    assert state.baseline.p0 == pytest.approx(np.mean([
        d["resolved"] / d["usable"] for d in tables.days("s")[1:9]]), abs=1e-9)
    for i in range(9, 14):
        _store_day(tables, _day(i), _draw(rng, RATES), 20)
    before = summarise(stream_state(tables, "s"))
    _store_day(tables, _day(14), _draw(rng, RATES, infra=15), 20)  # an outage day
    assert tables.day("s", _day(14))["status"] == "outage"
    after = summarise(stream_state(tables, "s"))
    assert after["statistic"] == before["statistic"] and after["monitored_days"] == before["monitored_days"] == 5
    assert after["last_outage"] == _day(14)
    report = stream_state(tables, "s").report
    assert report.days[0] == _day(9) and report.days[-1] == _day(13)  # drift days, not the trials' wall clock


def test_a_real_drop_alarms_and_rebaseline_starts_collecting_again(tables):
    rng = np.random.default_rng(2)
    for i in range(8):
        _store_day(tables, _day(i), _draw(rng, RATES), 20)
    assert freeze_if_due(tables, "s")
    for i in range(8, 30):
        _store_day(tables, _day(i), _draw(rng, np.clip(RATES - 0.5, 0, 1)), 20)
    s = summarise(stream_state(tables, "s"))
    # the detector's alarms on the stored days (no drift run raised any: those would be s["alarm_days"])
    assert s["detector_alarm_days"] and s["detector_alarm_days"][0] >= _day(8) and s["alarm_days"] == [], s
    tables.new_epoch("s", _day(30), settings_of(_stream()))
    s = summarise(stream_state(tables, "s"))
    assert s["baseline"] == {"state": "collecting", "have": 0, "need": 8} and s["days"] == 30
