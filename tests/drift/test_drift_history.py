"""A late result never rewrites what was alerted: an old outage day re-run at the end of a 44-day stream.

The newcomer's case (issue 27): after re-running an old outage day at the end of a 44-day stream, `drift status`
and `drift report` moved the alarm from the day it was raised and sent to the day before, dropped the outage,
and the alert file of the day they now named said "no alerts". Here the same stream, through the real CLI:
two quickstart tasks, one seed, task A solved and B never (p0 = 0.5, 30 baseline days, one false alarm a year:
the CUSUM rises by its reference each day both tasks fail and alarms after k = ceil(threshold / reference) such
days). Days are injected into the store (drift_support.store_day) and each monitored day is run by `drift run`
(a finished day runs nothing: the CLI evaluates it, records its alerts and writes its alert file); the outage day
runs for real through Docker with the model endpoint down, and at the end, with the endpoint back and failing
every task, it is re-run (resumed) for real. The outage day is the day before the drop, so its late 0 of 2 moves
the detector's alarm one day earlier. Checked after the re-run:
- `drift status` (JSON and table) and `drift report` keep the alarm on the day it was raised and sent, and show
  the detector's new alarm day apart, as a re-evaluation; the outage stays the last outage, with a note of the
  re-run ("re-run on <date>: now ok ..., was outage");
- the sent alarm's alert file is byte for byte as it was; the outage day's alert file keeps its outage alert and
  adds the note; the alert file of the day the detector now names still says no alert;
- --on-alert was told of the alarm once, and the re-run tells it nothing.
Pins (each fails on the code before this test): status and report recomputing alarms from today's data; the
outage alert dropped from the re-run day's alert file; the last outage forgotten. Cost: 2 real Docker days (the
outage and its re-run) and 8 CLI runs that start no container, about 1.5 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import json
import math
import sys
from datetime import date, timedelta

import pytest
from drift_support import ModelServer, cli, drift_yaml, free_port, quickstart_tasks, store_day, write_script

from evalharness.drift.config import load_config
from evalharness.drift.state import freeze_if_due, settings_of
from evalharness.drift.tables import DriftTables
from evalharness.store import Store, database_url

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SOLVED, FAILED = "boltons-strutils-parse-int-list", "boltons-mathutils-ceil-exact-match"
BASELINE, ALARM, LAST = 30, 43, 44
QUIET, DROPPED = [(SOLVED, True, False), (FAILED, False, False)], [(SOLVED, False, False), (FAILED, False, False)]


def _day(i: int) -> str:
    return (date(2026, 1, 1) + timedelta(days=i - 1)).isoformat()


def _run(home, i: int) -> tuple[int, dict]:
    told = home / "told.jsonl"
    on_alert = f"{sys.executable} -c \"import sys; open({str(told)!r}, 'a').write(sys.stdin.read() + '\\n')\""
    done = cli(home, "drift", "run", "--config", "drift.yaml", "--day", _day(i), "--format", "json",
               "--on-alert", on_alert, timeout=600)
    assert done.stdout.startswith("{"), f"day {i}: exit {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.returncode, json.loads(done.stdout)


def _told(home) -> list[dict]:
    path = home / "told.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _alert_file(home, i: int) -> dict:
    return json.loads((home / "runs" / "drift-alerts" / f"{_day(i)}.json").read_text())


def _stored_stream(home) -> tuple[DriftTables, int]:
    """Baseline days injected and frozen; returns the tables and k, the failing days the CUSUM needs to alarm."""
    stream = load_config(home / "drift.yaml").streams[0]
    tables = DriftTables(Store(database_url(home / "runs" / "evalharness.db")))
    tables.new_epoch(stream.name, _day(1), settings_of(stream))
    for i in range(1, BASELINE + 1):
        store_day(tables, _day(i), QUIET, 2, stream=stream.name)
    assert freeze_if_due(tables, stream.name)
    baseline = tables.epoch(stream.name)["baseline"]
    k = math.ceil(baseline["threshold"] / baseline["reference"] - 1e-9)
    assert 2 <= k <= ALARM - BASELINE - 2, f"the premise: an alarm after k >= 2 failing days ({baseline})"
    return tables, k


def test_rerunning_an_old_outage_day_keeps_the_sent_alarm_and_the_outage(tmp_path, docker_client, base_image):
    tasks = quickstart_tasks([SOLVED, FAILED])
    port = free_port()
    drift_yaml(tmp_path, port=port, tasks=[SOLVED, FAILED], baseline_days=BASELINE)
    tables, k = _stored_stream(tmp_path)
    outage, drop_from = ALARM - k, ALARM - k + 1  # the outage the day before the drop's first day
    for i in range(BASELINE + 1, outage):
        store_day(tables, _day(i), QUIET, 2, stream="qs")
    tables.store.engine.dispose()

    codes = {outage: _run(tmp_path, outage)[0]}  # for real, the model endpoint down (no server on the port)
    for i in range(outage + 1, LAST + 1):
        store_day(tables, _day(i), DROPPED if i >= drop_from else QUIET, 2, stream="qs")
        tables.store.engine.dispose()
        codes[i] = _run(tmp_path, i)[0]
    assert codes == {outage: 11, **{i: 0 for i in range(outage + 1, ALARM)}, ALARM: 10, LAST: 0}, codes
    sent = (tmp_path / "runs" / "drift-alerts" / f"{_day(ALARM)}.json").read_bytes()
    assert [a["day"] for doc in _told(tmp_path) for a in doc["new"] if a["kind"] == "drift"] == [_day(ALARM)]

    # the endpoint is back and fails every task: the old outage day is re-run at the end, for real
    server = ModelServer(write_script(tmp_path / "drop.yaml", tasks, solved=set()), port,
                         tmp_path / "model-server.log").start()
    try:
        rerun_code, rerun = _run(tmp_path, outage)
    finally:
        server.stop()
    day = rerun["streams"][0]
    assert day["action"] == "resumed" and day["trials_run"] == 2 and day["status"]["status"] == "ok", day
    assert day["status"]["resolved"] == 0 and rerun_code == 0 and rerun["alerts"] == []

    status = json.loads(cli(tmp_path, "drift", "status", "--config", "drift.yaml", "--format", "json").stdout)
    s = status["streams"][0]
    # what was alerted stays: the alarm on the day it was raised and sent, the outage as the last outage
    assert s["alarm_days"] == [_day(ALARM)] and s["last_alarm"] == _day(ALARM), s
    assert s["last_outage"] == _day(outage)
    assert (tmp_path / "runs" / "drift-alerts" / f"{_day(ALARM)}.json").read_bytes() == sent
    outage_file = _alert_file(tmp_path, outage)
    assert [(a["kind"], a["day"]) for a in outage_file["alerts"]] == [("outage", _day(outage))]
    assert "re-run on" in day["note"]["message"] and day["note"]["was"] == "outage"
    # the late result is information beside it: the detector on today's data alarms a day earlier
    assert s["detector_alarm_days"] == [_day(ALARM - 1)] and _day(ALARM - 1) in s["reevaluation"]
    assert any(f"{_day(outage)} re-run on" in n and "was outage" in n for n in s["notes"]), s["notes"]
    table = cli(tmp_path, "drift", "status", "--config", "drift.yaml").stdout
    assert _day(ALARM) in table and f"the detector alarms on {_day(ALARM - 1)}" in table
    assert f"qs: note: {_day(outage)} re-run on" in table

    assert outage_file["exit_code"] == 0 and "was outage" in outage_file["notes"][0]["message"]
    assert _alert_file(tmp_path, ALARM - 1)["alerts"] == []  # the day the detector now names: no alert was sent
    assert len(_told(tmp_path)) == 2  # the outage and the alarm, each once; the re-run told nothing

    assert cli(tmp_path, "drift", "report", "--config", "drift.yaml", "-o", "drift.html").returncode == 0
    html = (tmp_path / "drift.html").read_text()
    assert html.count(f"<title>alarm raised for {_day(ALARM)}</title>") == 2  # both charts
    assert f"alarm raised for {_day(ALARM - 1)}" not in html and 'class="alarm-reevaluated"' in html
    assert f"alarms on {_day(ALARM - 1)} on the stored days as they are now" in html
    assert f"<td>{_day(outage)}</td><td>outage</td>" in html and "was outage" in html
