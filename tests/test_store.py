"""The store writes a trial once: a second write of a final result is refused, an infrastructure
failure may be replaced by its retry, and a run's snapshot survives a round trip.

Pins: resumed runs that appended a second row for a trial and double-counted it.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from evalharness.errors import UserError
from evalharness.store import Store, database_url


def _row(outcome="resolved", infra=False, **over):
    now = datetime.now(timezone.utc)
    row = dict(run_id="r1", trial_id="p/t/h/m/seed-0", pack="p", task_id="t", harness="h", model="m", seed=0,
               outcome=outcome, resolved=outcome == "resolved", infra=infra, reason="", attempts=1, cost_usd=None,
               input_tokens=0, output_tokens=0, cached_tokens=0, calls=0, duration_s=1.0, started_at=now,
               finished_at=now, repo="", detail="")
    return {**row, **over}


@pytest.fixture
def store(tmp_path):
    s = Store(database_url(tmp_path / "sub" / "eh.db"))
    s.create_run("r1", pack="p", pack_hash="0" * 64, version="0.1.0", git_commit=None, config={"run": {"seeds": [0]}})
    return s


def test_a_final_result_is_written_once(store):
    store.record_trial(_row())
    with pytest.raises(RuntimeError, match="already recorded"):
        store.record_trial(_row(outcome="unresolved"))
    assert [r["outcome"] for r in store.trial_rows(["r1"])] == ["resolved"]


def test_an_infra_failure_is_replaced_by_its_retry(store):
    store.record_trial(_row(outcome="sandbox_error", infra=True))
    assert store.done_trials("r1") == set()
    store.record_trial(_row(outcome="resolved", attempts=2))
    rows = store.trial_rows(["r1"])
    assert [(r["outcome"], r["attempts"]) for r in rows] == [("resolved", 2)]
    assert store.done_trials("r1") == {"p/t/h/m/seed-0"}


def test_run_snapshot_and_listing(store, tmp_path):
    store.record_trial(_row())
    reopened = Store(database_url(tmp_path / "sub" / "eh.db"))  # migrations are idempotent
    assert reopened.get_run("r1")["config"] == {"run": {"seeds": [0]}}
    assert [(r["run_id"], r["trials"], r["resolved"]) for r in reopened.list_runs()] == [("r1", 1, 1)]
    with pytest.raises(UserError, match="no run 'r2'"):
        reopened.get_run("r2")
