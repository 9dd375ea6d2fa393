"""Harnesses that call a model run on a Harbor pack through the real CLI, a real engine and real HTTP: `minimal` and
`mini-swe-agent` drive a scripted model (real litellm) in the task's environment container; the verifier decides.

Exactly the scripted fix resolves (two seeds); each trial's tokens and cost equal the server's billing; a dead
endpoint is `model_unavailable` (the machine's, never verified, exit 3) and a resume with the endpoint back
finishes the run; an agent that ends its own container (`kill -KILL -1` as root) is `unresolved`, never the
machine's; a `command` agent with install steps reaches its model through the relay, the real key added on the host.
Pins: model-calling harnesses ended as `harness_error` on every Harbor pack ("no relay here")."""

from __future__ import annotations

import json
import shlex
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
TASK, ENDS, SEEDS = "write-answer", "write-answer-again", 2
CHECK = ('import os\np = "/app/answer.txt"\nok = os.path.exists(p) and open(p).read().strip() == "solved"\n'
         'open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")\n')


def _task(root: Path, name: str, instruction: str) -> None:
    task = root / name
    write_file(task / "task.toml", 'version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 120.0\n'
                                   '[environment]\nallow_internet = false\n')
    write_file(task / "instruction.md", instruction)
    write_file(task / "environment" / "Dockerfile", "FROM debian:bookworm-slim\nWORKDIR /app\n")
    write_file(task / "tests" / "test.sh", "#!/bin/bash\npython3 /tests/check.py\n", 0o755)
    write_file(task / "tests" / "check.py", CHECK)
    write_file(task / "solution" / "solve.sh", "#!/bin/bash\necho solved > /app/answer.txt\n", 0o755)


def _tasks(root: Path) -> Path:
    _task(root, TASK, "Write the word solved into /app/answer.txt and nothing else.\n")
    _task(root, ENDS, "Put the word solved in /app/answer.txt, please.\n")
    return root


def _solve(harness: str) -> list:
    return [[command(harness, "pwd && ls -la")], [command(harness, "echo solved > answer.txt")], [submit(harness)]]


def _end_the_container(harness: str) -> list:
    """Root in its own container kills every process, `sleep` with them: the container stops under the agent. It
    stops asynchronously (the init process notices its child is gone), so the next command waits a little first: an
    `ls` sent at once can still run in the dying container, and the model is then rightly told its output."""
    return [[command(harness, "kill -KILL -1")], [command(harness, "sleep 3; ls")], [submit(harness)]]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(root: Path, run_id: str) -> dict[tuple[str, str, int], dict]:
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM trials WHERE run_id = ?", (run_id,)).fetchall()
    return {(r["task_id"], r["harness"], r["seed"]): dict(r) for r in rows}


def _latest(root: Path) -> str:
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 1").fetchall()
    return run_id


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("harbor-model")
    run_cli("packs", "import", "harbor", str(_tasks(root / "src")), "--out", str(root / "pack"), cwd=root)
    script = TrialScript(load_pack(root / "pack").tasks, {(MINIMAL, TASK): _solve, (MINI, TASK): give_up(), (MINIMAL, ENDS): _end_the_container,
                                                     (MINI, ENDS): _solve})
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
    expected = {(TASK, MINIMAL): "resolved", (TASK, MINI): "unresolved", (ENDS, MINIMAL): "unresolved",
                (ENDS, MINI): "resolved"}
    assert outcomes == {(task, harness, seed): outcome for (task, harness), outcome in expected.items()
                        for seed in range(SEEDS)}, {k: r["reason"] for k, r in rows.items()}
    result = json.loads((scripted_run["root"] / "runs" / rows[(TASK, MINIMAL, 0)]["detail"] / "result.json").read_text())
    assert result["reward"]["reward"] == 1.0
    patch = (scripted_run["root"] / "runs" / rows[(TASK, MINIMAL, 0)]["detail"] / "patch.diff").read_text()
    assert "+solved" in patch and "answer.txt" in patch  # the work directory's change, for review


def test_each_trials_tokens_and_cost_equal_the_servers_billing(scripted_run):
    billed: dict[tuple, list[int]] = {}
    for request in scripted_run["requests"]:
        assert request.status == 200, (request.status, request.reply)
        harness, task, seed, _ = scripted_run["script"].key(request)
        total = billed.setdefault((task, harness, seed), [0, 0])
        total[0] += request.reply["input_tokens"]
        total[1] += request.reply["output_tokens"]
    assert set(billed) == set(scripted_run["rows"])
    for key, row in scripted_run["rows"].items():
        assert (row["input_tokens"], row["output_tokens"]) == tuple(billed[key]), key
        expected = billed[key][0] * PRICES["input_cost_per_token"] + billed[key][1] * PRICES["output_cost_per_token"]
        assert row["cost_usd"] == pytest.approx(expected, rel=1e-9), key


