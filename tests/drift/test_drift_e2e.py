"""Acceptance: 60 simulated days of one stream through the real CLI, real Docker and the scripted model server.

Two quickstart tasks, one seed: task A is solved every day, task B never (p0 = 0.5, a degenerate panel:
each task always 0 or 1). Day 35 the model server is stopped (an endpoint outage); from day 40 it serves a
script under which A fails too (a planted drop). Checked:
- days 1-30 collect the baseline (exit 0), it is frozen on day 30 and promises a detection delay;
- the outage day exits 11 with one alert of kind `outage`, no drift alarm, and the statistic unchanged;
- no alarm before day 40; a `drift` alarm (exit 10) within the delay the baseline promised;
- a second `drift run` of a day adds no trial (counted in the store) and repeats the day's verdict;
- a `drift run` started while another runs refuses at once (the lock) and the first finishes its day;
- a day lost to a dead endpoint and run again once it is back is resumed in the same run (its 2 trials).
Pins: an outage counted as a drop (0 of 2 that day would raise the CUSUM); a re-run that runs the day again;
a baseline that never freezes. Cost: 8-9 minutes in all when first measured (8 min 52 s with the resumed day 61,
a 2-core machine shared with other work), 16 minutes at a heavier load (BENCHMARKS.md's test-suite table); the
per-day figure is measured by benchmarks/drift_day.py and kept in BENCHMARKS.md, "Drift day", with its load.
Marked `long` (./scripts/test --all only): in the default tier, test_drift_days_in_docker.py covers its guarantees
(normal day, idempotent re-run, outage not charged and resumed, drop alarm) on a stored baseline and 4 real days;
the lock is covered by test_drift_lock.py and the verdict, alert file and --on-alert by test_drift_cli.py.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from datetime import date, timedelta

import pytest
from drift_support import (EVALHARNESS, ModelServer, cli, drift_yaml, env, free_port, quickstart_tasks, run_day,
                           trial_count, write_script)

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.long]

SOLVED, FAILED = "boltons-strutils-parse-int-list", "boltons-mathutils-ceil-exact-match"
DAYS, BASELINE, OUTAGE, DROP, RERUN, CONCURRENT = 60, 30, 35, 40, 20, 10
START = date(2026, 1, 1)


def _day(i: int) -> str:
    return (START + timedelta(days=i - 1)).isoformat()


def _run(home, i: int) -> tuple[int, dict]:
    return run_day(home, _day(i), f"day {i}")


def _run_with_a_second_at_once(home, i: int) -> tuple[int, dict]:
    """Day ``i`` by one `drift run` while a second one starts once the first's trials are under way."""
    err = home / f"day-{i:02d}.stderr"
    with err.open("w") as stderr:
        first = subprocess.Popen([*EVALHARNESS, "drift", "run", "--config", "drift.yaml", "--day", _day(i),
                                  "--format", "json"], cwd=home, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                 env=env())
        deadline = time.monotonic() + 300
        while "task(s) x" not in err.read_text() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        second = cli(home, "drift", "run", "--config", "drift.yaml", "--day", _day(i), "--format", "json")
        out, _ = first.communicate(timeout=900)
    assert second.returncode == 75 and second.stdout == "", second.stderr
    assert "another `drift run` is running on this store" in second.stderr
    return first.returncode, json.loads(out)


