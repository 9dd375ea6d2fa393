"""A run's name and tags are stored with it and found again: `find_runs` matches the name exactly and
every tag pair given, newest first; a database written before runs had labels upgrades in place (SQLite
and PostgreSQL) and its runs have no name and no tags; a bad label is refused before anything is written.

Pins: runs could not be named or tagged, so a cron job could not tell which runs belong to its stream.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

import pytest
from test_store_flags_migration import OLD_SCHEMA
from test_store_postgres import V1_SCHEMA, postgres_url  # noqa: F401  (the fixture)

from evalharness.errors import UserError
from evalharness.store import MIGRATIONS, Store, check_labels, database_url


def _create(store: Store, run_id: str, **labels) -> None:
    store.create_run(run_id, pack="p", pack_hash="0" * 64, version="t", git_commit=None,
                     config={"run": {"harnesses": ["oracle"]}}, **labels)


def _trial(run_id: str, trial_id: str, resolved: bool) -> dict:
    now = datetime.now(timezone.utc)
    return dict(run_id=run_id, trial_id=trial_id, pack="p", task_id="t", harness="h", model="m", seed=0,
                outcome="resolved" if resolved else "unresolved", resolved=resolved, infra=False, reason="",
                attempts=1, cost_usd=None, input_tokens=0, output_tokens=0, cached_tokens=0, calls=0, duration_s=1.0,
                started_at=now, finished_at=now, repo="", detail="")


def _fill(store: Store) -> None:
    _create(store, "r1", name="nightly", tags={"model": "gpt", "pack": "lite"})
    _create(store, "r2", name="nightly", tags={"model": "claude", "pack": "lite"})
    _create(store, "r3", name="adhoc", tags={"model": "gpt"})
    _create(store, "r4")
    store.record_trial(_trial("r1", "a", True))
    store.record_trial(_trial("r1", "b", False))


def _ids(rows: list[dict]) -> list[str]:
    return [r["run_id"] for r in rows]


@pytest.fixture
def store(tmp_path):
    s = Store(database_url(tmp_path / "eh.db"))
    _fill(s)
    return s


def test_find_runs_matches_the_name_and_every_tag_newest_first(store):
    assert _ids(store.find_runs()) == ["r4", "r3", "r2", "r1"]
    assert _ids(store.find_runs(name="nightly")) == ["r2", "r1"]
    assert _ids(store.find_runs(tags={"model": "gpt"})) == ["r3", "r1"]
    assert _ids(store.find_runs(name="nightly", tags={"model": "gpt", "pack": "lite"})) == ["r1"]
    assert _ids(store.find_runs(tags={"model": "gpt", "pack": "other"})) == []
    assert _ids(store.find_runs(name="Nightly")) == []  # exact, not case-folded
    assert _ids(store.find_runs(tags={})) == ["r4", "r3", "r2", "r1"]


def test_rows_carry_labels_counts_and_config(store):
    [r1] = store.find_runs(name="nightly", tags={"model": "gpt"})
    assert (r1["name"], r1["tags"], r1["trials"], r1["resolved"]) == ("nightly", {"model": "gpt", "pack": "lite"}, 2, 1)
    assert r1["config"] == {"run": {"harnesses": ["oracle"]}}
    [r4] = store.find_runs(name=None, tags=None)[:1]
    assert (r4["name"], r4["tags"], r4["trials"], r4["resolved"]) == (None, {}, 0, 0)
    assert _ids(store.list_runs()) == ["r1", "r2", "r3", "r4"]  # list_runs keeps its order: oldest first
    got = store.get_run("r2")
    assert (got["name"], got["tags"]) == ("nightly", {"model": "claude", "pack": "lite"})


@pytest.mark.parametrize("name, tags, message", [
    ("", None, "a run name is 1-200 characters"),
    ("   ", None, "not only spaces"),
    ("x" * 201, None, "1-200 characters"),
    (None, {"bad key": "v"}, "tag key 'bad key' is not valid"),
    (None, {"a=b": "v"}, "tag key 'a=b'"),
    (None, {"": "v"}, "tag key ''"),
    (None, {"k": 3}, "tag 'k': the value must be text"),
])
def test_a_bad_label_is_refused_and_nothing_is_written(tmp_path, name, tags, message):
    store = Store(database_url(tmp_path / "eh.db"))
    with pytest.raises(UserError, match=message):
        _create(store, "bad", name=name, tags=tags)
    assert store.list_runs() == []


def test_good_labels_pass():
    check_labels("nightly gpt-4o (lite)", {"model.name": "openai/gpt-4o", "A_1-b": "", "url": "http://x/?a=b"})
    check_labels(None, None)


def _v5_schema() -> str:
    """The SQLite schema just before runs had labels: version 1 plus migrations 2-5."""
    return OLD_SCHEMA.replace("INSERT INTO schema_version VALUES (1);", "INSERT INTO schema_version VALUES (5);") + \
        "".join(f"{statement};\n" for statement in MIGRATIONS[:4])


@pytest.mark.parametrize("schema", [OLD_SCHEMA, _v5_schema()], ids=["version-1", "version-5"])
def test_an_old_sqlite_database_gains_name_and_tags(tmp_path, schema):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(schema)
    store = Store(database_url(path))
    [old] = store.find_runs()
    assert (old["run_id"], old["name"], old["tags"], old["trials"]) == ("old", None, {}, 1)
    _create(store, "new", name="nightly", tags={"a": "b"})
    reopened = Store(database_url(path))  # a second open applies nothing twice
    assert _ids(reopened.find_runs(tags={"a": "b"})) == ["new"]
    assert _ids(reopened.find_runs()) == ["new", "old"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1 + len(MIGRATIONS),)]
        rows = conn.execute("SELECT run_id, name, tags FROM runs ORDER BY run_id").fetchall()
    assert rows == [("new", "nightly", '{"a": "b"}'), ("old", None, "{}")]  # plain JSON text, readable by any client


@pytest.mark.postgres
def test_labels_on_postgres_and_an_old_database_upgrades(postgres_url):  # noqa: F811
    import sqlalchemy as sa

    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text("CREATE DATABASE labels_fresh"))
        conn.execute(sa.text("CREATE DATABASE labels_old"))
    admin.dispose()
    base = postgres_url.rsplit("/", 1)[0]
    fresh = Store(f"{base}/labels_fresh")
    _fill(fresh)
    assert _ids(fresh.find_runs(tags={"model": "gpt"})) == ["r3", "r1"]
    assert _ids(fresh.find_runs(name="nightly", tags={"pack": "lite"})) == ["r2", "r1"]
    [r1] = fresh.find_runs(name="nightly", tags={"model": "gpt"})
    assert (r1["tags"], r1["trials"], r1["resolved"]) == ({"model": "gpt", "pack": "lite"}, 2, 1)
    fresh.engine.dispose()

    old = sa.create_engine(f"{base}/labels_old")
    with old.begin() as conn:
        for statement in V1_SCHEMA.split(";"):
            if statement.strip():
                conn.execute(sa.text(statement))
    old.dispose()
    upgraded = Store(f"{base}/labels_old")
    _create(upgraded, "new", name="nightly", tags={"a": "b"})
    assert [(r["run_id"], r["name"], r["tags"]) for r in Store(f"{base}/labels_old").find_runs()] == [
        ("new", "nightly", {"a": "b"}), ("pg2", None, {})]
    upgraded.engine.dispose()
