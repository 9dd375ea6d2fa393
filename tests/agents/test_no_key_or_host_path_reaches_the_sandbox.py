"""The API key and host paths stay on the host: not in the sandbox's environment, files or processes,
nor in the trajectory; the agent holds a placeholder that the relay swaps for the key.

Pins: harnesses that pass OPENAI_API_KEY into the container hand the key to whatever the agent
runs (and to every log it writes); a mounted host folder named after the run directory tells the
agent where the graded results live.
"""

from __future__ import annotations

import json

import pytest
from agent_support import KEY_ENV, PLANTED_KEY
from support import REPO

from evalharness.harness.command import PLACEHOLDER_KEY, CommandHarness
from evalharness.models import ScriptedModelServer, reply
from evalharness.types import Budget

pytestmark = pytest.mark.docker

LOOK_AROUND = r"""
env > {log_dir}/env.txt
cat /proc/self/mountinfo > {log_dir}/mountinfo.txt
cat /run/evalharness/run.sh /run/evalharness/agent.sh > {log_dir}/scripts.txt
python3 - <<'EOF'
import json, urllib.request
body = json.dumps({"model": "{model_name}", "messages": [{"role": "user", "content": "hi"}]}).encode()
request = urllib.request.Request("{base_url}/chat/completions", data=body,
                                 headers={"Authorization": "Bearer {api_key}", "content-type": "application/json"})
print("model", urllib.request.urlopen(request, timeout=30).status)
EOF
"""


def test_key_and_host_paths_stay_out_of_the_sandbox(tinypack, agent_sandbox, monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    sandbox = agent_sandbox(tinypack, tinypack.tasks[0])
    harness = CommandHarness(name="look-around", command=LOOK_AROUND, logs=["{log_dir}/*.txt"])
    with ScriptedModelServer([reply("hi")], require_key=PLANTED_KEY) as server:
        endpoint = server.endpoint("gpt-4o-mini", api_key_env=KEY_ENV)
        result = harness.run(tinypack.tasks[0], sandbox, endpoint, seed=0, budget=Budget())
        assert [r.status for r in server.requests] == [200]  # the relay added the key the server requires
    assert result.usage.calls == 1 and result.exit_status == "submitted"

    secrets = [PLANTED_KEY, f"{REPO}/", str(tmp_path)]  # git's release notes mention "~/work/main" once
    recorded = json.dumps(result.trajectory)
    assert not [s for s in secrets if s in recorded]
    notes = {s["path"].rsplit("/", 1)[-1]: s["content"] for s in result.trajectory if s["kind"] == "note" and "path" in s}
    assert set(notes) == {"env.txt", "mountinfo.txt", "scripts.txt"}
    mount = [line for line in notes["mountinfo.txt"].splitlines() if " /run/evalharness " in line]
    assert len(mount) == 1 and " /tmp/evalharness-" in mount[0]  # the host folder's name is all it reveals

    on_disk = sandbox.exec("grep -rlsF " + " ".join(f"-e '{s}'" for s in secrets)
                           + " / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev", user="root", timeout=300)
    assert on_disk.exit_code == 1 and on_disk.output == ""  # grep: no file matched
    environ = sandbox.exec("cat /proc/[0-9]*/environ | tr '\\0' '\\n'", user="root").output
    assert environ and not [s for s in secrets if s in environ]
    agent_env = sandbox.read_file("/tmp/agent-logs/env.txt").decode()
    assert not [s for s in secrets if s in agent_env] and "HOME=/home/agent" in agent_env
    assert PLACEHOLDER_KEY in sandbox.read_file("/tmp/agent-logs/scripts.txt").decode()
