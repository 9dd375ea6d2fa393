"""Reports split each configuration's score at its model's training cutoff, from what the run stored.

Pins: a report gave one resolve rate for a model on a pack whose older half was public before the
model's training cutoff; the lead it showed over a newer model came entirely from those tasks.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from support import run_cli

from evalharness.report.cutoff import run_dates
from evalharness.store import Store, database_url

BEFORE = {f"old{i}": i < 8 for i in range(10)}    # 8 of 10 resolved, created before the cutoff
AFTER = {f"new{i}": i < 3 for i in range(10)}     # 3 of 10 resolved, created after it
CREATED = {**{t: "2023-03-01T12:00:00Z" for t in BEFORE}, **{t: "2025-02-01" for t in AFTER}, "undated": ""}


def _record(store: Store, run_id: str, harness: str, model: str, results: dict[str, bool]) -> None:
    now = datetime.now(timezone.utc)
    for task, ok in results.items():
        store.record_trial(dict(
            run_id=run_id, trial_id=f"p/{task}/{harness}/{model}/seed-0", pack="p", task_id=task, harness=harness,
            model=model, seed=0, outcome="resolved" if ok else "unresolved", resolved=ok, infra=False, reason="",
            attempts=1, cost_usd=0.0, input_tokens=1, output_tokens=1, cached_tokens=0, calls=1, duration_s=1.0,
            started_at=now, finished_at=now, repo="", detail=""))


@pytest.fixture
def runs_dir(tmp_path):
    store = Store(database_url(tmp_path / "runs" / "evalharness.db"))
    config = {"run": {"models": [{"name": "old-model", "training_cutoff": "2024-06-30"}, {"name": "no-cutoff"}]},
              "task_created_at": CREATED}
    store.create_run("r1", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config=config)
    results = {**BEFORE, **AFTER, "undated": True}
    for model in ("old-model", "no-cutoff"):
        _record(store, "r1", "minimal", model, results)
    store.create_run("plain", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config={})
    _record(store, "plain", "minimal", "old-model", results)
    return tmp_path / "runs"


def test_the_json_report_has_the_split_for_the_model_with_a_cutoff_only(runs_dir, tmp_path):
    report = json.loads(run_cli("report", "r1", "--format", "json", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout)
    [row] = report["cutoff_split"]
    assert (row["config"], row["cutoff"]) == ("minimal/old-model", "2024-06-30")
    assert (row["n_tasks_before"], row["n_tasks_after"], row["n_undated"]) == (10, 10, 1)
    assert (row["resolve_rate_before"], row["resolve_rate_after"]) == pytest.approx((0.8, 0.3))
    assert row["difference"] == pytest.approx(-0.5) and row["diff_method"] == "newcombe"
    assert row["diff_low"] < -0.5 < row["diff_high"] < 0   # Newcombe: clear of zero for 8/10 vs 3/10


def test_every_format_shows_the_split(runs_dir, tmp_path):
    md = run_cli("report", "r1", "--format", "md", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout
    assert "## Before and after each model's training cutoff" in md
    assert "| minimal/old-model | 2024-06-30 | 80.0% [" in md and "(10 tasks) | -50.0 pts [" in md
    table = run_cli("report", "r1", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout
    assert "Before and after each model's training cutoff" in table and "-50.0 pts" in table
    run_cli("report", "r1", "--format", "html", "-o", str(tmp_path / "r.html"), "--runs-dir", str(runs_dir),
            cwd=tmp_path)
    html = (tmp_path / "r.html").read_text()
    assert "<h2>Before and after each model's training cutoff</h2>" in html and "-50.0 pts" in html


def test_a_run_without_cutoffs_has_no_split(runs_dir, tmp_path):
    report = json.loads(run_cli("report", "plain", "--format", "json", "--runs-dir", str(runs_dir),
                                cwd=tmp_path).stdout)
    assert report["cutoff_split"] == []
    md = run_cli("report", "plain", "--format", "md", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout
    assert "training cutoff" not in md


def test_dates_come_from_the_stored_configurations():
    created, cutoffs = run_dates([{"config": {"run": {"models": [{"name": "a", "training_cutoff": "2024-01-01"},
                                                                 {"name": "b", "training_cutoff": None}]},
                                             "task_created_at": {"t": "2025-01-01"}}}, {"config": {}}])
    assert created == {"t": "2025-01-01"} and cutoffs == {"a": "2024-01-01"}
