"""Merge reviews in the store: checked row by row, stored all or nothing, the latest per reviewer and item counts,
and a run's reviews include the gold arm of its pack's tasks.

Pins: a review of a trial that does not exist (or of another task than the trial's) that was stored; a bad row in
an import that left the rows before it stored; gold reviews of another pack counted as this run's baseline.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from evalharness.errors import UserError
from evalharness.store import Store


def _trial(store: Store, run_id: str, trial_id: str, task: str, pack: str = "p") -> None:
    now = datetime.now(timezone.utc)
    store.record_trial(dict(run_id=run_id, trial_id=trial_id, pack=pack, task_id=task, harness="h", model="m", seed=0,
                            outcome="resolved", resolved=True, infra=False, reason="", attempts=1, cost_usd=None,
                            input_tokens=0, output_tokens=0, cached_tokens=0, calls=0, duration_s=1.0,
                            started_at=now, finished_at=now, repo="r", detail="d", flags=[]))


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    for run, pack in (("r1", "p"), ("r2", "q")):
        s.create_run(run, pack=pack, pack_hash="x", version="0", git_commit=None, config={})
    _trial(s, "r1", "t1/s0", "t1")
    _trial(s, "r1", "t2/s0", "t2")
    _trial(s, "r2", "u1/s0", "u1", pack="q")
    return s


def agent(trial="t1/s0", task="t1", **kw):
    return {**dict(pack="p", task_id=task, arm="agent", run_id="r1", trial_id=trial, reviewer="ann",
                   verdict="merge"), **kw}


def test_latest_review_per_reviewer_and_item_counts_and_gold_comes_with_the_pack(store):
    t0 = datetime(2026, 12, 1, tzinfo=timezone.utc)
    store.record_reviews([agent(reviewed_at=t0), agent(verdict="reject", reasons=["code_quality"],
                                                       reviewed_at=t0 + timedelta(seconds=5)),
                          agent(reviewer="bob", reviewed_at=t0),
                          dict(pack="p", task_id="t1", arm="gold", reviewer="ann", verdict="merge"),
                          dict(pack="q", task_id="u1", arm="gold", reviewer="ann", verdict="reject",
                               reasons=["tests"])])
    got = store.reviews(["r1"])
    assert [(r["arm"], r["reviewer"], r["verdict"], r["reasons"]) for r in got] == [
        ("agent", "ann", "reject", ["code_quality"]), ("agent", "bob", "merge", []), ("gold", "ann", "merge", [])]
    assert len(store.reviews(["r1"], latest=False)) == 4
    assert [r["pack"] for r in store.reviews(["r2"])] == ["q"]


@pytest.mark.parametrize("bad, says", [
    (dict(verdict="maybe"), "verdict must be one of"),
    (dict(reasons=["vibes"], verdict="reject"), "unknown reason vibes"),
    (dict(reasons=["tests"]), "a merge verdict gives no reasons"),
    (dict(reviewer="  "), "needs a reviewer"),
    (dict(arm="human"), "arm must be one of"),
    (dict(trial_id="nope"), "no trial 'nope' in run 'r1'"),
    (dict(task_id="t2"), "is task 't1' of pack 'p', not 't2'"),
    (dict(seconds=-1), "seconds must be a non-negative number"),
    (dict(run_id=None), "names the run_id and trial_id"),
])
def test_a_bad_row_is_named_and_nothing_of_the_batch_is_stored(store, bad, says):
    with pytest.raises(UserError, match=says) as e:
        store.record_reviews([agent(trial="t2/s0", task="t2"), agent(**bad)])
    assert "review 2" in str(e.value)
    assert store.reviews(["r1"], latest=False) == []
