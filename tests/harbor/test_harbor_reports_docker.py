"""Reports, `compare`, the review page and drift on a real Harbor-task run (issue 25): hand-made tasks in tmp whose
verifiers give fractions (continuous rewards) and one whose verifier writes no number (`verifier_error`).

One import and one `run` (two model-less `command` harnesses, 2 seeds) for the module; the report, compare and
review tests read that stored run; the drift test runs one day of a stream (`oracle`) on the same images."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from support import run_cli, write_file

pytestmark = [pytest.mark.docker, pytest.mark.slow]

COUNT = ('import os\np = "/app/answer.txt"\nn = len(open(p).read().split()) if os.path.exists(p) else 0\n'
         'open("/logs/verifier/reward.txt", "w").write(str(min(n, {m}) / {m}))\n')
"""The verifier's reward: words in /app/answer.txt out of ``m``, a fraction."""
LINES = {"two": 2, "three": 3}
"""Harness name -> words it writes: rewards 2/4 and 2/5 against 3/4 and 3/5, every seed alike."""


def _task(root: Path, name: str, check: str) -> None:
    write_file(root / name / "task.toml", 'version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 60.0\n'
                                      '[environment]\nallow_internet = false\n')
    write_file(root / name / "instruction.md", "Write four words into /app/answer.txt.\n")
    write_file(root / name / "environment" / "Dockerfile", "FROM debian:bookworm-slim\nWORKDIR /app\n")
    write_file(root / name / "tests" / "test.sh", "#!/bin/bash\npython3 /tests/check.py\n", 0o755)
    write_file(root / name / "tests" / "check.py", check)
    write_file(root / name / "solution" / "solve.sh", "#!/bin/bash\necho a b c d > /app/answer.txt\n", 0o755)


def _rows(root: Path, run_id: str) -> dict[tuple[str, str, int], dict]:
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM trials WHERE run_id = ?", (run_id,)).fetchall()
    return {(r["task_id"], r["harness"], r["seed"]): dict(r) for r in rows}


@pytest.fixture(scope="module")
def harbor_run(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("harbor-reports")
    src = root / "src"
    _task(src, "quarters", COUNT.format(m=4))
    _task(src, "fifths", COUNT.format(m=5))
    _task(src, "broken-verifier", 'open("/logs/verifier/reward.txt", "w").write("all good")\n')
    run_cli("packs", "import", "harbor", str(src), "--out", str(root / "pack"), cwd=root)
    args = []
    for name, words in LINES.items():
        path = root / f"{name}.yaml"
        path.write_text(json.dumps({"kind": "command", "name": name, "model": False,
                                    "command": f"echo {' '.join(['w'] * words)} > /app/answer.txt"}))
        args += ["-H", str(path)]
    done = run_cli("run", "-p", str(root / "pack"), *args, "--seeds", "2", cwd=root, check=False)
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 1").fetchall()
    return root, run_id, done


def test_a_verifier_error_is_loud_exit_1_named_and_retried_by_resume(harbor_run):
    root, run_id, done = harbor_run
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "/broken-verifier: reward_malformed: reward.txt is 'all good', not a number; on the task's own state too" \
        in done.stderr and "(4 trials)" in done.stderr  # the task's verifier fails without the agent too
    rows = _rows(root, run_id)
    assert rows[("quarters", "two", 0)]["outcome"] == "unresolved" and rows[("quarters", "two", 0)]["reward"] == 0.5
    assert {r["outcome"] for (t, _, _), r in rows.items() if t == "broken-verifier"} == {"verifier_error"}
    again = run_cli("run", "--resume", run_id, cwd=root, check=False)  # the verifier errors run again, and only they
    assert again.returncode == 1 and "4 trial(s)" in again.stderr
    assert _rows(root, run_id)[("quarters", "two", 0)]["finished_at"] == rows[("quarters", "two", 0)]["finished_at"]


def test_report_json_and_html_show_mean_rewards_and_name_the_verifier_error(harbor_run):
    root, run_id, _ = harbor_run
    report = json.loads(run_cli("report", run_id, "--format", "json", cwd=root).stdout)
    scores = {s["config"].split("/")[0]: s for s in report["rewards"]["scores"]}
    assert scores["two"]["mean_reward"] == pytest.approx((0.5 + 0.4) / 2)
    assert scores["three"]["mean_reward"] == pytest.approx((0.75 + 0.6) / 2)
    assert scores["two"]["n_tasks"] == 2 and scores["two"]["n_trials"] == 4 and scores["two"]["interval"] == "t"
    assert 0 <= scores["two"]["ci_low"] < 0.45 < scores["two"]["ci_high"] <= 1
    [cmp] = report["rewards"]["comparisons"]
    assert cmp["config"].startswith("two/") and cmp["diff"] == pytest.approx(-0.225)
    [broken] = report["task_errors"]
    assert (broken["task_id"], broken["outcome"], broken["trials"]) == ("broken-verifier", "verifier_error", 4)
    assert all(s["n_tasks"] == 2 for s in report["scores"])  # the broken verifier is left out of the rate too
    html = root / "report.html"
    run_cli("report", run_id, "--format", "html", "-o", str(html), cwd=root)
    page = html.read_text()
    assert 'id="rewards"' in page and "Mean reward per configuration" in page and "0.450" in page
    assert 'id="task-errors"' in page and "reward_malformed" in page


def test_compare_gives_the_paired_difference_of_mean_rewards(harbor_run):
    root, run_id, _ = harbor_run
    out = run_cli("compare", run_id, cwd=root).stdout
    assert "mean reward A - B" in out and "+0.225" in out and "0.675" in out  # A is `three`, sorted first
    assert "shared tasks" in out


def test_the_review_queue_shows_each_harbor_trials_work_directory_patch(harbor_run):
    root, run_id, _ = harbor_run
    where = ("--runs-dir", str(root / "runs"))
    queue = run_cli("review", "export", run_id, "--reviewer", "ann", *where, cwd=root).stdout
    rows = list(csv.DictReader(io.StringIO(queue)))
    assert len(rows) == 12 and all("+++ b/answer.txt" in r["patch"] for r in rows)  # 3 tasks x 2 harnesses x 2 seeds
    assert {r["patch"].count("\n+w") for r in rows} == {1} and "Write four words" in rows[0]["statement"]
    status = run_cli("review", "status", run_id, *where, cwd=root).stdout
    assert "12 patches in the queue" in status


def test_a_drift_stream_over_the_harbor_pack_counts_verifier_errors_apart(harbor_run):
    root, _, _ = harbor_run
    stream = {"name": "harbor", "pack": "pack", "harness": "oracle", "tasks": ["quarters", "fifths",
                                                                               "broken-verifier"],
              "baseline_days": 5, "short_baseline": True}
    (root / "drift.yaml").write_text(yaml.safe_dump({"store": "runs/evalharness.db", "streams": [stream]}))
    done = run_cli("drift", "run", "--config", "drift.yaml", "--day", "2026-01-01", "--format", "json", cwd=root,
                   check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # a task error alert, as for a broken task
    [stream_day] = json.loads(done.stdout)["streams"]
    status = stream_day["status"]  # quarters (oracle 4/4: resolved) and fifths (4/5: not resolved) are usable; the
    assert (status["planned"], status["usable"], status["resolved"], status["task_errors"]) == (3, 2, 1, 1)
    assert [a["kind"] for a in stream_day["alerts"]] == ["task_error"]  # verifier error is no unresolved trial
