"""A dead model endpoint, end to end through the real CLI and Docker: the trial is ``model_unavailable`` (infra),
the run exits 3, the report leaves it out of the rates and names it; ``run --resume`` retries it once the
endpoint is back, and it resolves. A relay harness (``command``) whose endpoint answers 500 ends the same way,
while one whose requests the relay refuses stays ``harness_error``.

Pins: an outage counted as agent failures (``harness_error`` in every rate), so it looked like the model got
worse; and a resume that never retried such trials.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import sys
from pathlib import Path

import pytest
from support import QUICKSTART, TINYPACK, run_cli

sys.path.insert(0, str(Path(__file__).parent / "harness"))
from harness_scripts import git_apply  # noqa: E402

from evalharness.models import ModelRequest, ScriptedModelServer, bash, http_error, reply, tool_call  # noqa: E402
from evalharness.packs import load_pack  # noqa: E402
from evalharness.runner import RunConfig, run  # noqa: E402
from evalharness.types import ModelEndpoint  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _report(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"): stdout.rindex("}") + 1])


def _rows(db: Path, run_id: str) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("select * from trials where run_id = ?", (run_id,))]
    finally:
        con.close()


def _solver(patch: str):
    """The minimal harness's conversation: apply the gold patch, then submit."""
    def answer(request: ModelRequest):
        turn = sum(1 for m in request.body.get("messages", []) if m.get("role") == "assistant")
        return bash(git_apply(patch), text="Applying the fix.") if turn == 0 else reply("Done.", tool_call("submit"))
    return answer


def test_a_dead_endpoint_is_model_unavailable_left_out_and_retried_by_resume(tmp_path, base_image):
    task = load_pack(QUICKSTART).tasks[0]
    port = _closed_port()
    api_base = f"http://127.0.0.1:{port}/v1"
    (tmp_path / "model.yaml").write_text("num_retries: 1\ntimeout_s: 10\n")  # two attempts, quickly
    done = run_cli("run", "--pack", str(QUICKSTART), "--harness", "minimal", "--model", "openai/gpt-4o-mini",
                   "--api-base", api_base, "--model-config", str(tmp_path / "model.yaml"),
                   "--task", task.instance_id, "--format", "json", cwd=tmp_path, check=False)
    assert done.returncode == 3, done.stderr
    run_dir = next(p for p in (tmp_path / "runs").iterdir() if p.is_dir())
    result = json.loads(next(run_dir.glob("quickstart/*/minimal/*/seed-0/result.json")).read_text())
    assert result["outcome"] == "model_unavailable" and result["grade"] is None
    assert result["reason"].startswith(f"model endpoint unavailable: connection failed from {api_base} "
                                       "after 2 attempts"), result["reason"]
    [row] = _rows(tmp_path / "runs" / "evalharness.db", run_dir.name)
    assert (row["outcome"], row["infra"], row["resolved"]) == ("model_unavailable", 1, 0)
    report = _report(done.stdout)
    assert report["n_infra"] == 1 and report["infra"] == {"model_unavailable": 1}
    assert report["scores"][0]["n_trials"] == 0 and report["scores"][0]["resolve_rate"] is None
    assert "infrastructure failures" in done.stderr and f"--resume {run_dir.name}" in done.stderr

    with ScriptedModelServer(_solver(task.patch), port=port) as server:  # the endpoint is back
        again = run_cli("run", "--resume", run_dir.name, "--format", "json", cwd=tmp_path, check=False)
        assert server.requests, "the resumed trial never called the model"
    assert again.returncode == 0, again.stderr
    [row] = _rows(tmp_path / "runs" / "evalharness.db", run_dir.name)
    assert (row["outcome"], row["infra"]) == ("resolved", 0), row["reason"]
    report = _report(again.stdout)
    assert report["n_infra"] == 0 and report["scores"][0]["resolve_rate"] == 1.0


CURL_AGENT = """\
kind: command
description: a one-call agent (python3 urllib) that exits 1 when its model call fails
command: >-
  python3 -c "import json,sys,urllib.request as u;
  r=u.Request('{base_url}' + sys.argv[1], data=json.dumps(dict(model='{model_name}',
  messages=[dict(role='user', content=open('{problem_file}').read())])).encode(),
  headers={'content-type': 'application/json', 'authorization': 'Bearer {api_key}'});
  u.urlopen(r, timeout=30)" {path}
"""


def _command_harness(folder: Path, name: str, path: str) -> str:
    file = folder / f"{name}.yaml"
    file.write_text(CURL_AGENT.replace("{path}", path))
    return str(file)


def test_a_relay_harness_whose_endpoint_fails_is_unavailable_but_relay_refusals_are_the_agents(tmp_path, base_image):
    dead = _command_harness(tmp_path, "one-call", "/chat/completions")
    refused = _command_harness(tmp_path, "refused-call", "/embeddings")  # a path the relay refuses: its own 403
    with ScriptedModelServer({"on_exhausted": "repeat_last", "replies": [http_error(500)]}) as server:
        endpoint = ModelEndpoint(name="openai/gpt-4o-mini", api_base=f"{server.url}/v1")
        summary = run(RunConfig(pack=str(TINYPACK), harnesses=[dead, refused], models=[endpoint],
                                tasks=["tiny-clamp"], workers=1), runs_dir=tmp_path / "runs")
        reached, api_base = [r.path for r in server.requests], endpoint.api_base
    rows = {r["harness"]: r for r in _rows(tmp_path / "runs" / "evalharness.db", summary.run_id)}
    assert reached == ["/v1/chat/completions"]  # the refused request never left the relay
    assert (rows["one-call"]["outcome"], rows["one-call"]["infra"]) == ("model_unavailable", 1)
    assert rows["one-call"]["reason"] == (f"model endpoint unavailable: 500 server error from {api_base} "
                                          "after 1 attempt")
    assert (rows["refused-call"]["outcome"], rows["refused-call"]["infra"]) == ("harness_error", 0)
    assert summary.infra_remaining == 1 and summary.exit_code == 3
