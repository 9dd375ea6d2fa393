"""A baseline below the documented minimum (20 days and 1,000 trials) is refused unless accepted explicitly.

Issue 27: a 10-day x 20-trial baseline gave 1.17 false alarms per stream-year where 0.95 was promised (14% of
streams above 3). `drift run` refuses such a stream at configuration time (exit 1, nothing run) unless the
stream says `short_baseline: true`; a stream whose ok days fall short of trials keeps collecting days until
the baseline reaches the minimum. No Docker: the days are stored directly (drift_support.store_day).
"""

from __future__ import annotations

from datetime import date, timedelta

import yaml
from drift_support import cli, store_day

from evalharness.drift.config import parse_config
from evalharness.drift.state import freeze_if_due, settings_of, stream_state
from evalharness.drift.tables import DriftTables
from evalharness.store import Store, database_url

TASKS = [f"t{i}" for i in range(20)]


def _write(home, **fields) -> dict:
    stream = {"name": "s", "pack": "p", "harness": "h", "tasks": TASKS, "baseline_days": 10, **fields}
    (home / "drift.yaml").write_text(yaml.safe_dump({"store": "runs/evalharness.db", "streams": [stream]}))
    return stream


def test_a_short_baseline_is_refused_through_the_cli_with_a_clear_error(tmp_path):
    _write(tmp_path)
    done = cli(tmp_path, "drift", "run", "--config", "drift.yaml", "--day", "2026-01-01", "--format", "json")
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert "streams[s]" in done.stderr and "baseline_days 10 x 20 trials a day" in done.stderr
    assert "below the minimum of 20 days and 1,000 trials" in done.stderr and "short_baseline: true" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "runs").exists()  # nothing ran, nothing stored
    _write(tmp_path, baseline_days=50)  # 50 x 20 = 1,000 trials: long enough, no override needed
    status = cli(tmp_path, "drift", "status", "--config", "drift.yaml", "--format", "json")
    assert "below the minimum" not in status.stderr


def test_the_override_is_accepted_and_said_in_the_baseline_note(tmp_path):
    stream = _write(tmp_path, short_baseline=True)
    assert cli(tmp_path, "drift", "status", "--config", "drift.yaml").returncode == 0
    tables = _tables(tmp_path, stream)
    for i in range(10):
        store_day(tables, _day(i), [(t, i % 2 == 0, False) for t in TASKS], 20)
    assert freeze_if_due(tables, "s")
    note = stream_state(tables, "s").baseline.note
    assert "short baseline (10 days, 200 trials" in note and "accepted by override" in note


def test_ok_days_short_of_trials_keep_the_baseline_collecting(tmp_path):
    """50 tasks x 20 days plans 1,000 trials; ok days with fewer usable trials (task errors are left out, and
    so are tasks a day did not plan) fall short, so more ok days are taken."""
    tasks = [f"t{i}" for i in range(50)]
    stream = {"name": "s", "pack": "p", "harness": "h", "tasks": tasks, "baseline_days": 20}
    tables = _tables(tmp_path, stream)
    for i in range(20):  # 49 usable trials a day on ok days: 980 < 1,000
        store_day(tables, _day(i), [(t, j % 2 == 0, False) for j, t in enumerate(tasks[1:])], 49)
        assert not freeze_if_due(tables, "s")
    store_day(tables, _day(20), [(t, j % 2 == 0, False) for j, t in enumerate(tasks)], 50)
    assert freeze_if_due(tables, "s")
    baseline = stream_state(tables, "s").baseline
    assert (baseline.n_days, baseline.n_trials, baseline.note) == (21, 1030, "")
    assert stream_state(tables, "s").baseline_have >= 20


def _tables(home, stream: dict) -> DriftTables:
    tables = DriftTables(Store(database_url(home / "runs" / "evalharness.db")))
    tables.new_epoch("s", _day(0), settings_of(parse_config({"streams": [stream]}, "d").streams[0]))
    return tables


def _day(i: int) -> str:
    return (date(2026, 1, 1) + timedelta(days=i)).isoformat()
