"""Only the sandbox's own processes (and root) can reach the model relay's socket.

Pins: the per-trial shared folder was a /tmp/evalharness-* directory with mode 0711 holding a
0666 socket with a fixed name, so any local user (on the host, or another uid in the container)
could connect and have requests relayed with the real API key; then it belonged to uid 1000, so a
host account with that uid could (issue 7, class 13). Now it is root's, in a group only the
container's processes carry.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys

import pytest
from agent_support import PLANTED_KEY

from evalharness.harness.command import SHARED_DIR
from evalharness.models import ScriptedModelServer, reply
from evalharness.relay import Ledger, ModelRelay

pytestmark = pytest.mark.docker

AGENT_UID, NOBODY = 1000, 65534

ASK = """python3 - <<'EOF'
import http.client, socket
try:
    conn = http.client.HTTPConnection("localhost")
    conn.sock = socket.socket(socket.AF_UNIX)
    conn.sock.connect("/run/evalharness/model.sock")
    conn.request("GET", "/v1/models")
    print("status", conn.getresponse().status)
except OSError as e:
    print("refused", type(e).__name__)
EOF"""

CONNECT_AS = """
import os, socket, sys
os.setgroups([]); os.setgid(int(sys.argv[2])); os.setuid(int(sys.argv[2]))
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print("refused", type(e).__name__)
"""


def test_the_shared_folder_and_socket_belong_to_root_and_the_sandbox_group_only(tinypack, agent_sandbox):
    assert os.geteuid() == 0, "run as root (as CI does): the relay runs as root and owns the folder"
    sandbox = agent_sandbox(tinypack, tinypack.tasks[0])
    folder = sandbox.shared_dir(SHARED_DIR)
    info = folder.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o750) and info.st_gid >= 200_000
    with ScriptedModelServer([reply("hi")], require_key=PLANTED_KEY) as server:
        with ModelRelay(server.url + "/v1", folder / "model.sock", Ledger(server.endpoint("m")), api_key=PLANTED_KEY):
            sock = (folder / "model.sock").stat()
            assert (sock.st_uid, sock.st_gid, stat.S_IMODE(sock.st_mode)) == (0, info.st_gid, 0o660)
            host_users = {uid: subprocess.run([sys.executable, "-c", CONNECT_AS, str(folder / "model.sock"), str(uid)],
                                              capture_output=True, text=True, timeout=30).stdout.strip()
                          for uid in (AGENT_UID, NOBODY)}
            agent = sandbox.exec(ASK).output.strip()
            other_uid_in_container = sandbox.exec(ASK, user="nobody").output.strip()
            with socket.socket(socket.AF_UNIX) as root_side:  # the relay's own uid still connects
                root_side.connect(str(folder / "model.sock"))
        paths = [r.path for r in server.requests]
    assert agent == "status 200" and paths == ["/v1/models", "/v1/models"]  # the agent's, then the other uid's
    assert host_users == {AGENT_UID: "refused PermissionError", NOBODY: "refused PermissionError"}
    # every process of the container carries its group (the agent cannot become another uid there)
    assert other_uid_in_container == "status 200"
