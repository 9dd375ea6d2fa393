"""A command that never finishes is cut at the harness's command_timeout_s in both harnesses; the
model is told it timed out, the trajectory marks it, and the agent goes on to fix the task.

Pins: an agent loop that waited on a `sleep infinity` until the trial's wall budget and lost
the whole trial to one command.
"""

from __future__ import annotations

import json

import pytest
from harness_scripts import TrialScript, command, git_apply, run_in_process, submit
from support import TINYPACK

from evalharness.models import ScriptedModelServer

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_hanging_command_times_out_and_the_trial_still_resolves(tmp_path, base_image, tinypack):
    patch = next(t.patch for t in tinypack.tasks if t.instance_id == "tiny-clamp")
    (tmp_path / "quick-minimal.yaml").write_text("kind: minimal\ncommand_timeout_s: 2\n")
    (tmp_path / "quick-mini.yaml").write_text("kind: mini-swe-agent\ncommand_timeout_s: 2\n")

    def plan(harness: str) -> list:
        return [[command(harness, "sleep 600; echo never")], [command(harness, git_apply(patch))], [submit(harness)]]

    with ScriptedModelServer(TrialScript(tinypack.tasks, {"tiny-clamp": plan})) as server:
        rows, summary = run_in_process(tmp_path, TINYPACK, [str(tmp_path / "quick-minimal.yaml"),
                                                            str(tmp_path / "quick-mini.yaml")],
                                       server.endpoint("scripted-gpt"), tasks=["tiny-clamp"])
        told = [r.prompt for r in server.requests if "sleep 600" in r.prompt]
    assert len(rows) == 2
    for row in rows:
        assert row["outcome"] == "resolved", (row["harness"], row["reason"])
        steps = json.loads((summary.run_dir.parent / row["detail"] / "trajectory.json").read_text())["steps"]
        slept = next(s for s in steps if s.get("command") == "sleep 600; echo never")
        assert slept["timed_out"] is True and slept["exit_code"] != 0 and "never" not in slept["output"]
    assert any("timed out after 2 s" in p for p in told)  # minimal's observation
    assert any("the command timed out after 2 s" in p for p in told)  # mini-swe-agent's exception_info
