"""The drift guarantees of test_drift_e2e.py in a few real days: a stored baseline, then the real CLI and Docker.

The 60-day stream of test_drift_e2e.py (marker `long`) spends most of its time collecting a baseline day by
day. Here 29 of the baseline's 30 days are written into the store directly (drift_support.store_day, as
test_drift_cli.py does); then four days run for real through `evalharness drift run` (a subprocess), real
Docker trials and the scripted model server, on the same stream: two quickstart tasks, one seed, task A
solved and task B never (p0 = 0.5). The stream is calibrated to one false alarm a month, which puts its
threshold below one day's CUSUM step when every trial fails (checked on the frozen baseline), so a single
real day of drop is an alarm. Checked:
- a normal day (the 30th ok day): exit 0, its 2 trials run and recorded, the day ok, no alert, and the
  baseline frozen by that `drift run`, with a promised detection delay;
- a second `drift run` of that day adds no trial (counted in the store) and repeats its verdict;
- a day with the model endpoint down (the e2e test's trick: the model server stopped): exit 11, one alert of
  kind `outage`, no drift alarm, the day left out of the monitored series; run again once the endpoint is
  back, the same run is resumed (its 2 trials), the day becomes ok, monitored, with the statistic at 0;
- a day when the model fails every task (the server serves a script where A fails too): exit 10, one alert
  of kind `drift` in the output and the day's alert file.
Pins: a baseline that never freezes; an outage counted as a drop (0 of 2 that day would alarm at this
threshold); a re-run that runs the day again; a lost day started afresh instead of resumed; a drop that does
not reach the exit code. Cost: 4 real days, about a minute on a 2-core machine shared with other work.
"""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from drift_support import (ModelServer, cli, drift_yaml, free_port, quickstart_tasks, run_day, store_day, trial_count,
                           write_script)

from evalharness.drift.config import load_config
from evalharness.drift.state import freeze_if_due, settings_of
from evalharness.drift.tables import DriftTables
from evalharness.store import Store, database_url

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SOLVED, FAILED = "boltons-strutils-parse-int-list", "boltons-mathutils-ceil-exact-match"
BASELINE = 30
NORMAL, OUTAGE, DROP = BASELINE, BASELINE + 1, BASELINE + 2


def _day(i: int) -> str:
    return (date(2026, 1, 1) + timedelta(days=i - 1)).isoformat()


def _run(home, i: int) -> tuple[int, dict]:
    return run_day(home, _day(i), f"day {i}", timeout=600)


def _store_baseline_days(home) -> None:
    """All but the last baseline day written into the store (A resolved, B not), the epoch made from drift.yaml."""
    stream = load_config(home / "drift.yaml").streams[0]
    tables = DriftTables(Store(database_url(home / "runs" / "evalharness.db")))
    tables.new_epoch(stream.name, _day(1), settings_of(stream))
    for i in range(1, BASELINE):
        store_day(tables, _day(i), [(SOLVED, True, False), (FAILED, False, False)], 2, stream=stream.name)
    assert not freeze_if_due(tables, stream.name), "29 ok days must not freeze a 30-day baseline"
    tables.store.engine.dispose()


def test_a_stored_baseline_then_real_days_normal_rerun_outage_resume_and_drop(tmp_path, docker_client, base_image):
    tasks = quickstart_tasks([SOLVED, FAILED])
    good = write_script(tmp_path / "good.yaml", tasks, solved={SOLVED})
    drop = write_script(tmp_path / "drop.yaml", tasks, solved=set())
    port = free_port()
    drift_yaml(tmp_path, port=port, tasks=[SOLVED, FAILED], baseline_days=BASELINE, false_alarms_per_year=12.0)
    _store_baseline_days(tmp_path)
    db = tmp_path / "runs" / "evalharness.db"
    stored = trial_count(db)
    assert stored == 2 * (BASELINE - 1)

    server = ModelServer(good, port, tmp_path / "model-server.log").start()
    try:
        normal_code, normal = _run(tmp_path, NORMAL)
        after_normal = trial_count(db)
        again_code, again = _run(tmp_path, NORMAL)
        after_again = trial_count(db)
        server.stop()
        lost_code, lost = _run(tmp_path, OUTAGE)
        server.start(good)
        resumed_code, resumed = _run(tmp_path, OUTAGE)
        server.stop()
        server.start(drop)
        drop_code, dropped = _run(tmp_path, DROP)
    finally:
        server.stop()
    day = {name: doc["streams"][0] for name, doc in
           (("normal", normal), ("again", again), ("lost", lost), ("resumed", resumed), ("drop", dropped))}

    # a normal day: run, recorded, quiet; the 30th ok day, so this drift run freezes the baseline
    assert normal_code == 0 and normal["alerts"] == [], (normal_code, normal)
    assert day["normal"]["action"] == "new" and day["normal"]["trials_run"] == 2
    assert day["normal"]["status"]["status"] == "ok" and day["normal"]["status"]["resolved"] == 1
    assert after_normal == stored + 2
    baseline = day["normal"]["baseline"]
    assert baseline["state"] == "frozen" and baseline["last_day"] == _day(BASELINE), baseline
    assert baseline["p0"] == pytest.approx(0.5) and baseline["delay_days"] > 0
    # the premise: one day with both trials failing moves the CUSUM by its reference, past the threshold
    assert 0 < baseline["threshold"] <= baseline["reference"], baseline

    # the same day again: nothing run, nothing added, the same verdict
    assert after_again == after_normal, "a second drift run of the same day added trials"
    assert again_code == normal_code and day["again"]["trials_run"] == 0
    assert day["again"]["action"].startswith("unchanged") and day["again"]["run_id"] == day["normal"]["run_id"]

    # the endpoint down: an outage, not a drop; the statistic does not move
    assert lost_code == 11 and [a["kind"] for a in lost["alerts"]] == ["outage"], (lost_code, lost)
    assert day["lost"]["status"]["status"] == "outage" and day["lost"]["status"]["infra"] == 2
    assert day["lost"]["monitored_days"] == 0 and day["lost"]["statistic"] is None and day["lost"]["alarm_days"] == []
    # ... and run again once it is back: the same run, resumed, only its lost trials
    assert day["resumed"]["action"] == "resumed" and day["resumed"]["trials_run"] == 2
    assert day["resumed"]["run_id"] == day["lost"]["run_id"]
    assert day["resumed"]["status"]["status"] == "ok" and resumed_code == 0 and resumed["alerts"] == []
    assert day["resumed"]["monitored_days"] == 1 and day["resumed"]["statistic"] == 0

    # every trial failing for one day: the alarm, in the exit code, the output and the alert file
    assert drop_code == 10 and [a["kind"] for a in dropped["alerts"]] == ["drift"], (drop_code, dropped)
    alert = dropped["alerts"][0]
    assert alert["rate"] == 0.0 and alert["p0"] == pytest.approx(0.5)
    assert alert["statistic"] >= alert["threshold"] and day["drop"]["alarm_days"] == [_day(DROP)]
    on_disk = json.loads((tmp_path / "runs" / "drift-alerts" / f"{_day(DROP)}.json").read_text())
    assert on_disk["exit_code"] == 10 and [a["kind"] for a in on_disk["alerts"]] == ["drift"]

    # every planned trial in the store once: the lost day's two replaced by their resumed results
    assert trial_count(db) == stored + 3 * 2
