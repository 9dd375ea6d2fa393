"""`evalharness compare` and `plan` read stored runs and print the paired numbers of the statistics
layer: checked here against scipy on the issue's toy data (20 tasks x 4 seeds).

Pins: an A/B table that compared trial-level rates as if seeds were independent.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from scipy import stats
from support import run_cli

from evalharness.store import Store, database_url

A = [4, 4, 3, 4, 2, 0, 4, 1, 3, 4, 0, 2, 4, 3, 0, 4, 1, 4, 2, 3]
B = [4, 3, 2, 4, 1, 0, 3, 0, 3, 2, 0, 1, 4, 2, 0, 3, 1, 4, 1, 2]


def _record(store: Store, run_id: str, harness: str, successes: list[int], cost: float) -> None:
    now = datetime.now(timezone.utc)
    for t, k in enumerate(successes):
        for seed in range(4):
            ok = seed < k
            store.record_trial(dict(
                run_id=run_id, trial_id=f"toy/t{t}/{harness}/m/seed-{seed}", pack="toy", task_id=f"t{t:02d}",
                harness=harness, model="m", seed=seed, outcome="resolved" if ok else "unresolved", resolved=ok,
                infra=False, reason="", attempts=1, cost_usd=cost, input_tokens=100, output_tokens=10,
                cached_tokens=0, calls=1, duration_s=1.0, started_at=now, finished_at=now, repo="", detail=""))


@pytest.fixture
def runs_dir(tmp_path):
    store = Store(database_url(tmp_path / "runs" / "evalharness.db"))
    for run_id, harness, successes, cost in (("ra", "a", A, 0.02), ("rb", "b", B, 0.01)):
        store.create_run(run_id, pack="toy", pack_hash="0" * 64, version="t", git_commit=None, config={})
        _record(store, run_id, harness, successes, cost)
    store.create_run("both", pack="toy", pack_hash="0" * 64, version="t", git_commit=None, config={})
    _record(store, "both", "a", A, 0.02)
    _record(store, "both", "b", B, 0.01)
    return tmp_path / "runs"


def test_compare_two_runs_matches_scipy(runs_dir, tmp_path):
    out = run_cli("compare", "ra", "rb", "--runs-dir", str(runs_dir), "--format", "md", cwd=tmp_path).stdout
    ref = stats.ttest_rel([k / 4 for k in A], [k / 4 for k in B])
    assert f"| p (paired t) | {ref.pvalue:.4f} |" in out  # 0.0003
    assert "| difference A - B | +15.0% |" in out
    assert "| 95% interval (paired t) | [+8.0%, +22.0%] |" in out
    assert "| shared tasks | 20 |" in out
    assert f"| cost per resolved A | ${80 * 0.02 / sum(A):.4f} |" in out  # total cost / resolved trials
    assert f"| cost per resolved B | ${80 * 0.01 / sum(B):.4f} |" in out
    one_run = run_cli("compare", "both", "--a", "a/m", "--b", "b/m", "--runs-dir", str(runs_dir), "--format", "md",
                      cwd=tmp_path).stdout
    assert one_run == out


def test_compare_needs_two_configurations(runs_dir, tmp_path):
    done = run_cli("compare", "ra", "--runs-dir", str(runs_dir), cwd=tmp_path, check=False)
    assert done.returncode == 1 and "give --a and --b: the runs hold 1 configurations" in done.stderr


def test_plan_and_report_use_the_same_layer(runs_dir, tmp_path):
    plan = run_cli("plan", "both", "--runs-dir", str(runs_dir), "--format", "md", cwd=tmp_path).stdout
    rows = [line for line in plan.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [r.split("|")[1].strip() for r in rows] == ["1", "3", "5", "10"]
    needed = [float(r.split("|")[2]) for r in rows]
    assert needed == sorted(needed, reverse=True)  # more seeds, fewer tasks
    report = run_cli("report", "both", "--runs-dir", str(runs_dir), "--format", "md", cwd=tmp_path).stdout
    assert "## Paired comparisons (Holm-adjusted)" in report and "| b/m | a/m | 20 | -15.0 pts |" in report


def test_compare_from_another_folder_points_at_runs_dir(runs_dir, tmp_path):
    """Issue 27: from another folder the hint named --db, where the user has a runs folder (--runs-dir)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_cli("compare", "ra", "rb", cwd=elsewhere, check=False)
    assert done.returncode == 1 and "no results database at runs/evalharness.db" in done.stderr
    assert "--runs-dir PATH/runs" in done.stderr
    assert run_cli("compare", "ra", "rb", "--runs-dir", str(runs_dir), cwd=elsewhere).returncode == 0
