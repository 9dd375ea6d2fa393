"""From inside a trial sandbox only the model endpoint is reachable, and only through the relay.

Pins: a relay mounted into the container is a hole in the seal if it forwards anything an agent
asks for; an agent that could reach the package index would install its way around a task.
"""

from __future__ import annotations

import pytest

from evalharness.harness.command import CommandHarness
from evalharness.models import ScriptedModelServer, reply
from evalharness.types import Budget

pytestmark = pytest.mark.docker

PROBE = r"""
python3 - <<'EOF'
import http.client, json, socket, urllib.request
def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "REACHED"
    except OSError:
        return "blocked"
try:
    socket.getaddrinfo("pypi.org", 443)
    print("dns pypi.org REACHED")
except OSError:
    print("dns pypi.org blocked")
nameserver = open("/etc/resolv.conf").read().split("nameserver")[-1].split()[0]
for host, port in [("1.1.1.1", 443), ("172.17.0.1", 2375), (nameserver, 53), ("151.101.0.223", 443)]:
    print("tcp", host, port, tcp(host, port))
body = json.dumps({"model": "{model_name}", "messages": [{"role": "user", "content": "hi"}]}).encode()
request = urllib.request.Request("{base_url}/chat/completions", data=body,
                                 headers={"Authorization": "Bearer {api_key}", "content-type": "application/json"})
print("model", urllib.request.urlopen(request, timeout=30).status)
def status(method, target, unix=False):
    if unix:
        conn = http.client.HTTPConnection("localhost")
        conn.sock = socket.socket(socket.AF_UNIX)
        conn.sock.connect("/run/evalharness/model.sock")
    else:
        conn = http.client.HTTPConnection("127.0.0.1", {port}, timeout=10)
    conn.request(method, target)
    return conn.getresponse().status
print("relay absolute-url", status("GET", "http://pypi.org/simple/"))
print("relay connect", status("CONNECT", "pypi.org:443"))
print("relay other-path", status("GET", "/etc/passwd"))
print("relay unix-socket absolute-url", status("GET", "https://files.pythonhosted.org/", unix=True))
EOF
pip download --no-deps --retries 0 --timeout 5 -d /tmp/dl requests >/dev/null 2>&1; echo "pip exit $?"
"""


def test_only_the_model_endpoint_is_reachable(tinypack, agent_sandbox):
    sandbox = agent_sandbox(tinypack, tinypack.tasks[0])
    harness = CommandHarness(name="probe", command=PROBE)
    with ScriptedModelServer([reply("hello")]) as server:
        result = harness.run(tinypack.tasks[0], sandbox, server.endpoint("gpt-4o-mini"), seed=0, budget=Budget())
        paths = [r.path for r in server.requests]
    output = next(s for s in result.trajectory if s["kind"] == "command")["output"]
    lines = dict(line.rsplit(" ", 1) for line in output.splitlines() if line.startswith(("dns", "tcp", "model",
                                                                                         "relay", "pip")))
    assert lines.pop("model") == "200" and paths == ["/v1/chat/completions"]
    assert lines.pop("pip exit") != "0"
    assert {k: v for k, v in lines.items() if k.startswith(("dns", "tcp"))} == {
        k: "blocked" for k in lines if k.startswith(("dns", "tcp"))} and len(lines) == 9
    assert {k: v for k, v in lines.items() if k.startswith("relay")} == {
        "relay absolute-url": "403", "relay connect": "403", "relay other-path": "403",
        "relay unix-socket absolute-url": "403"}
    assert result.usage.calls == 1
    assert any(s["kind"] == "note" and len(s.get("refused", [])) == 4 for s in result.trajectory)


def test_the_relay_socket_folder_is_read_only_for_the_agent(tinypack, agent_sandbox):
    sandbox = agent_sandbox(tinypack, tinypack.tasks[0])
    assert sandbox.exec("touch /run/evalharness/x").exit_code != 0
    assert sandbox.exec("touch /run/evalharness/x", user="root").exit_code != 0  # a read-only mount


def test_a_step_budget_stops_an_agent_that_keeps_calling(tinypack, agent_sandbox):
    loop = r"""python3 - <<'EOF'
import json, time, urllib.request
for _ in range(200):
    body = json.dumps({"model": "{model_name}", "messages": [{"role": "user", "content": "again"}]}).encode()
    request = urllib.request.Request("{base_url}/chat/completions", data=body,
                                     headers={"Authorization": "Bearer {api_key}", "content-type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except Exception as e:
        print("call failed:", e)
    time.sleep(0.2)
EOF"""
    sandbox = agent_sandbox(tinypack, tinypack.tasks[0])
    harness = CommandHarness(name="looper", command=loop)
    with ScriptedModelServer({"replies": [reply("more")], "on_exhausted": "repeat_last"}) as server:
        result = harness.run(tinypack.tasks[0], sandbox, server.endpoint("m"), seed=0, budget=Budget(max_steps=3))
        served = len(server.requests)
    assert result.budget_exhausted == "max_steps" and result.exit_status == "budget_exhausted"
    assert served == 3 and result.usage.calls == 3
    command = next(s for s in result.trajectory if s["kind"] == "command")
    assert not command["timed_out"]  # ended by the harness once the relay refused, not by the clock


def test_an_agent_that_dies_before_any_model_call_is_a_harness_error(tinypack, agent_sandbox):
    from evalharness.errors import HarnessError

    sandbox = agent_sandbox(tinypack, tinypack.tasks[0])
    harness = CommandHarness(name="broken", command="echo 'agent: command not found' >&2; exit 127")
    with ScriptedModelServer([reply("never")]) as server:
        with pytest.raises(HarnessError, match="exited 127 without a successful model call") as caught:
            harness.run(tinypack.tasks[0], sandbox, server.endpoint("m"), seed=0, budget=Budget())
    assert "command not found" in str(caught.value)
    assert caught.value.trajectory[0]["kind"] == "command" and caught.value.usage.calls == 0