def test_an_agent_that_ends_its_own_container_is_unresolved_not_the_machines(scripted_run):
    for seed in range(SEEDS):
        row = scripted_run["rows"][(ENDS, MINIMAL, seed)]
        assert (row["outcome"], row["infra"]) == ("unresolved", 0), row["reason"]
        steps = json.loads((scripted_run["root"] / "runs" / row["detail"] / "trajectory.json").read_text())
        assert "the agent's processes ended it" in json.dumps(steps)  # what the model was told


def test_a_dead_endpoint_is_the_machines_never_verified_and_a_resume_finishes(tmp_path, scripted_run):
    root = scripted_run["root"]
    port = _closed_port()
    (tmp_path / "model.yaml").write_text("num_retries: 1\ntimeout_s: 10\n")
    done = run_cli("run", "-p", str(root / "pack"), "-H", MINIMAL, "-m", "openai/gpt-4o-mini",
                   "--api-base", f"http://127.0.0.1:{port}/v1", "--model-config", str(tmp_path / "model.yaml"),
                   "--task", TASK, "--format", "json", cwd=root, check=False)
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


RELAY_AGENT = """\
import json, os, urllib.request as u
body = dict(model=os.environ["EH_MODEL"], messages=[dict(role="user", content=open(os.environ["EH_PROBLEM"]).read())])
request = u.Request(os.environ["EH_BASE"] + "/chat/completions", data=json.dumps(body).encode(),
                    headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["EH_KEY"]})
reply = json.load(u.urlopen(request, timeout=30))
open("answer.txt", "w").write(reply["choices"][0]["message"]["content"])
"""
"""A CLI agent in one model call: it writes what the model answers (installed by the harness's install steps)."""


def _relay_harness(folder: Path) -> str:
    path = folder / "relay-agent.yaml"
    path.write_text(json.dumps({
        "kind": "command", "name": "relay-agent", "install": ["mkdir -p /opt/eh", "ENV EH_AGENT=/opt/eh/agent.py",
                                                              _heredoc_step(RELAY_AGENT)],
        "command": "python3 $EH_AGENT",
        "env": {"EH_BASE": "{base_url}", "EH_MODEL": "{model_name}", "EH_KEY": "{api_key}",
                "EH_PROBLEM": "{problem_file}"}}))
    return str(path)


def _heredoc_step(text: str) -> str:
    """An install step writing ``text`` to /opt/eh/agent.py (a RUN line: one shell command, no heredoc)."""
    return "python3 -c " + shlex.quote(f"open('/opt/eh/agent.py', 'w').write({text!r})")


def test_a_command_agent_with_install_steps_reaches_its_model_through_the_relay(tmp_path, scripted_run):
    root = scripted_run["root"]
    script = {"on_exhausted": "repeat_last", "replies": [{"text": "solved", "input_tokens": 321, "output_tokens": 7}]}
    key = "sk-real-key-never-in-the-container"
    with ScriptedModelServer(script, require_key=key) as server:  # 401 unless the relay added the real key
        done = run_cli("run", "-p", str(root / "pack"), "-H", _relay_harness(tmp_path), "-m", "openai/scripted-gpt",
                       "--api-base", f"{server.url}/v1", "--api-key-env", "EH_TEST_KEY",
                       "--input-cost-per-token", "1e-6", "--output-cost-per-token", "1e-5",
                       "--task", TASK, "--format", "json", cwd=root, check=False, env={"EH_TEST_KEY": key})
        requests = server.requests
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [row] = _rows(root, _latest(root)).values()
    assert row["outcome"] == "resolved", row["reason"]
    assert [r.status for r in requests] == [200]
    assert (row["input_tokens"], row["output_tokens"]) == (321, 7)
    assert row["cost_usd"] == pytest.approx(321e-6 + 7e-5)
    detail = root / "runs" / row["detail"]
    changed = json.loads((detail / "result.json").read_text())["reward"]["changed_outside_workdir"]
    assert not any("/run/evalharness" in c for c in changed), changed  # the relay's mount point is not the agent's
    assert not any("sk-real-key" in p.read_text(errors="replace") for p in detail.rglob("*") if p.is_file())
