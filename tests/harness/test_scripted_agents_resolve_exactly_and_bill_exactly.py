"""Both model harnesses end to end through the CLI: `minimal` and `mini-swe-agent` drive a scripted
model (real litellm, real HTTP) on quickstart tasks in real Docker sandboxes, two seeds, two workers.

Exactly the trials whose script fixes the task resolve; every trial's tokens and cost in the
database equal what the server reported times the endpoint's prices; the report and the paired
comparison show both harnesses side by side; `evalharness show` renders a stored trial.

Pins: a harness that billed retried or rejected calls twice (or not at all), so cost per
resolved task was off while resolve rates looked fine; and trials sharing one scripted cursor
that answered each other's conversations when run in parallel.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict

import pytest
from harness_scripts import MINI, MINIMAL, PRICES, TrialScript, give_up, git_apply, python_edit, solve
from support import QUICKSTART, run_cli

from evalharness.models import ScriptedModelServer
from evalharness.packs import load_pack

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BOTH, ONLY_MINIMAL, NEITHER = ("boltons-strutils-parse-int-list", "boltons-mathutils-ceil-exact-match",
                               "boltons-dictutils-onetoone-reassign")
SEEDS = 2
EXPECTED_RESOLVED = {(MINIMAL, BOTH), (MINI, BOTH), (MINIMAL, ONLY_MINIMAL)}


@pytest.fixture(scope="module")
def acceptance(tmp_path_factory, base_image):
    tasks = {t.instance_id: t for t in load_pack(QUICKSTART).tasks}
    plans = {
        (MINIMAL, BOTH): solve(git_apply, tasks[BOTH].patch),
        (MINI, BOTH): solve(python_edit, tasks[BOTH].patch),
        (MINIMAL, ONLY_MINIMAL): solve(python_edit, tasks[ONLY_MINIMAL].patch),
        (MINI, ONLY_MINIMAL): give_up(),
        NEITHER: give_up(),
    }
    script = TrialScript(list(tasks.values()), plans)
    cwd = tmp_path_factory.mktemp("acceptance")
    with ScriptedModelServer(script) as server:
        done = run_cli("run", "--pack", str(QUICKSTART), "--harness", MINIMAL, "--harness", MINI,
                       "--model", "openai/scripted-gpt", "--api-base", f"{server.url}/v1",
                       "--input-cost-per-token", str(PRICES["input_cost_per_token"]),
                       "--output-cost-per-token", str(PRICES["output_cost_per_token"]),
                       "--task", BOTH, "--task", ONLY_MINIMAL, "--task", NEITHER,
                       "--seeds", str(SEEDS), "--workers", "2", "--format", "json", cwd=cwd)
        requests = server.requests
    run_id = next(p.name for p in (cwd / "runs").iterdir() if p.is_dir())
    db = sqlite3.connect(cwd / "runs" / "evalharness.db")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("select * from trials where run_id = ?", (run_id,))]
    return {"cwd": cwd, "run_id": run_id, "rows": rows, "requests": requests, "script": script,
            "stdout": done.stdout}


def test_exactly_the_scripted_fixes_resolve(acceptance):
    rows = acceptance["rows"]
    assert len(rows) == 3 * 2 * SEEDS
    resolved = {(r["harness"], r["task_id"], r["seed"]) for r in rows if r["resolved"]}
    assert resolved == {(h, t, s) for h, t in EXPECTED_RESOLVED for s in range(SEEDS)}
    others = {r["outcome"] for r in rows if not r["resolved"]}
    assert others <= {"no_patch", "unresolved"}, [(r["trial_id"], r["outcome"], r["reason"]) for r in rows]


def test_tokens_and_cost_per_trial_equal_the_server_billing(acceptance):
    billed: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for request in acceptance["requests"]:
        assert request.status == 200, (request.status, request.reply)
        harness, task, seed, _ = acceptance["script"].key(request)
        billed[(harness, task, seed)][0] += request.reply["input_tokens"]
        billed[(harness, task, seed)][1] += request.reply["output_tokens"]
        billed[(harness, task, seed)][2] += 1
    assert len(billed) == 12  # every trial sent its seed, so each conversation is told apart
    for row in acceptance["rows"]:
        input_tokens, output_tokens, calls = billed[(row["harness"], row["task_id"], row["seed"])]
        assert (row["input_tokens"], row["output_tokens"], row["calls"]) == (input_tokens, output_tokens, calls)
        expected = input_tokens * PRICES["input_cost_per_token"] + output_tokens * PRICES["output_cost_per_token"]
        assert row["cost_usd"] == pytest.approx(expected, rel=1e-12, abs=0)
    total = sum(r["cost_usd"] for r in acceptance["rows"])
    expected_total = sum(i * PRICES["input_cost_per_token"] + o * PRICES["output_cost_per_token"]
                         for i, o, _ in billed.values())
    assert total == pytest.approx(expected_total, rel=1e-12)


def test_trial_folders_hold_common_trajectories_that_match_the_database(acceptance):
    run_dir = acceptance["cwd"] / "runs" / acceptance["run_id"]
    for row in acceptance["rows"]:
        folder = acceptance["cwd"] / "runs" / row["detail"]
        doc = json.loads((folder / "trajectory.json").read_text())
        assert doc["format"] == "evalharness.trajectory/1" and doc["outcome"] == row["outcome"]
        kinds = [s["kind"] for s in doc["steps"]]
        assert kinds.count("model") == row["calls"]
        assert doc["usage"]["input_tokens"] == row["input_tokens"]
        commands = [s for s in doc["steps"] if s["kind"] == "command"]
        assert commands and all(s["exit_code"] == 0 for s in commands), commands
        assert sum(s["usage"]["output_tokens"] for s in doc["steps"] if s["kind"] == "model") == row["output_tokens"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["harnesses"][MINIMAL]["tool_mode"] == "tools"
    assert manifest["harnesses"][MINI]["mini_swe_agent_version"].startswith("2.4")


def test_report_and_paired_comparison_show_both_harnesses(acceptance):
    from evalharness.report.data import trials_frame
    from evalharness.stats import compare
    from evalharness.store import Store, database_url

    report = json.loads(acceptance["stdout"][: acceptance["stdout"].rindex("}") + 1])
    scores = {s["config"]: s for s in report["scores"]}
    assert scores[f"{MINIMAL}/openai/scripted-gpt"]["resolve_rate"] == pytest.approx(2 / 3)
    assert scores[f"{MINI}/openai/scripted-gpt"]["resolve_rate"] == pytest.approx(1 / 3)
    rows = {row[0]: row[1:] for row in report["per_task"]["rows"]}
    columns = report["per_task"]["columns"]
    side = dict(zip(columns, rows[ONLY_MINIMAL]))
    assert side[f"{MINIMAL}/openai/scripted-gpt"] == "2/2" and side[f"{MINI}/openai/scripted-gpt"] == "0/2"

    store = Store(database_url(acceptance["cwd"] / "runs" / "evalharness.db"))
    frame = trials_frame(store, [acceptance["run_id"]])
    result = compare(frame[frame["harness"] == MINIMAL], frame[frame["harness"] == MINI])
    assert result.n_shared == 3 and result.diff == pytest.approx(1 / 3)
    assert result.rate_a == pytest.approx(2 / 3) and result.rate_b == pytest.approx(1 / 3)
    text = run_cli("report", acceptance["run_id"], "--format", "md", cwd=acceptance["cwd"]).stdout
    assert f"{MINIMAL}/openai/scripted-gpt" in text and f"{MINI}/openai/scripted-gpt" in text


def test_show_renders_a_stored_trial(acceptance):
    trial = f"{acceptance['run_id']}/quickstart/{ONLY_MINIMAL}/{MINIMAL}/openai__scripted-gpt/seed-1"
    shown = run_cli("show", trial, cwd=acceptance["cwd"]).stdout
    assert "resolved" in shown and "submit" in shown and "python3 - <<'EVALHARNESS_EOF'" in shown
    assert "3 model calls" in shown
    listing = run_cli("show", acceptance["run_id"], cwd=acceptance["cwd"]).stdout.split()
    assert len(listing) == 12 and trial in listing
    missing = run_cli("show", "no-such-run", cwd=acceptance["cwd"], check=False)
    assert missing.returncode == 1 and "no trial or run folder" in missing.stderr
