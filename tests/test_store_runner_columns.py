"""A database written before runs recorded their runner upgrades in place; its old `running` runs show
as interrupted; a task error is replaced by a retry like an infrastructure failure, nothing else is.

Pins: a SIGKILLed run stayed `running` in the store forever; a task error stored once could never
be retried by a resume, so fixing a transient misdiagnosis meant starting over.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timezone

import pytest
from test_store_flags_migration import OLD_SCHEMA, _row

from evalharness.liveness import run_status, this_host
from evalharness.store import MIGRATIONS, Store, database_url


def test_an_old_database_gains_the_runner_columns_and_its_running_runs_show_interrupted(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA.replace("'completed'", "'running'"))
    store = Store(database_url(path))
    [old] = store.list_runs()
    assert old["status"] == "running" and old["runner_pid"] is None
    assert run_status(old) == "interrupted"  # nothing says a runner is alive
    store.set_runner("old", host=this_host(), pid=os.getpid())
    assert run_status(Store(database_url(path)).get_run("old")) == "running"  # this very process
    store.heartbeat("old")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1 + len(MIGRATIONS),)]
        assert conn.execute("SELECT runner_pid FROM runs").fetchall() == [(os.getpid(),)]


def test_a_task_error_is_replaced_by_a_retry_and_a_final_result_is_not(tmp_path):
    store = Store(database_url(tmp_path / "new.db"))
    store.create_run("old", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config={})
    store.record_trial(_row("a", outcome="task_error", reason="sha256 mismatch"))
    assert store.done_trials("old") == set()  # a resume runs it again
    store.record_trial(_row("a", outcome="resolved", resolved=True, reason=""))
    assert store.done_trials("old") == {"a"}
    with pytest.raises(RuntimeError, match="already recorded"):
        store.record_trial(_row("a", outcome="task_error"))
    assert store.get_run("old")["heartbeat_at"] is None
    store.set_runner("old", host="h", pid=1)
    assert store.get_run("old")["heartbeat_at"] <= datetime.now(timezone.utc).replace(tzinfo=None)
