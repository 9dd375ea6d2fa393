"""`drift run/status/report/rebaseline` through the CLI without Docker, on days already in a real store.

A finished day is not run again (no engine is touched), so a store filled with a baseline and a drop
lets the CLI's verdict, exit code, alert file and --on-alert be checked here; the Docker path is
test_drift_e2e.py. Pins: --on-alert told twice about the same alert; its failure changing the exit
code or losing the alert; --format json with something else on stdout.
"""

from __future__ import annotations

import json
import sys
from datetime import date, timedelta

import numpy as np
import pytest
import yaml
from drift_support import cli, store_day

from evalharness.drift.config import parse_config
from evalharness.drift.run import summarise
from evalharness.drift.state import freeze_if_due, settings_of, stream_state
from evalharness.drift.tables import DriftTables
from evalharness.store import Store, database_url

TASKS = [f"t{i}" for i in range(20)]
RATES = np.linspace(0.2, 0.9, len(TASKS))


def _day(i: int) -> str:
    return (date(2026, 1, 1) + timedelta(days=i)).isoformat()


@pytest.fixture
def home(tmp_path):
    stream = {"name": "s", "pack": "no-pack-needed", "harness": "h", "tasks": TASKS, "baseline_days": 8,
              "short_baseline": True}
    (tmp_path / "drift.yaml").write_text(yaml.safe_dump({"store": "runs/evalharness.db", "streams": [stream]}))
    tables = DriftTables(Store(database_url(tmp_path / "runs" / "evalharness.db")))
    tables.new_epoch("s", _day(0), settings_of(parse_config({"streams": [stream]}, "d").streams[0]))
    rng = np.random.default_rng(3)
    for i in range(20):
        rates = RATES if i < 12 else np.clip(RATES - 0.5, 0, 1)
        store_day(tables, _day(i), [(t, bool(rng.random() < r), False) for t, r in zip(TASKS, rates)], 20)
        freeze_if_due(tables, "s")
    alarms = summarise(stream_state(tables, "s"))["detector_alarm_days"]  # none raised yet: no drift run ran
    assert alarms, "the planted drop should alarm"
    return tmp_path, alarms


def _run(home, day, *extra):
    return cli(home, "drift", "run", "--config", "drift.yaml", "--day", day, "--format", "json", *extra)


def test_an_alarm_day_exits_10_writes_the_alert_file_and_tells_on_alert_once(home):
    path, alarms = home
    told = path / "told.json"
    command = f"{sys.executable} -c \"import sys; open({str(told)!r}, 'w').write(sys.stdin.read())\""
    done = _run(path, alarms[0], "--on-alert", command)
    assert done.returncode == 10, done.stderr
    doc = json.loads(done.stdout)  # stdout is exactly one JSON document
    assert doc["streams"][0]["action"].startswith("unchanged") and doc["streams"][0]["trials_run"] == 0
    assert [a["kind"] for a in doc["alerts"]] == ["drift"]
    alert = doc["alerts"][0]
    assert alert["statistic"] >= alert["threshold"] and alert["p0"] == pytest.approx(0.55, abs=0.1)
    on_disk = json.loads((path / "runs" / "drift-alerts" / f"{alarms[0]}.json").read_text())
    assert [{k: v for k, v in a.items() if k != "raised_at"} for a in on_disk["alerts"]] == json.loads(
        json.dumps(doc["alerts"])) and on_disk["exit_code"] == 10
    assert on_disk["alerts"][0]["raised_at"] and on_disk["notes"] == []
    assert json.loads(told.read_text())["new"][0]["kind"] == "drift"
    told.unlink()
    again = _run(path, alarms[0], "--on-alert", command)  # the same day again: same verdict, not told again
    assert again.returncode == 10 and not told.exists()
    assert "told to --on-alert before" in again.stderr


