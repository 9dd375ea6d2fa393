"""The store runs unchanged on PostgreSQL (a real server on loopback), not only SQLite.

Pins: SQLite-only SQL (booleans as integers, upserts) creeping into the store and breaking the
database URL option that shared deployments depend on.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from evalharness.store import Store

pytestmark = pytest.mark.postgres


def _pg_bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None)
    if not found:
        pytest.fail(f"PostgreSQL binary {name} not found: scripts/setup installs it (apt-get install postgresql)")
    return str(found)


def _as_db_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture(scope="module")
def postgres_url():
    data = Path(tempfile.mkdtemp(prefix="evalharness-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(data, user.pw_uid, user.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(_as_db_user([_pg_bin("initdb"), "-D", str(data / "db"), "-U", "eh", "--auth=trust"]),
                   check=True, capture_output=True)
    subprocess.run(_as_db_user([_pg_bin("pg_ctl"), "-D", str(data / "db"), "-w", "-l", str(data / "log"),
                                "-o", f"-h 127.0.0.1 -p {port} -k {data}", "start"]), check=True, capture_output=True)
    try:
        yield f"postgresql+psycopg://eh@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_db_user([_pg_bin("pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def _row(trial: str, outcome: str, infra: bool) -> dict:
    now = datetime.now(timezone.utc)
    return dict(run_id="pg1", trial_id=trial, pack="p", task_id="t", harness="h", model="m", seed=0,
                outcome=outcome, resolved=outcome == "resolved", infra=infra, reason="r", attempts=1, cost_usd=0.5,
                input_tokens=10, output_tokens=2, cached_tokens=0, calls=1, duration_s=1.5, started_at=now,
                finished_at=now, repo="", detail="")


def test_store_round_trip_on_postgres(postgres_url):
    store = Store(postgres_url)
    store.create_run("pg1", pack="p", pack_hash="0" * 64, version="t", git_commit="abc", config={"run": {"x": 1}})
    store.record_trial(_row("a", "resolved", False))
    store.record_trial(_row("b", "sandbox_error", True))
    store.record_trial(_row("b", "unresolved", False))  # the infra failure is replaced by its retry
    with pytest.raises(RuntimeError, match="already recorded"):
        store.record_trial(_row("a", "unresolved", False))
    rows = Store(postgres_url).trial_rows(["pg1"])
    assert [(r["trial_id"], r["outcome"], r["resolved"], r["infra"]) for r in rows] == [
        ("a", "resolved", True, False), ("b", "unresolved", False, False)]
    assert store.get_run("pg1")["config"] == {"run": {"x": 1}}
    assert [(r["trials"], r["resolved"]) for r in store.list_runs()] == [(2, 1)]


def test_a_version_1_database_upgrades_on_postgres(postgres_url):
    """The schema as version 1 wrote it, in a database of its own; opening it applies every migration."""
    import sqlalchemy as sa

    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text("CREATE DATABASE old1"))
    admin.dispose()
    old_url = postgres_url.rsplit("/", 1)[0] + "/old1"
    old = sa.create_engine(old_url)
    with old.begin() as conn:
        for statement in V1_SCHEMA.split(";"):
            if statement.strip():
                conn.execute(sa.text(statement))
    old.dispose()
    upgraded = Store(old_url)
    upgraded.record_trial({**_row("c", "tampered", False), "run_id": "pg2", "flags": ["touched_tests", "tampered"]})
    assert [(r["trial_id"], r["flags"]) for r in Store(old_url).trial_rows(["pg2"])] == [
        ("b", []), ("c", ["tampered", "touched_tests"])]
    upgraded.engine.dispose()


V1_SCHEMA = """
CREATE TABLE runs (run_id VARCHAR(80) PRIMARY KEY, created_at TIMESTAMP WITH TIME ZONE NOT NULL,
    status VARCHAR(20) NOT NULL, pack VARCHAR(200) NOT NULL, pack_hash VARCHAR(64) NOT NULL,
    evalharness_version VARCHAR(40) NOT NULL, git_commit VARCHAR(64), config TEXT NOT NULL);
CREATE TABLE trials (run_id VARCHAR(80) NOT NULL REFERENCES runs (run_id), trial_id VARCHAR(400) NOT NULL,
    pack VARCHAR(200) NOT NULL, task_id VARCHAR(200) NOT NULL, harness VARCHAR(200) NOT NULL,
    model VARCHAR(200) NOT NULL, seed INTEGER NOT NULL, outcome VARCHAR(40) NOT NULL, resolved BOOLEAN NOT NULL,
    infra BOOLEAN NOT NULL, reason TEXT NOT NULL, attempts INTEGER NOT NULL, cost_usd DOUBLE PRECISION,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL,
    calls INTEGER NOT NULL, duration_s DOUBLE PRECISION NOT NULL, started_at TIMESTAMP WITH TIME ZONE NOT NULL,
    finished_at TIMESTAMP WITH TIME ZONE NOT NULL, repo VARCHAR(200) NOT NULL, detail TEXT NOT NULL,
    PRIMARY KEY (run_id, trial_id));
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
INSERT INTO runs VALUES ('pg2', now(), 'completed', 'p', '0000', '0.1.0', NULL, '{}');
INSERT INTO trials VALUES ('pg2', 'b', 'p', 't', 'h', 'm', 0, 'resolved', true, false, '', 1, NULL,
    0, 0, 0, 0, 1.0, now(), now(), '', '')
"""


def test_merge_reviews_on_postgres(postgres_url):
    """Reviews are stored all or nothing and read back latest per reviewer and item, gold by pack, on PostgreSQL."""
    from evalharness.errors import UserError

    store = Store(postgres_url)
    store.create_run("pgr", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config={})
    store.record_trial({**_row("a", "resolved", False), "run_id": "pgr"})
    agent = dict(pack="p", task_id="t", arm="agent", run_id="pgr", trial_id="a", reviewer="ann", verdict="merge")
    with pytest.raises(UserError, match="review 2: no trial 'zz'"):
        store.record_reviews([agent, {**agent, "trial_id": "zz"}])
    assert store.reviews(["pgr"], latest=False) == []
    store.record_reviews([agent, {**agent, "verdict": "reject", "reasons": ["tests", "code_quality"]},
                          dict(pack="p", task_id="t", arm="gold", reviewer="ann", verdict="merge")])
    got = Store(postgres_url).reviews(["pgr"])
    assert [(r["arm"], r["verdict"], r["reasons"]) for r in got] == [
        ("agent", "reject", ["code_quality", "tests"]), ("gold", "merge", [])]
