"""Real CLI agents, installed in the trial image, fix (or fail to fix) tasks through the relay.

Each agent runs for real in a sealed container against the scripted model server: the fix it is
scripted to make is graded `resolved`; a wrong edit on the other task is `unresolved`. Usage comes
from the relay, the key the server requires never shows up in anything the run keeps.
Pins: a harness that reported a CLI agent's run as resolved without the agent ever reaching its
model (a stale patch, a crashed agent graded on an empty diff) would pass a pipeline test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from agent_support import KEY_ENV, PLANTED_KEY, agent_script, stored_text
from support import REPO, TINYPACK

from evalharness.models import ScriptedModelServer, reply
from evalharness.runner import RunConfig, run

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FIX_CLAMP = "sed -i '13s/return value/return high/' calc/__init__.py"
WRONG_MEAN = "sed -i 's|return sum(values) / len(values)|return sum(values) / max(len(values), 1)|' calc/__init__.py"
CLAMP, MEAN = r"clamp\(11, 0, 10\)", r"mean\(\[\]\) raises"


@dataclass
class Agent:
    harness: str
    provider: str
    model: str
    tool: str = ""
    argument: str = "command"
    extra: dict[str, Any] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    """Commands after the edit (mini-swe-agent submits with a command)."""


AGENTS = {
    "mini-swe-agent-cli": Agent("mini-swe-agent-cli", "openai", "gpt-4o-mini", "bash",
                                done=["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]),
    "claude-code": Agent("claude-code", "anthropic", "claude-sonnet-4-5", "Bash", extra={"description": "edit"}),
    "codex": Agent("codex", "openai", "gpt-5-codex", "exec_command", argument="cmd"),
    "aider": Agent("aider", "openai", "gpt-4o"),
    "openhands": Agent("openhands", "openai", "gpt-4o", "terminal", extra={"security_risk": "LOW"}),
}

AIDER_EDITS = {
    CLAMP: ("    if value > high:\n        return value\n", "    if value > high:\n        return high\n"),
    MEAN: ("    return sum(values) / len(values)\n", "    return sum(values) / max(len(values), 1)\n"),
}


def _aider_script(request):
    """Aider edits from SEARCH/REPLACE blocks in plain text; it asks to add the file once, then applies."""
    for pattern, (old, new) in AIDER_EDITS.items():
        if re.search(pattern, request.prompt):
            return reply(f"calc/__init__.py\n```python\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n```\n")
    raise LookupError("no plan for this prompt")


def _script(agent: Agent):
    if agent.harness == "aider":
        return _aider_script
    plans = {CLAMP: ["cat calc/__init__.py", FIX_CLAMP, *agent.done], MEAN: [WRONG_MEAN, *agent.done]}
    return agent_script(plans, tool=agent.tool, argument=agent.argument, extra=agent.extra)


# The default tier runs one CLI agent end to end (the relay, the key, the agent's own binary in the sandbox); the
# others install a whole CLI into an image each (one to ten minutes) and run with --all.
@pytest.mark.parametrize("name", [n if n == "mini-swe-agent-cli" else pytest.param(n, marks=pytest.mark.long)
                                  for n in AGENTS])
def test_cli_agent_resolves_one_task_and_not_the_other(name, tmp_path, monkeypatch, base_image):
    agent = AGENTS[name]
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    runs = tmp_path / "runs"
    with ScriptedModelServer(_script(agent), require_key=PLANTED_KEY) as server:
        endpoint = server.endpoint(agent.model, provider=agent.provider, api_key_env=KEY_ENV)
        summary = run(RunConfig(pack=str(TINYPACK), harnesses=[str(REPO / "harnesses" / f"{name}.yaml")],
                                models=[endpoint], workers=2), runs_dir=runs)
        served = [r for r in server.requests if r.status == 200]
    assert summary.counts == {"resolved": 1, "unresolved": 1}
    assert {r.status for r in server.requests} == {200}  # every call carried the real key, added by the relay
    trials = {p.parent.parent.parent.parent.name: p.parent for p in runs.glob("*/tinypack/*/*/*/seed-0/result.json")}
    clamp = json.loads((trials["tiny-clamp"] / "result.json").read_text())
    assert clamp["outcome"] == "resolved" and clamp["exit_status"] == "submitted"
    assert json.loads((trials["tiny-mean-empty"] / "result.json").read_text())["outcome"] == "unresolved"
    usage = clamp["usage"]
    assert usage["calls"] >= 2 and usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["cost_usd"] is not None and usage["cost_usd"] > 0  # a model in litellm's price map
    assert sum(json.loads((t / "result.json").read_text())["usage"]["calls"] for t in trials.values()) == len(served)
    steps = json.loads((trials["tiny-clamp"] / "trajectory.json").read_text())["steps"]
    assert [s["index"] for s in steps] == list(range(len(steps)))
    assert {"command", "model"} <= {s["kind"] for s in steps}
    edit = FIX_CLAMP if agent.tool else "return high"
    assert any(edit in json.dumps(s.get("tool_calls")) + s.get("content", "") for s in steps if s["kind"] == "model")
    for path, text in stored_text(runs).items():
        assert PLANTED_KEY not in text, f"the API key leaked into {path}"
    for trial in trials.values():
        notes = json.loads((trial / "trajectory.json").read_text())["steps"]
        assert not [s for s in notes if s.get("refused")], "the relay refused a request the agent needs"
        for kept in ("trajectory.json", "trial.log", "patch.diff", "result.json"):
            text = (trial / kept).read_text()
            assert str(REPO) not in text and str(tmp_path) not in text, f"a host path leaked into {trial / kept}"