def test_sixty_days_drop_outage_and_idempotent_rerun(tmp_path, docker_client, base_image):
    tasks = quickstart_tasks([SOLVED, FAILED])
    good = write_script(tmp_path / "good.yaml", tasks, solved={SOLVED})
    drop = write_script(tmp_path / "drop.yaml", tasks, solved=set())
    port = free_port()
    drift_yaml(tmp_path, port=port, tasks=[SOLVED, FAILED], baseline_days=BASELINE)
    server = ModelServer(good, port, tmp_path / "model-server.log").start()
    db = tmp_path / "runs" / "evalharness.db"
    codes, docs, seconds = {}, {}, {}
    try:
        for i in range(1, DAYS + 1):
            if i == OUTAGE:
                server.stop()
            if i == OUTAGE + 1:
                server.start(good)
            if i == DROP:
                server.stop()
                server.start(drop)
            started = time.monotonic()
            codes[i], docs[i] = _run_with_a_second_at_once(tmp_path, i) if i == CONCURRENT else _run(tmp_path, i)
            seconds[i] = time.monotonic() - started
            if i == RERUN:
                before = trial_count(db)
                again_code, again = _run(tmp_path, i)
                assert trial_count(db) == before, "a second drift run of the same day added trials"
                assert again_code == codes[i] and again["streams"][0]["trials_run"] == 0
                assert again["streams"][0]["action"].startswith("unchanged")
        # one more day lost to a dead endpoint, then run again once it is back: the day is resumed, not redone
        server.stop()
        lost_code, lost = _run(tmp_path, DAYS + 1)
        server.start(drop)
        resumed_code, resumed = _run(tmp_path, DAYS + 1)
    finally:
        server.stop()
    print("seconds per day:", {k: round(v, 1) for k, v in seconds.items()})
    stream = {i: d["streams"][0] for i, d in docs.items()}
    kinds = {i: [a["kind"] for a in d["alerts"]] for i, d in docs.items()}

    # the baseline: collected on days 1-30, frozen on day 30, with a promised delay
    assert all(codes[i] == 0 for i in range(1, BASELINE + 1)), {i: (codes[i], kinds[i]) for i in range(1, 31)}
    assert stream[BASELINE - 1]["baseline"]["state"] == "collecting"
    frozen = stream[BASELINE]["baseline"]
    assert frozen["state"] == "frozen" and frozen["p0"] == pytest.approx(0.5)
    promised = frozen.get("delay_days")
    assert promised is not None and promised > 0, f"the frozen baseline promises no detection delay: {frozen}"

    # the outage day: its own kind, no drift alarm, the statistic unchanged
    assert codes[OUTAGE] == 11 and kinds[OUTAGE] == ["outage"], (codes[OUTAGE], docs[OUTAGE])
    assert stream[OUTAGE]["status"]["status"] == "outage"
    assert stream[OUTAGE]["statistic"] == stream[OUTAGE - 1]["statistic"]
    assert OUTAGE not in [i for i in kinds if "drift" in kinds[i]]

    # no alarm before the drop; an alarm within the promised delay after it
    assert all(codes[i] == 0 for i in range(BASELINE + 1, DROP) if i != OUTAGE), {i: codes[i] for i in range(31, 40)}
    alarms = [i for i in range(DROP, DAYS + 1) if "drift" in kinds[i]]
    assert alarms, f"no drift alarm after the drop: {[(i, codes[i], stream[i]['statistic']) for i in range(DROP, 61)]}"
    # the stream's own promises: the median delay of a `delta` drop (a smaller drop than the planted one), and,
    # with every trial failing from DROP on, the CUSUM rising by its reference each day from 0 (in control it
    # cannot rise: one success a day is at least the reference) until it reaches the threshold
    delay = alarms[0] - DROP + 1
    full_drop = math.ceil(frozen["threshold"] / frozen["reference"] - 1e-9)
    assert delay <= min(math.ceil(promised), full_drop), (
        f"alarm after {delay} days; the baseline promised {promised} (a delta drop), {full_drop} (every trial failing)")
    assert codes[alarms[0]] == 10
    alert_file = json.loads((tmp_path / "runs" / "drift-alerts" / f"{_day(alarms[0])}.json").read_text())
    drift_alert = next(a for a in alert_file["alerts"] if a["kind"] == "drift")
    assert drift_alert["p0"] == pytest.approx(0.5) and drift_alert["rate"] == 0.0
    assert drift_alert["statistic"] >= drift_alert["threshold"]

    assert lost_code == 11 and lost["streams"][0]["status"]["infra"] == 2
    day = resumed["streams"][0]
    assert day["action"] == "resumed" and day["trials_run"] == 2 and day["status"]["status"] == "ok"
    assert resumed_code in (0, 10) and day["run_id"] == lost["streams"][0]["run_id"]

    # every planned trial is in the store once (the outage day's as infrastructure failures)
    assert trial_count(db) == 2 * (DAYS + 1)
    status = json.loads(cli(tmp_path, "drift", "status", "--config", "drift.yaml", "--format", "json").stdout)
    # the lost day's outage alarm was sent before the day was resumed, and sent alarms are kept (drift_history):
    # it is the last outage the stream has told anyone of
    assert status["streams"][0]["last_outage"] == _day(DAYS + 1) and status["streams"][0]["last_alarm"]
    report = cli(tmp_path, "drift", "report", "--config", "drift.yaml", "-o", "drift.html")
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "drift.html").read_text()
    assert 'class="alarm"' in html and 'class="outage"' in html and 'src="http' not in html and 'href="http' not in html