def test_a_failing_on_alert_keeps_the_exit_code_and_the_alert_is_told_next_time(home):
    path, alarms = home
    failed = _run(path, alarms[0], "--on-alert", "exit 5")
    assert failed.returncode == 10
    assert "--on-alert command exited with 5" in failed.stderr
    told = path / "told.json"
    command = f"{sys.executable} -c \"import sys; open({str(told)!r}, 'w').write(sys.stdin.read())\""
    assert _run(path, alarms[0], "--on-alert", command).returncode == 10
    assert json.loads(told.read_text())["new"][0]["day"] == alarms[0]


def test_a_day_before_the_drop_is_quiet_status_and_report_read_the_store(home):
    path, _ = home
    quiet = _run(path, _day(10))
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["alerts"] == []
    status = cli(path, "drift", "status", "--db", "runs/evalharness.db", "--format", "json")
    s = json.loads(status.stdout)["streams"][0]
    assert s["days"] == 20 and s["baseline"]["state"] == "frozen" and s["baseline"]["last_day"] == _day(7)
    table = cli(path, "drift", "status", "--config", "drift.yaml")
    assert table.returncode == 0 and "p0 " in table.stdout
    report = cli(path, "drift", "report", "--config", "drift.yaml", "-o", "out/drift.html")
    assert report.returncode == 0 and report.stdout == ""
    html = (path / "out" / "drift.html").read_text()
    # no drift run raised the planted drop's alarms (its days were stored, not run): the report shows where
    # the detector alarms as a re-evaluation (dashed), never as an alarm raised
    assert html.count("<svg") == 2 and 'class="alarm-reevaluated"' in html and 'class="alarm"' not in html
    assert s["alarm_days"] == [] and s["detector_alarm_days"] and "the detector alarms on" in s["reevaluation"]


def test_rebaseline_collects_again_from_the_next_day(home):
    path, _ = home
    done = cli(path, "drift", "rebaseline", "--config", "drift.yaml", "--stream", "s")
    assert done.returncode == 0 and f"from {_day(20)}" in done.stderr
    s = json.loads(cli(path, "drift", "status", "--config", "drift.yaml", "--format", "json").stdout)["streams"][0]
    assert s["baseline"] == {"state": "collecting", "have": 0, "need": 8} and s["days"] == 20
    assert cli(path, "drift", "rebaseline", "--config", "drift.yaml", "--stream", "nope").returncode == 1


def test_bad_input_is_one_clear_error(tmp_path):
    (tmp_path / "drift.yaml").write_text(
        "streams:\n  - {name: s, pack: p, harness: h, tasks: [a], delta: 2, short_baseline: true}\n")
    done = cli(tmp_path, "drift", "run", "--config", "drift.yaml", "--format", "json")
    assert done.returncode == 1 and done.stdout == "" and "streams[s].delta" in done.stderr
    assert "Traceback" not in done.stderr
    (tmp_path / "drift.yaml").write_text(
        "streams:\n  - {name: s, pack: p, harness: h, tasks: [a], short_baseline: true}\n")
    bad_day = cli(tmp_path, "drift", "run", "--config", "drift.yaml", "--day", "2026-13-01")
    assert bad_day.returncode == 1 and "--day '2026-13-01' is not a date" in bad_day.stderr
    unknown = cli(tmp_path, "drift", "run", "--config", "drift.yaml", "--stream", "other")
    assert unknown.returncode == 1 and "no stream 'other'" in unknown.stderr


def test_help_and_docs_list_the_exit_codes_the_code_returns(tmp_path):
    import re

    from drift_support import REPO

    from evalharness.drift import alerts

    helptext = cli(tmp_path, "drift", "run", "--help").stdout
    docs = (REPO / "docs" / "drift.md").read_text()
    from evalharness.drift.lock import EXIT_BUSY

    codes = {*alerts.EXIT.values(), alerts.EXIT_OK, alerts.EXIT_INTERRUPTED, EXIT_BUSY, 2}
    assert {int(c) for c in re.findall(r"^\s{4}(\d+)\s{2,}", helptext, re.M)} == codes
    assert {int(c) for c in re.findall(r"^\| (\d+) \|", docs, re.M)} == codes
    assert "10 > 11 > 1 > 3 > 0" in helptext and "10 > 11 > 1 > 3 > 0" in docs
    assert alerts.SEVERITY == (10, 11, 1, 3, 0)
