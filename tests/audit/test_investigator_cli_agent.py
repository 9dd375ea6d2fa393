"""A CLI agent investigates the same way as ``minimal``: a ``kind: command`` harness loaded through the
harness registry runs a small stdlib agent inside the sandbox, whose model calls reach the scripted
server only through the relay (the sandbox has no network), and whose verdict file is read the same.

Pins: the investigator's files and the relay's shared folder not coexisting in one sandbox; a CLI
agent's verdict read from somewhere else than minimal's; its commands missing from the evidence.
"""

from __future__ import annotations

import json

import pytest
from investigator_scripts import INVESTIGATION, NETWORK, VERDICTS, script

from evalharness.audit.context import AuditContext
from evalharness.audit.investigator import investigate
from evalharness.harness.registry import load_harness
from evalharness.models import ScriptedModelServer
from evalharness.sandbox.base import Limits
from evalharness.trial import TrialContext
from evalharness.types import Budget

pytestmark = [pytest.mark.docker, pytest.mark.slow]

AGENT = '''kind: command
description: a twenty-line tool-calling agent (stdlib only), run in the sandbox, its model through the relay
command: |
  python3 - {base_url} {model_name} {problem_file} {api_key} {seed} <<'PY'
  import json, subprocess, sys, urllib.request
  base, model, problem, key, seed = sys.argv[1:6]
  tool = {"type": "function", "function": {"name": "bash", "parameters": {
      "type": "object", "properties": {"command": {"type": "string"}}}}}
  messages = [{"role": "user", "content": open(problem).read()}]
  for _ in range(20):
      body = {"model": model, "messages": messages, "tools": [tool], "seed": int(seed)}
      request = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(),
                                       headers={"content-type": "application/json", "authorization": "Bearer " + key})
      message = json.load(urllib.request.urlopen(request, timeout=60))["choices"][0]["message"]
      messages.append(message)
      calls = [c for c in message.get("tool_calls") or [] if c["function"]["name"] == "bash"]
      if not calls:
          break
      for call in calls:
          command = json.loads(call["function"]["arguments"])["command"]
          done = subprocess.run(command, shell=True, capture_output=True, text=True)
          messages.append({"role": "tool", "tool_call_id": call["id"],
                           "content": "exit " + str(done.returncode) + "\\n" + done.stdout + done.stderr})
  PY
'''


def _commands(message: dict) -> list[str]:
    return [json.loads(c["function"]["arguments"]).get("command") for c in message.get("tool_calls") or []]


def test_a_command_kind_agent_investigates_through_the_relay(tmp_path, docker_client, image_builder, tinypack):
    (tmp_path / "script-agent.yaml").write_text(AGENT)
    harness = load_harness(str(tmp_path / "script-agent.yaml"))
    task = next(t for t in tinypack.tasks if t.instance_id == "tiny-clamp")
    plumbing = TrialContext(run_id="test-investigator-cli-agent", pack=tinypack, client=docker_client,
                            images=image_builder, budget=Budget(max_steps=20), limits=Limits())
    with ScriptedModelServer(script) as server:
        findings = investigate(task, AuditContext(tinypack), harness=harness, endpoint=server.endpoint("scripted"),
                               seeds=[0, 1], plumbing=plumbing, out_dir=tmp_path / "audits")
        relayed, requests = len(server.requests), server.requests
    assert relayed == 2 * 7
    for finding in findings:
        assert finding.status == "ok", finding.reason
        assert finding.evidence["verdict"]["broken"] == VERDICTS[("tiny-clamp", finding.seed)]["broken"]
        asked = [json.loads(c.split(": ", 1)[1])["command"] for c in finding.evidence["tool_calls"]
                 if c.startswith("bash: ")]
        assert asked[:len(INVESTIGATION)] == INVESTIGATION
        assert finding.evidence["exit_status"] == "submitted"
    assert [(f.seed, f.flagged, f.family) for f in findings] == [(0, False, None), (1, True, "too_weak_tests")]
    trajectory = json.loads((tmp_path / "audits" / findings[0].evidence["trajectory"]).read_text())
    assert sum(s["kind"] == "model" for s in trajectory["steps"]) == 7
    relayed_commands = [json.loads(c["arguments"])["command"] for s in trajectory["steps"] if s["kind"] == "model"
                        for c in s["tool_calls"] if c["name"] == "bash"]
    assert NETWORK in relayed_commands
    offline = {(r.body["seed"], answer["content"]) for r in requests
               for asked, answer in zip(r.body["messages"], r.body["messages"][1:])
               if NETWORK in _commands(asked) and answer.get("role") == "tool"}
    assert len(offline) == 2 and all(o.startswith("exit 1\n") and "ONLINE" not in o for _, o in offline), offline
