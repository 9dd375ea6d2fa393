"""Paper cuts a new user hit (issue 12, item 5), through the real command line on stored runs, no Docker.

Pins: `compare` pairing tasks of different packs by id without a word; a trial id printed by a run
(model `openai/good`) that `show` could not find (its folder says `openai__good`); `plan` printing
65.41 tasks, `1.047e+04` and, from a pilot with no variance, 0 as if it were a result; `show`
labelling the oracle's step `[None]`; `runs` lines without harnesses or models.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest
from support import run_cli

from evalharness.rundir import trial_dir, write_trial
from evalharness.runner import RunConfig
from evalharness.store import Store, database_url
from evalharness.types import ModelEndpoint

A = [4, 4, 3, 4, 2, 0, 4, 1, 3, 4, 0, 2, 4, 3, 0, 4, 1, 4, 2, 3]  # solved seeds of 4, per task
B = [4, 3, 2, 4, 1, 0, 3, 0, 3, 2, 0, 1, 4, 2, 0, 3, 1, 4, 1, 2]


def _trial(run_id: str, pack: str, task: str, harness: str, model: str, seed: int, ok: bool) -> dict:
    now = datetime.now(timezone.utc)
    return dict(run_id=run_id, trial_id=f"{pack}/{task}/{harness}/{model}/seed-{seed}", pack=pack, task_id=task,
                harness=harness, model=model, seed=seed, outcome="resolved" if ok else "unresolved", resolved=ok,
                infra=False, reason="", attempts=1, cost_usd=0.01, input_tokens=100, output_tokens=10,
                cached_tokens=0, calls=1, duration_s=1.0, started_at=now, finished_at=now, repo="",
                detail=f"{run_id}/{pack}/{task}/{harness}/{model.replace('/', '__')}/seed-{seed}")


def _run(store: Store, run_id: str, pack: str, harness: str, solved: list[int], seeds: int = 4) -> None:
    store.create_run(run_id, pack=pack, pack_hash="0" * 64, version="t", git_commit=None, config={})
    for t, k in enumerate(solved):
        for seed in range(seeds):
            store.record_trial(_trial(run_id, pack, f"t{t:02d}", harness, "m", seed, seed < k))


@pytest.fixture
def runs_dir(tmp_path):
    store = Store(database_url(tmp_path / "runs" / "evalharness.db"))
    _run(store, "ra", "toy", "a", A)
    _run(store, "rb", "toy", "b", B)
    _run(store, "rother", "other", "b", B)  # another pack whose task ids happen to coincide
    _run(store, "rc", "other", "c", B)
    _run(store, "allsolved", "toy", "a", [4] * 20)
    _run(store, "allsolved-b", "toy", "b", [4] * 20)
    return tmp_path / "runs"


def test_compare_refuses_to_pair_tasks_of_different_packs(runs_dir, tmp_path):
    same = run_cli("compare", "ra", "rb", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert "warning" not in same.stderr
    mixed = run_cli("compare", "ra", "rother", "--runs-dir", str(runs_dir), cwd=tmp_path, check=False)
    assert mixed.returncode == 1 and mixed.stdout == ""
    assert "the configurations compared span 2 packs (a/m: toy; b/m: other)" in mixed.stderr
    assert "--allow-mixed-packs" in mixed.stderr
    allowed = run_cli("compare", "ra", "rother", "--allow-mixed-packs", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert "warning: comparing trials of 2 packs (a/m: toy; b/m: other), paired by task id" in allowed.stderr
    assert "shared tasks" in allowed.stdout
    # a run of another pack whose configuration is not compared does not matter
    third = run_cli("compare", "ra", "rb", "rc", "--a", "a/m", "--b", "b/m", "--runs-dir", str(runs_dir),
                    cwd=tmp_path)
    assert third.stdout == same.stdout and "warning" not in third.stderr
    # one configuration whose trials come from two packs is refused too
    split = run_cli("compare", "ra", "rb", "rother", "--a", "a/m", "--b", "b/m", "--runs-dir", str(runs_dir),
                    cwd=tmp_path, check=False)
    assert split.returncode == 1 and "b/m: other, toy" in split.stderr


def _cells(stdout: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in stdout.splitlines()
            if line.startswith("| ") and line[2].isdigit()]


def test_plan_prints_whole_tasks_rounded_up_with_separators(runs_dir, tmp_path):
    rows = _cells(run_cli("plan", "ra", "rb", "--runs-dir", str(runs_dir), "--format", "md", cwd=tmp_path).stdout)
    assert [r[0] for r in rows] == ["1", "3", "5", "10"]
    for seeds, tasks, trials, *_ in rows:
        assert re.fullmatch(r"\d{1,3}(,\d{3})*", tasks), tasks
        assert int(trials.replace(",", "")) == int(tasks.replace(",", "")) * int(seeds)
    small = _cells(run_cli("plan", "ra", "rb", "--delta", "0.005", "--runs-dir", str(runs_dir), "--format", "md",
                           cwd=tmp_path).stdout)
    assert "," in small[0][1] and "e+" not in small[0][1]  # thousands of tasks, written out


def test_plan_from_a_pilot_without_variance_plans_nothing(runs_dir, tmp_path):
    done = run_cli("plan", "allsolved", "allsolved-b", "--runs-dir", str(runs_dir), "--format", "md", cwd=tmp_path)
    rows = _cells(done.stdout)
    assert len(rows) == 4 and all(r[1] == "n/a (pilot has no variance)" for r in rows)
    assert not any(cell in ("0", "0.0000") for r in rows for cell in r[1:])
    assert "note: pilot has no variance (a/m: 80 of 80 trials resolved; b/m: 80 of 80 trials resolved)" in done.stdout
    one = run_cli("plan", "allsolved", "--runs-dir", str(runs_dir), "--format", "md", cwd=tmp_path)
    assert all(r[1] == "n/a (pilot has no variance)" for r in _cells(one.stdout))


def test_plan_and_compare_help_name_the_same_options(tmp_path):
    plan = run_cli("plan", "--help", cwd=tmp_path).stdout
    compare = run_cli("compare", "--help", cwd=tmp_path).stdout
    for text in ("Configuration A as harness/model (default: the first of two).", "Configuration B as harness/model."):
        assert text in " ".join(plan.split()) and text in " ".join(compare.split())
    assert "--metric [resolved|merged]" in compare and "--allow-mixed-packs" in compare
    assert "rounded up" in plan


def _stored_trial(runs_dir, store: Store, run_id: str, harness: str, model: str, steps: list[dict]) -> str:
    """A trial of run ``run_id`` in the store and in its folder, as the runner writes them; its printed id."""
    if run_id not in {r["run_id"] for r in store.list_runs()}:
        store.create_run(run_id, pack="quickstart", pack_hash="0" * 64, version="t", git_commit=None, config={})
    row = _trial(run_id, "quickstart", "boltons-x", harness, model, 1, True)
    folder = trial_dir(runs_dir / run_id, "quickstart", "boltons-x", harness, model, 1)
    assert str(folder.relative_to(runs_dir)) == row["detail"]
    doc = {"format": "evalharness.trajectory/1", "task_id": "boltons-x", "harness": harness, "model": model,
           "seed": 1, "exit_status": "submitted", "usage": {"calls": 0}, "steps": steps}
    write_trial(folder, {"trajectory.json": doc, "result.json": {"outcome": "resolved", "reason": "all tests pass"}})
    store.record_trial(row)
    return row["trial_id"]


def test_show_takes_the_trial_id_a_run_prints(tmp_path):
    runs_dir = tmp_path / "runs"
    store = Store(database_url(runs_dir / "evalharness.db"))
    note = [{"index": 0, "t_start": "", "duration_s": 0.0, "kind": "note", "text": "submitted"}]
    trial_id = _stored_trial(runs_dir, store, "r1", "minimal", "openai/good", note)
    assert trial_id == "quickstart/boltons-x/minimal/openai/good/seed-1"  # as console.py prints it
    assert "openai__good" in store.trial_rows(["r1"])[0]["detail"]
    for args in ([trial_id], [f"r1/{trial_id}"], [trial_id, "--run", "r1"]):
        out = run_cli("show", *args, "--runs-dir", str(runs_dir), cwd=tmp_path).stdout
        assert "boltons-x · minimal · openai/good · seed 1" in out and "[0] • submitted" in out, args
    _stored_trial(runs_dir, store, "r2", "minimal", "openai/good", note)
    both = run_cli("show", trial_id, "--runs-dir", str(runs_dir), cwd=tmp_path, check=False)
    assert both.returncode == 1 and "is in 2 runs: r1, r2" in both.stderr and "--run RUN_ID" in both.stderr
    assert "openai/good · seed 1" in run_cli("show", trial_id, "--run", "r2", "--runs-dir", str(runs_dir),
                                             cwd=tmp_path).stdout
    missing = run_cli("show", "quickstart/nope/minimal/openai/good/seed-1", "--runs-dir", str(runs_dir),
                      cwd=tmp_path, check=False)
    assert missing.returncode == 1 and "no trial or run folder" in missing.stderr


def test_show_labels_the_oracle_step(tmp_path):
    runs_dir = tmp_path / "runs"
    store = Store(database_url(runs_dir / "evalharness.db"))
    step = {"action": "git apply /tmp/gold.diff", "exit_code": 0, "output": ""}  # as OracleHarness records it
    trial_id = _stored_trial(runs_dir, store, "r1", "oracle", "none", [step])
    out = run_cli("show", f"r1/{trial_id}", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout  # the folder's path
    assert "[None]" not in out
    assert "[0] oracle: gold patch applied" in out and "$ git apply /tmp/gold.diff" in out


def test_runs_lists_harnesses_and_models_of_a_runner_config(tmp_path):
    """The config `runs` reads is the runner's snapshot shape: {"run": RunConfig, "harnesses": {name: config}}."""
    runs_dir = tmp_path / "runs"
    store = Store(database_url(runs_dir / "evalharness.db"))
    run = RunConfig(pack="tasks/quickstart", harnesses=["minimal"], seeds=[0],
                    models=[ModelEndpoint(name="openai/good"), ModelEndpoint(name="anthropic/claude")])
    store.create_run("r1", pack="quickstart", pack_hash="0" * 64, version="t", git_commit=None,
                     config={"run": run.model_dump(mode="json"), "harnesses": {"minimal": {"kind": "minimal"}}})
    line = run_cli("runs", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout.strip()
    assert line.endswith("harnesses=minimal models=openai/good,anthropic/claude")
    listed = json.loads(run_cli("runs", "--format", "json", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout)
    assert listed[0]["harnesses"] == ["minimal"] and listed[0]["models"] == ["openai/good", "anthropic/claude"]


def _review(run_id: str, harness: str, task: int, verdict: str, reviewer: str = "ana") -> dict:
    return dict(pack="toy", task_id=f"t{task:02d}", arm="agent", run_id=run_id,
                trial_id=f"toy/t{task:02d}/{harness}/m/seed-0", reviewer=reviewer, verdict=verdict,
                reasons=[] if verdict == "merge" else ["code_quality"], seconds=30)


MERGED_A = [int(A[t] > 0 and t % 3 != 0) for t in range(20)]  # verdicts on seed 0 of every task
MERGED_B = [int(B[t] > 0 and t % 2 == 0) for t in range(20)]


def test_compare_on_merges_uses_the_reviews(runs_dir, tmp_path):
    from scipy import stats

    none = run_cli("compare", "ra", "rb", "--metric", "merged", "--runs-dir", str(runs_dir), cwd=tmp_path,
                   check=False)
    assert none.returncode == 1 and "no merge reviews for these runs (ra, rb)" in none.stderr
    assert "evalharness review serve ra rb" in none.stderr
    store = Store(database_url(runs_dir / "evalharness.db"))
    store.record_reviews([_review("ra", "a", t, "merge" if m else "reject") for t, m in enumerate(MERGED_A)])
    only_a = run_cli("compare", "ra", "rb", "--metric", "merged", "--runs-dir", str(runs_dir), cwd=tmp_path,
                     check=False)
    assert only_a.returncode == 1 and "no reviewed trial of b/m" in only_a.stderr
    store.record_reviews([_review("rb", "b", t, "merge" if m else "merge_after_changes")
                          for t, m in enumerate(MERGED_B)])
    out = run_cli("compare", "ra", "rb", "--metric", "merged", "--format", "md", "--runs-dir", str(runs_dir),
                  cwd=tmp_path).stdout
    ref = stats.ttest_rel(MERGED_A, MERGED_B)
    assert "| metric | merged (merge rate) |" in out and "| shared tasks | 20 |" in out
    assert f"| merge rate A | {sum(MERGED_A) / 20:.1%} |" in out
    assert f"| merge rate B | {sum(MERGED_B) / 20:.1%} |" in out
    assert f"| difference A - B | {(sum(MERGED_A) - sum(MERGED_B)) / 20:+.1%} |" in out
    assert f"| p (paired t) | {ref.pvalue:.4f} |" in out
    assert "120 trial(s) without a 'merged' value (not reviewed) left out" in out  # seeds 1-3 of both sides
    resolved = run_cli("compare", "ra", "rb", "--format", "md", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout
    assert "| metric | resolved (resolve rate) |" in resolved and "| difference A - B | +15.0% |" in resolved
