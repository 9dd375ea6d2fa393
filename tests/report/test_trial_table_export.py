"""`report --format csv|parquet`: the trial table through the real CLI, one row per trial with the columns of
``export.COLUMNS`` and, once reviews exist, ``merged`` (the share of the trial's reviewers who would merge it).

Pins: a CSV export that dropped the reviews the report used; parquet written to a terminal; a table whose
numbers did not match the store.
"""

from __future__ import annotations

import io

import pandas as pd
from report_runs import make_run
from support import run_cli

from evalharness.report.export import COLUMNS


def test_csv_and_parquet_hold_every_trial_and_the_merge_share(tmp_path):
    store, runs_dir = make_run(tmp_path, configs=["a/m", "b/m"], tasks=3, seeds=2, solved=lambda c, t, s: t < 2)
    where = ["--runs-dir", str(runs_dir)]
    csv = pd.read_csv(io.StringIO(run_cli("report", "r1", "--format", "csv", *where, cwd=tmp_path).stdout))
    assert list(csv.columns) == COLUMNS and len(csv) == 12
    assert csv["resolved"].sum() == sum(r["resolved"] for r in store.trial_rows(["r1"]))

    trial = store.trial_rows(["r1"])[0]
    store.record_reviews([{"pack": trial["pack"], "task_id": trial["task_id"], "arm": "agent", "run_id": "r1",
                           "trial_id": trial["trial_id"], "reviewer": who, "verdict": verdict,
                           "reasons": [] if verdict == "merge" else ["tests"]}
                          for who, verdict in (("ann", "merge"), ("bob", "reject"))])
    csv = pd.read_csv(io.StringIO(run_cli("report", "r1", "--format", "csv", *where, cwd=tmp_path).stdout))
    assert list(csv.columns) == [*COLUMNS, "merged"]
    shares = dict(zip(csv["trial_id"], csv["merged"]))
    assert shares.pop(trial["trial_id"]) == 0.5 and all(pd.isna(v) for v in shares.values())

    out = tmp_path / "t.parquet"
    run_cli("report", "r1", "--format", "parquet", "-o", str(out), *where, cwd=tmp_path)
    table = pd.read_parquet(out)
    assert len(table) == 12 and table.set_index("trial_id")["merged"][trial["trial_id"]] == 0.5
    refused = run_cli("report", "r1", "--format", "parquet", *where, cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "parquet is binary" in refused.stderr
