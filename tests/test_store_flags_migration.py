"""A database written before trials had flags opens, upgrades in place, keeps its rows, and stores flags.

Pins: flags that lived only in result.json, so no report could count them; and a new column
added with create_all only, which leaves every existing database without it (create_all never
alters a table that exists).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

from evalharness.store import MIGRATIONS, Store, database_url
from evalharness.types import Flag

# The schema as version 1 wrote it (SQLite DDL of the store before flags), with one run and one trial.
OLD_SCHEMA = """
CREATE TABLE runs (run_id VARCHAR(80) NOT NULL PRIMARY KEY, created_at DATETIME NOT NULL, status VARCHAR(20) NOT NULL,
    pack VARCHAR(200) NOT NULL, pack_hash VARCHAR(64) NOT NULL, evalharness_version VARCHAR(40) NOT NULL,
    git_commit VARCHAR(64), config TEXT NOT NULL);
CREATE TABLE trials (run_id VARCHAR(80) NOT NULL REFERENCES runs (run_id), trial_id VARCHAR(400) NOT NULL,
    pack VARCHAR(200) NOT NULL, task_id VARCHAR(200) NOT NULL, harness VARCHAR(200) NOT NULL,
    model VARCHAR(200) NOT NULL, seed INTEGER NOT NULL, outcome VARCHAR(40) NOT NULL, resolved BOOLEAN NOT NULL,
    infra BOOLEAN NOT NULL, reason TEXT NOT NULL, attempts INTEGER NOT NULL, cost_usd FLOAT,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL,
    calls INTEGER NOT NULL, duration_s FLOAT NOT NULL, started_at DATETIME NOT NULL, finished_at DATETIME NOT NULL,
    repo VARCHAR(200) NOT NULL, detail TEXT NOT NULL, PRIMARY KEY (run_id, trial_id));
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
INSERT INTO runs VALUES ('old', '2026-11-01 10:00:00', 'completed', 'p', '0000', '0.1.0', NULL, '{}');
INSERT INTO trials VALUES ('old', 'p/t/h/m/seed-0', 'p', 't', 'h', 'm', 0, 'resolved', 1, 0, '', 1, NULL,
    0, 0, 0, 0, 1.0, '2026-11-01 10:00:00', '2026-11-01 10:00:01', '', 'old/p/t/h/m/seed-0');
"""


def _row(trial_id: str, **over) -> dict:
    now = datetime.now(timezone.utc)
    row = dict(run_id="old", trial_id=trial_id, pack="p", task_id="t", harness="h", model="m", seed=1,
               outcome="tampered", resolved=False, infra=False, reason="canary", attempts=1, cost_usd=None,
               input_tokens=0, output_tokens=0, cached_tokens=0, calls=0, duration_s=1.0, started_at=now,
               finished_at=now, repo="", detail="")
    return {**row, **over}


def test_an_old_database_upgrades_and_keeps_its_trials(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
    store = Store(database_url(path))
    old = store.trial_rows(["old"])
    assert [(r["trial_id"], r["outcome"], r["flags"]) for r in old] == [("p/t/h/m/seed-0", "resolved", [])]
    store.record_trial(_row("p/t/h/m/seed-1", flags=[Flag.TOUCHED_TESTS, "tampered"]))
    reopened = Store(database_url(path))  # a second open applies nothing twice
    assert [r["flags"] for r in reopened.trial_rows(["old"])] == [[], ["tampered", "touched_tests"]]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1 + len(MIGRATIONS),)]
        stored = conn.execute("SELECT flags FROM trials ORDER BY trial_id").fetchall()
    assert stored == [("[]",), ('["tampered", "touched_tests"]',)]  # plain JSON text, readable by any client


def test_a_new_database_has_flags_and_a_row_without_them_has_none(tmp_path):
    store = Store(database_url(tmp_path / "new.db"))
    store.create_run("old", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config={})
    store.record_trial(_row("a"))  # writers that predate flags still work
    store.record_trial(_row("b", flags=["touched_config"]))
    assert [r["flags"] for r in store.trial_rows(["old"])] == [[], ["touched_config"]]
