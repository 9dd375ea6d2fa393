"""Harnesses that call a model run on a Harbor pack through the real CLI, a real engine and real HTTP: `minimal` and
`mini-swe-agent` drive a scripted model (real litellm) in the task's environment container; the verifier decides.

Exactly the scripted fix resolves (two seeds); each trial's tokens and cost equal the server's billing; a dead
endpoint is `model_unavailable` (the machine's, never verified, exit 3) and a resume with the endpoint back
finishes the run. Pins: model-calling harnesses ended as `harness_error` on every Harbor pack ("no relay here")."""

from __future__ import annotations

import json
import socket
import sqlite3
import sys
from pathlib import Path

import pytest

from support import run_cli, write_file

sys.path.insert(0, str(Path(__file__).parents[1] / "harness"))
from harness_scripts import MINI, MINIMAL, PRICES, TrialScript, command, give_up, submit  # noqa: E402

from evalharness.models import ScriptedModelServer  # noqa: E402
from evalharness.packs import load_pack  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASK, SEEDS = "write-answer", 2
CHECK = ('import os\np = "/app/answer.txt"\nok = os.path.exists(p) and open(p).read().strip() == "solved"\n'
         'open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")\n')


def _task(root: Path) -> Path:
    task = root / TASK
    write_file(task / "task.toml", 'version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 120.0\n'
                                   '[environment]\nallow_internet = false\n')
    write_file(task / "instruction.md", "Write the word solved into /app/answer.txt and nothing else.\n")
    write_file(task / "environment" / "Dockerfile", "FROM debian:bookworm-slim\nWORKDIR /app\n")
    write_file(task / "tests" / "test.sh", "#!/bin/bash\npython3 /tests/check.py\n", 0o755)
    write_file(task / "tests" / "check.py", CHECK)
    write_file(task / "solution" / "solve.sh", "#!/bin/bash\necho solved > /app/answer.txt\n", 0o755)
    return root


def _solve(harness: str) -> list:
    return [[command(harness, "pwd && ls -la")], [command(harness, "echo solved > answer.txt")], [submit(harness)]]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(root: Path, run_id: str) -> dict[tuple[str, int], dict]:
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM trials WHERE run_id = ?", (run_id,)).fetchall()
    return {(r["harness"], r["seed"]): dict(r) for r in rows}


def _latest(root: Path) -> str:
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 1").fetchall()
    return run_id


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("harbor-model")
    run_cli("packs", "import", "harbor", str(_task(root / "src")), "--out", str(root / "pack"), cwd=root)
    script = TrialScript(load_pack(root / "pack").tasks, {(MINIMAL, TASK): _solve, (MINI, TASK): give_up()})
    with ScriptedModelServer(script) as server:
        done = run_cli("run", "-p", str(root / "pack"), "-H", MINIMAL, "-H", MINI, "-m", "openai/scripted-gpt",
                       "--api-base", f"{server.url}/v1", "--seeds", str(SEEDS),
                       "--input-cost-per-token", str(PRICES["input_cost_per_token"]),
                       "--output-cost-per-token", str(PRICES["output_cost_per_token"]),
                       "--format", "json", cwd=root, check=False)
        requests = server.requests
    run_id = _latest(root)
    return {"root": root, "done": done, "rows": _rows(root, run_id), "requests": requests, "script": script,
            "run_id": run_id}


def test_exactly_the_scripted_fix_is_resolved_by_the_verifier(scripted_run):
    done, rows = scripted_run["done"], scripted_run["rows"]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    outcomes = {key: row["outcome"] for key, row in rows.items()}
    assert outcomes == {(MINIMAL, 0): "resolved", (MINIMAL, 1): "resolved",
                        (MINI, 0): "unresolved", (MINI, 1): "unresolved"}, {k: r["reason"] for k, r in rows.items()}
    result = json.loads((scripted_run["root"] / "runs" / rows[(MINIMAL, 0)]["detail"] / "result.json").read_text())
    assert result["reward"]["reward"] == 1.0
    patch = (scripted_run["root"] / "runs" / rows[(MINIMAL, 0)]["detail"] / "patch.diff").read_text()
    assert "+solved" in patch and "answer.txt" in patch  # the work directory's change, for review


def test_each_trials_tokens_and_cost_equal_the_servers_billing(scripted_run):
    billed: dict[tuple, list[int]] = {}
    for request in scripted_run["requests"]:
        assert request.status == 200, (request.status, request.reply)
        harness, _, seed, _ = scripted_run["script"].key(request)
        total = billed.setdefault((harness, seed), [0, 0])
        total[0] += request.reply["input_tokens"]
        total[1] += request.reply["output_tokens"]
    assert set(billed) == set(scripted_run["rows"])
    for key, row in scripted_run["rows"].items():
        assert (row["input_tokens"], row["output_tokens"]) == tuple(billed[key]), key
        expected = billed[key][0] * PRICES["input_cost_per_token"] + billed[key][1] * PRICES["output_cost_per_token"]
        assert row["cost_usd"] == pytest.approx(expected, rel=1e-9), key


def test_a_dead_endpoint_is_the_machines_never_verified_and_a_resume_finishes(tmp_path, scripted_run):
    root = scripted_run["root"]
    port = _closed_port()
    (tmp_path / "model.yaml").write_text("num_retries: 1\ntimeout_s: 10\n")
    done = run_cli("run", "-p", str(root / "pack"), "-H", MINIMAL, "-m", "openai/gpt-4o-mini",
                   "--api-base", f"http://127.0.0.1:{port}/v1", "--model-config", str(tmp_path / "model.yaml"),
                   "--format", "json", cwd=root, check=False)
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    run_id = _latest(root)
    [row] = _rows(root, run_id).values()
    assert (row["outcome"], row["infra"], row["resolved"]) == ("model_unavailable", 1, 0), row["reason"]
    result = json.loads((root / "runs" / row["detail"] / "result.json").read_text())
    assert result.get("reward") is None  # the verifier never ran on a trial the endpoint ended
    script = TrialScript(load_pack(root / "pack").tasks, {(MINIMAL, TASK): _solve})
    with ScriptedModelServer(script, port=port) as server:
        again = run_cli("run", "--resume", run_id, "--format", "json", cwd=root, check=False)
        assert server.requests, "the resumed trial never called the model"
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    [row] = _rows(root, run_id).values()
    assert (row["outcome"], row["infra"]) == ("resolved", 0), row["reason"]
