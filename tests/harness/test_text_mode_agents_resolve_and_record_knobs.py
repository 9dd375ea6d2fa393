"""Text mode (no tool calling) in both harnesses: a reply without exactly one command block is a format
error the model is told about, not a crash; the fix in a fenced block resolves the task; the
harness knobs (mode, prompt variant, output limit, mini-swe-agent's config file) are recorded in
the run snapshot, the output limit really bounds what the model sees and what is stored, and
the endpoint's temperature and the trial's seed reach the model.

Pins: an output limit that was recorded but applied only to the stored trajectory, so the model
was sent megabytes, and a text-mode reply with no block that ended the trial as a harness error.
"""

from __future__ import annotations

import json

import pytest
from harness_scripts import MINI_TEXT, MINIMAL_TEXT, TrialScript, command, git_apply, harness_of, run_in_process, submit
from support import TINYPACK

from evalharness.models import ScriptedModelServer, reply

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MARKER = "characters truncated by evalharness"


def test_text_mode_agents_recover_from_format_errors_and_resolve(tmp_path, base_image, tinypack):
    patch = next(t.patch for t in tinypack.tasks if t.instance_id == "tiny-clamp")
    (tmp_path / "terse-text.yaml").write_text(
        "kind: minimal\ntool_mode: text\nprompt_variant: terse\noutput_limit: 300\ncommand_timeout_s: 20\n")
    (tmp_path / "mini-text.yaml").write_text("kind: mini-swe-agent\ntool_mode: text\n")

    def plan(harness: str) -> list:
        return [[reply("Let me think about where clamp lives.")], [command(harness, "seq 1 2000")],
                [command(harness, git_apply(patch))], [submit(harness)]]

    with ScriptedModelServer(TrialScript(tinypack.tasks, {"tiny-clamp": plan})) as server:
        rows, summary = run_in_process(tmp_path, TINYPACK, [str(tmp_path / "terse-text.yaml"),
                                                            str(tmp_path / "mini-text.yaml")],
                                       server.endpoint("scripted-gpt", input_cost_per_token=1e-6,
                                                       output_cost_per_token=2e-6, temperature=0.3),
                                       tasks=["tiny-clamp"], seeds=[7])
        requests = server.requests
    assert {harness_of(r) for r in requests} == {MINIMAL_TEXT, MINI_TEXT}
    assert all("tools" not in r.body for r in requests)
    assert {(r.body["temperature"], r.body["seed"]) for r in requests} == {(0.3, 7)}  # sampling settings sent
    for row in rows:
        assert (row["outcome"], row["calls"]) == ("resolved", 4), (row["harness"], row["reason"])
        steps = json.loads((summary.run_dir.parent / row["detail"] / "trajectory.json").read_text())["steps"]
        assert [s["text"] for s in steps if s["kind"] == "note"][0] == "format error"
        seq = next(s for s in steps if s.get("command") == "seq 1 2000")
        if row["harness"] == "terse-text":
            assert MARKER in seq["output"] and len(seq["output"]) < 400
        else:
            assert seq["output"].startswith("1\n2\n") and seq["output"].endswith("1999\n2000\n")

    terse_turn_3 = next(r for r in requests if harness_of(r) == MINIMAL_TEXT and "git apply" in str(r.body)
                        and r.body["messages"][-1]["role"] == "user")
    assert MARKER in terse_turn_3.body["messages"][-3]["content"]  # the model was sent the cut output too
    assert len(terse_turn_3.body["messages"][-3]["content"]) < 400
    assert terse_turn_3.body["messages"][0]["content"].startswith("Fix the issue in the repository at /testbed.")

    manifest = json.loads((summary.run_dir / "manifest.json").read_text())["harnesses"]
    assert manifest["terse-text"] == {"kind": "minimal", "prompt_variant": "terse", "tool_mode": "text",
                                      "max_steps": None, "output_limit": 300, "command_timeout_s": 20,
                                      "pass_seed": True}
    assert manifest["mini-text"]["config_file"] == "mini_textbased.yaml"
    assert manifest["mini-text"]["tool_mode"] == "text"
