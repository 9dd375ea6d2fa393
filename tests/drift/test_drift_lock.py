"""One `drift run` at a time per store: a second one refuses at once with a clear message, naming the holder.

Pins: two cron jobs (or two machines on one PostgreSQL) running the same day twice over.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from drift_support import EVALHARNESS, env

from evalharness.drift.lock import EXIT_BUSY, drift_lock
from evalharness.errors import UserError
from evalharness.store import Store, database_url

HOLD = """
import sys, time
from evalharness.drift.lock import drift_lock
with drift_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def _config(tmp_path):
    path = tmp_path / "drift.yaml"
    path.write_text("store: runs/evalharness.db\nstreams:\n"
                    "  - {name: n, pack: no-such-pack, harness: oracle, tasks: [a], short_baseline: true}\n")
    return path


def test_a_second_drift_run_refuses_while_one_holds_the_lock(tmp_path):
    _config(tmp_path)
    url = database_url(tmp_path / "runs" / "evalharness.db")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, url], stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        done = subprocess.run([*EVALHARNESS, "drift", "run", "--config", "drift.yaml", "--day", "2026-01-01"],
                              cwd=tmp_path, capture_output=True, text=True, env=env(), timeout=120)
        assert done.returncode == EXIT_BUSY == 75 and done.stdout == ""  # its own code: not a config error's 1
        assert f"another `drift run` is running on this store (pid {holder.pid} on" in done.stderr
        assert time.monotonic() - started < 30  # it refuses, it does not wait
        rebaseline = subprocess.run([*EVALHARNESS, "drift", "rebaseline", "--config", "drift.yaml", "--stream", "n"],
                                    cwd=tmp_path, capture_output=True, text=True, env=env(), timeout=120)
        assert rebaseline.returncode == EXIT_BUSY and "another `drift run`" in rebaseline.stderr
    finally:
        holder.kill()
        holder.wait()
    # the holder died: the kernel dropped its lock; this run gets past it (and fails on the missing pack)
    done = subprocess.run([*EVALHARNESS, "drift", "run", "--config", "drift.yaml", "--day", "2026-01-01"],
                          cwd=tmp_path, capture_output=True, text=True, env=env(), timeout=120)
    assert done.returncode == 1 and "another `drift run`" not in done.stderr and "no-such-pack" in done.stderr


def test_the_file_lock_is_reentrant_only_after_release(tmp_path):
    url = database_url(tmp_path / "x.db")
    with drift_lock(url):
        pass
    with drift_lock(url):  # released by the first
        pass


@pytest.mark.postgres
def test_two_connections_to_postgresql_cannot_both_hold_the_lock(postgres_url):
    first, second = Store(postgres_url), Store(postgres_url)
    with drift_lock(first.url, first.engine):
        with pytest.raises(UserError, match="advisory lock"):
            with drift_lock(second.url, second.engine):
                pass
    with drift_lock(second.url, second.engine):  # released when the first run ended
        pass


@pytest.mark.postgres
def test_the_drift_tables_work_on_postgresql(postgres_url):
    from evalharness.drift.tables import DriftTables

    tables = DriftTables(Store(postgres_url))
    tables.new_epoch("pg", "2026-01-01", {"baseline_days": 2})
    values = dict(run_id="r1", status="running", planned=2, usable=0, resolved=0, infra=0, task_errors=0, reason="")
    tables.put_day("pg", "2026-01-01", **values)
    tables.put_day("pg", "2026-01-01", **{**values, "status": "ok", "usable": 2, "resolved": 1})
    assert [(d["day"], d["status"], d["resolved"]) for d in tables.days("pg")] == [("2026-01-01", "ok", 1)]
    epoch = tables.epoch("pg")
    tables.freeze(epoch["id"], first_day="2026-01-01", last_day="2026-01-02", baseline={"p0": 0.5})
    assert tables.epoch("pg")["baseline"] == {"p0": 0.5}
    alert = {"stream": "pg", "day": "2026-01-03", "kind": "drift", "p0": 0.5}
    assert tables.put_alert(alert) is True
    tables.mark_notified([alert])
    assert tables.put_alert(alert) is False  # told before: not again
    assert tables.put_alert({**alert, "p0": 0.9}) is False and tables.alerts("pg")[0]["p0"] == 0.5  # kept as raised
    tables.add_note({"stream": "pg", "day": "2026-01-03", "message": "re-run"})
    assert [n["message"] for n in tables.notes(day="2026-01-03")] == ["re-run"]
    assert "pg" in tables.streams()


from test_store_postgres import postgres_url  # noqa: E402,F401  (the real PostgreSQL server fixture)
