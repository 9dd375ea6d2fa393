"""A Harbor verifier that gave no valid reward (`verifier_error`) is loud and never the agent's, without Docker:
named in the reports' task errors, retried by a resume (the store), counted apart by drift."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from evalharness.drift.days import day_status
from evalharness.report.task_errors import task_error_lines, task_errors
from evalharness.store import Store, database_url

REASON = "reward_malformed: reward.txt is 'all good', not a number"


def _row(task: str, outcome: str, seed: int = 0) -> dict:
    now = datetime.now(timezone.utc)
    return dict(run_id="r", trial_id=f"p/{task}/h/none/seed-{seed}", pack="p", task_id=task, harness="h",
                model="none", seed=seed, outcome=outcome, resolved=outcome == "resolved", infra=False,
                reason=REASON if outcome == "verifier_error" else "", attempts=1, cost_usd=None, input_tokens=0,
                output_tokens=0, cached_tokens=0, calls=0, duration_s=1.0, started_at=now, finished_at=now, repo="",
                detail="", flags=[])


def test_reports_name_verifier_errors_with_their_outcome_beside_task_errors():
    df = pd.DataFrame([_row("a", "verifier_error"), _row("a", "verifier_error", 1), _row("b", "task_error"),
                       _row("c", "unresolved")]).assign(config="h/none")
    errors = task_errors(df)
    assert [(e["task_id"], e["outcome"], e["trials"]) for e in errors] == [("a", "verifier_error", 2),
                                                                           ("b", "task_error", 1)]
    assert task_error_lines({"task_errors": errors})[0] == f"p/a (2 trials, verifier_error): {REASON}"


def test_a_resume_retries_a_verifier_error_and_may_replace_it(tmp_path):
    store = Store(database_url(tmp_path / "evalharness.db"))
    store.create_run("r", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config={})
    for row in (_row("a", "verifier_error"), _row("b", "unresolved"), _row("c", "task_error")):
        store.record_trial(row)
    assert store.done_trials("r") == {"p/b/h/none/seed-0"}
    store.record_trial(_row("a", "resolved"))  # the retry's result replaces the verifier error
    assert store.done_trials("r") == {"p/a/h/none/seed-0", "p/b/h/none/seed-0"}


def test_drift_counts_a_verifier_error_apart_never_as_an_unresolved_trial():
    rows = [{"outcome": "resolved", "resolved": True, "infra": False},
            {"outcome": "verifier_error", "resolved": False, "infra": False}]
    status = day_status(rows, planned=2)
    assert (status.usable, status.resolved, status.task_errors) == (1, 1, 1)
