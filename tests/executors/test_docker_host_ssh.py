"""`run --docker-host ssh://` through a real OpenSSH server on 127.0.0.1 (key login, the host key known in a
client home of the test's own): a trial resolves, its result names the ssh URL, no container is left, and
`sandbox gc` reaches the same engine; sixteen trials at once work against sshd's default 10 sessions per connection
(a further connection when one is full); a host whose key is unknown or changed is refused with a hint, never
trusted; a server that stops mid-run gives the engine's trials to the local one.

Pins issue 13: ssh:// was accepted but had never been run. Run, four trials at once all ended as infrastructure
failures (ChannelException: Connect failed): docker-py keeps a connection pool per request URL, each holding idle
ssh channels, past sshd's MaxSessions; with one pool, sixteen at once still needed more channels than one
connection holds. A refused host key or login printed a paramiko traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time

import pytest
from sshd import Sshd, missing
from support import EVALHARNESS, REPO, run_cli

QUICKSTART = REPO / "tasks" / "quickstart"
TASK = "boltons-strutils-parse-int-list"


@pytest.fixture
def sshd(tmp_path, monkeypatch):
    """A real sshd on 127.0.0.1 (its files in tmp_path), stopped with every session it started."""
    reason = missing()
    if reason:
        pytest.skip(f"no OpenSSH server for the ssh:// tests: {reason}")
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # only the test's key, never the user's agent
    server = Sshd(tmp_path / "sshd").start()
    yield server
    server.stop()


def _labelled(docker_client, run_id: str) -> list[dict]:
    return docker_client.api.containers(all=True, filters={"label": f"evalharness.run_id={run_id}"})


@pytest.mark.docker
@pytest.mark.slow
def test_a_trial_runs_through_an_ssh_engine(tmp_path, sshd, docker_client, base_image):
    done = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "--task", TASK, "--docker-host", f"{sshd.url}#1",
                   "--format", "json", cwd=tmp_path, timeout=900, env=sshd.env(), check=False)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n--- sshd log\n{sshd.log()}"
    run_id = json.loads(done.stdout)["runs"][0]["run_id"]
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as conn:
        rows = conn.execute("select outcome, infra from trials where run_id = ?", (run_id,)).fetchall()
    assert rows == [("resolved", 0)], rows
    results = [json.loads(p.read_text()) for p in (tmp_path / "runs" / run_id).glob("**/result.json")]
    assert [r["node"] for r in results] == [sshd.url]
    assert "Accepted publickey for root" in sshd.log()  # it went through the server, not around it
    assert _labelled(docker_client, run_id) == []


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.long  # a load measurement; default tier: test_a_trial_runs_through_an_ssh_engine
def test_sixteen_trials_at_once_over_one_engine_past_the_servers_sessions(tmp_path, sshd, docker_client, base_image):
    done = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "--seeds", "2", "--docker-host", f"{sshd.url}#16",
                   "--format", "json", cwd=tmp_path, timeout=1200, env=sshd.env(), check=False)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n--- sshd log\n{sshd.log()}"
    assert "open FAILED" not in done.stderr  # a refused channel opened on another connection is no error to show
    run_id = json.loads(done.stdout)["runs"][0]["run_id"]
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as conn:
        outcomes = [r[0] for r in conn.execute("select outcome from trials where run_id = ?", (run_id,))]
    assert outcomes == ["resolved"] * 16, outcomes
    assert sshd.log().count("Accepted publickey") >= 2  # more channels than one connection may hold (MaxSessions 10)
    assert _labelled(docker_client, run_id) == []


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.long  # default tier: test_docker_hosts.py::test_an_engine_stopped_mid_run_gives_its_trials_to_the_other
def test_a_server_stopped_mid_run_gives_its_trials_to_the_local_engine(tmp_path, sshd, docker_client, base_image):
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as log:
        proc = subprocess.Popen([*EVALHARNESS, "run", "-p", str(QUICKSTART), "-H", "oracle", "--docker-host",
                                 "unix:///var/run/docker.sock#1", "--docker-host", f"{sshd.url}#1"],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, **sshd.env()})
    try:
        deadline = time.monotonic() + 600
        while not [n for n in _nodes(tmp_path) if n == sshd.url]:  # the ssh engine has recorded a trial: stop it
            assert proc.poll() is None and time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.2)
        sshd.stop()
        assert proc.wait(timeout=900) == 0, stderr.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    nodes = _nodes(tmp_path)
    assert len(nodes) == 8 and nodes.count(sshd.url) >= 1, nodes
    assert f"engine {sshd.url} stopped answering" in " ".join(stderr.read_text().split())
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as conn:
        rows = conn.execute("select trial_id, outcome from trials").fetchall()
    assert len({r[0] for r in rows}) == len(rows) == 8 and {r[1] for r in rows} == {"resolved"}, rows
    for run in (tmp_path / "runs").iterdir():
        if run.is_dir():
            assert _labelled(docker_client, run.name) == []


def _nodes(tmp_path) -> list[str]:
    found = []
    for path in (tmp_path / "runs").glob("*/**/result.json"):
        try:
            found.append(json.loads(path.read_text())["node"])
        except (OSError, ValueError):  # being written
            continue
    return found


@pytest.mark.docker
@pytest.mark.parametrize("known", ["", "[127.0.0.1]:{port} ssh-ed25519 "
                                       "AAAAC3NzaC1lZDI1NTE5AAAAIBWGqYnRWbUm2G6oDJoMBJ/UOLFyyP4kYjvyl5dhQ5m0\n"],
                         ids=["unknown-host-key", "changed-host-key"])
def test_a_host_key_not_known_is_refused_with_a_hint(tmp_path, sshd, known):
    known_hosts = sshd.home / ".ssh" / "known_hosts"
    known_hosts.write_text(known.format(port=sshd.port))
    refused = run_cli("sandbox", "gc", "--run-id", "x", "--docker-host", sshd.url, cwd=tmp_path, env=sshd.env(),
                      check=False)
    text = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert f"Docker engine {sshd.url} not reachable" in text and "~/.ssh/known_hosts" in text, text
    assert known_hosts.read_text() == known.format(port=sshd.port)  # nothing added
    assert "Accepted publickey" not in sshd.log()


@pytest.mark.docker
def test_sandbox_gc_reaches_an_ssh_engine(tmp_path, sshd, docker_client, base_image):
    run_id = "ssh-gc-test"
    kept = docker_client.containers.create(base_image, ["true"], labels={"evalharness.run_id": run_id},
                                           network_mode="none")
    try:
        gc = run_cli("sandbox", "gc", "--run-id", run_id, "--docker-host", sshd.url, cwd=tmp_path, env=sshd.env(),
                     check=False)
        assert gc.returncode == 0, f"{gc.stdout}\n{gc.stderr}\n--- sshd log\n{sshd.log()}"
        assert gc.stdout.startswith("removed 1 container"), gc.stdout
        assert _labelled(docker_client, run_id) == []
    finally:
        if _labelled(docker_client, run_id):
            kept.remove(force=True)
