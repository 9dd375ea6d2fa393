"""`run --docker-host`: trials spread over two real engines (the local one and a second dockerd with its own
socket and data root), each recorded once by the driver; an engine stopped mid-run gives its trials to the
other, none is lost or recorded twice, and the containers it kept are named and removable.

Pins issue 13: evalharness ran only on the local engine; a lost engine's trials would have been counted as
sandbox failures.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from support import EVALHARNESS, REPO, run_cli

from evalharness.errors import UserError
from evalharness.executors.hosts import check_mounts
from evalharness.sandbox.engine import EngineHost, parse_host

QUICKSTART = REPO / "tasks" / "quickstart"
LOCAL = "unix:///var/run/docker.sock"


# --- pure: what a --docker-host value means -------------------------------------------------------------------

def test_a_host_url_with_its_worker_count():
    assert parse_host("unix:///tmp/e/docker.sock#3") == EngineHost("unix:///tmp/e/docker.sock", 3)
    assert parse_host("ssh://me@big1") == EngineHost("ssh://me@big1", None)
    assert parse_host("ssh://me@big1:2222#16").workers == 16


@pytest.mark.parametrize("text, says", [
    ("tcp://10.0.0.5:2375", "needs TLS"),
    ("http://big1", "expected unix://, ssh:// or tcp://"),
    ("ssh://me@big1#0", "at least 1"),
    ("ssh://me@big1#two", "whole number"),
    ("unix://", "unix:///path"),
    ("ssh://me@big1/path", "ssh://user@host"),
    ("tcp://big1", "tcp://host:port"),
    ("ssh://me:secret@big1", "password is refused"),
])
def test_a_bad_host_is_refused_with_its_reason(text, says, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path))  # empty: no certificates
    with pytest.raises(UserError, match=says):
        parse_host(text)


def test_tcp_takes_its_certificates_from_the_url_or_docker_cert_path(tmp_path, monkeypatch):
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    monkeypatch.delenv("DOCKER_CERT_PATH", raising=False)
    assert parse_host(f"tcp://big1:2376?tls={tmp_path}#4") == EngineHost("tcp://big1:2376", 4, str(tmp_path))
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path))
    assert parse_host("tcp://big1:2376").tls_dir == str(tmp_path)


def test_a_harness_that_mounts_a_host_folder_is_kept_to_engines_of_this_machine():
    relay = {"mini": {"shared_dirs": ["/run/relay"]}, "oracle": {}}
    check_mounts([parse_host("unix:///tmp/e/docker.sock")], relay)  # the same machine: allowed
    check_mounts([parse_host("ssh://me@big1")], {"oracle": {}})
    with pytest.raises(UserError, match="mini shares a folder of this machine"):
        check_mounts([parse_host(LOCAL), parse_host("ssh://me@big1")], relay)


# --- two real engines -------------------------------------------------------------------------------------------

def _rows(db: Path, run_id: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("select trial_id, outcome, infra, harness from trials where run_id = ?", (run_id,)).fetchall()


def _run_id(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("run ") and "trials" in line:
            return line.split()[1].rstrip(":")
    raise AssertionError(f"no run id in:\n{text}")


def _nodes(run_dir: Path) -> dict[str, int]:
    seen: dict[str, int] = {}
    for path in run_dir.glob("**/result.json"):
        node = json.loads(path.read_text())["node"]
        seen[node] = seen.get(node, 0) + 1
    return seen


def _check_all_recorded_once(rows: list[tuple], expected: int) -> None:
    ids = [r[0] for r in rows]
    assert len(ids) == expected and len(set(ids)) == expected, (len(ids), len(set(ids)))
    assert not [r for r in rows if r[2]], [r for r in rows if r[2]]  # no infrastructure outcome
    assert {r[1] for r in rows if r[3] == "oracle"} == {"resolved"}
    assert {r[1] for r in rows if r[3] == "null"} == {"no_patch"}


@pytest.mark.docker
@pytest.mark.slow
def test_trials_spread_over_two_engines_and_each_is_recorded_once(tmp_path, second_engine, docker_client):
    done = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "-H", "null", "--seeds", "2",
                   "--docker-host", f"{LOCAL}#1", "--docker-host", f"{second_engine.url}#1", "--format", "json",
                   cwd=tmp_path, timeout=1500)
    run_id = json.loads(done.stdout)["runs"][0]["run_id"]
    _check_all_recorded_once(_rows(tmp_path / "runs" / "evalharness.db", run_id), 32)
    nodes = _nodes(tmp_path / "runs" / run_id)
    assert set(nodes) == {LOCAL, second_engine.url} and sum(nodes.values()) == 32, nodes
    assert "trials per node:" in done.stderr
    # the second engine really ran them: it holds the task images it built, and no container is left anywhere
    built = {t for image in second_engine.client().images.list() for t in image.tags}
    assert any(t.startswith("evalharness/task.quickstart:") for t in built), built
    assert second_engine.containers(run_id) == []
    assert docker_client.api.containers(all=True, filters={"label": f"evalharness.run_id={run_id}"}) == []


@pytest.mark.docker
@pytest.mark.slow
def test_an_engine_stopped_mid_run_gives_its_trials_to_the_other(tmp_path, second_engine, docker_client):
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as log:
        proc = subprocess.Popen([*EVALHARNESS, "run", "-p", str(QUICKSTART), "-H", "oracle", "-H", "null", "--seeds",
                                 "2", "--docker-host", f"{LOCAL}#1", "--docker-host", f"{second_engine.url}#1"],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log, env=dict(os.environ))
    try:
        db, deadline = tmp_path / "runs" / "evalharness.db", time.monotonic() + 900
        while time.monotonic() < deadline:  # wait until the second engine has recorded trials, then stop it
            text = stderr.read_text()
            if db.exists() and "run " in text and _nodes(tmp_path / "runs" / _run_id(text)).get(second_engine.url, 0) >= 2:
                break
            assert proc.poll() is None, text
            time.sleep(0.3)
        else:
            raise AssertionError(stderr.read_text())
        second_engine.stop(signal.SIGTERM)
        assert proc.wait(timeout=1200) == 0, stderr.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        second_engine.start()
    text = stderr.read_text()
    run_id, flat = _run_id(text), " ".join(text.split())  # the console wraps long lines
    _check_all_recorded_once(_rows(db, run_id), 32)
    nodes = _nodes(tmp_path / "runs" / run_id)
    assert nodes[second_engine.url] >= 2 and nodes[LOCAL] >= 16, nodes
    assert f"engine {second_engine.url} stopped answering" in flat
    assert docker_client.api.containers(all=True, filters={"label": f"evalharness.run_id={run_id}"}) == []
    # what the stopped engine kept is named at the end and removed by gc against that engine
    if second_engine.containers(run_id):
        assert f"containers of run {run_id} may remain on {second_engine.url}" in flat
        assert f"sandbox gc --run-id {run_id} --docker-host URL" in flat
    gc = run_cli("sandbox", "gc", "--run-id", run_id, "--docker-host", second_engine.url, cwd=tmp_path)
    assert "removed" in gc.stdout
    assert second_engine.containers(run_id) == []


# --- tcp:// with TLS: a real engine listening on loopback with verified client certificates -----------------------

def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(folder: Path, name: str) -> tuple[Path, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate: (server dir, client dir)."""
    server, client = folder / f"{name}-server", folder / f"{name}-client"
    for d in (server, client):
        d.mkdir(parents=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}-ca", "-keyout",
             "ca-key.pem", "-out", "ca.pem", cwd=folder)
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    (folder / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for who, target in (("server", server), ("client", client)):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={who}", "-keyout", str(target / "key.pem"),
                 "-out", f"{who}.csr", cwd=folder)
        _openssl("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                 "-days", "2", "-extfile", f"{who}.ext", "-out", str(target / "cert.pem"), cwd=folder)
        (target / "ca.pem").write_bytes((folder / "ca.pem").read_bytes())
    return server, client


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tls_engine(second_engine, tmp_path):
    """The second engine restarted with a TLS tcp listener on 127.0.0.1 (client certificates verified)."""
    certs = tmp_path / "certs"
    certs.mkdir()
    server, client = _certificates(certs, "good")
    (certs / "other").mkdir()
    _, stranger = _certificates(certs / "other", "other")
    port = _free_port()
    second_engine.stop()
    second_engine.start(extra=["-H", f"tcp://127.0.0.1:{port}", "--tlsverify", "--tlscacert", str(server / "ca.pem"),
                               "--tlscert", str(server / "cert.pem"), "--tlskey", str(server / "key.pem")])
    yield f"tcp://127.0.0.1:{port}", client, stranger
    second_engine.stop()
    second_engine.start()


@pytest.mark.docker
@pytest.mark.slow
def test_a_tls_engine_runs_trials_and_a_stranger_certificate_is_refused(tmp_path, tls_engine):
    url, client, stranger = tls_engine
    task = "boltons-strutils-parse-int-list"
    refused = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "--task", task, "--docker-host",
                      f"{url}?tls={stranger}", cwd=tmp_path, check=False)
    assert refused.returncode == 1 and f"Docker engine {url} not reachable" in " ".join(refused.stderr.split())
    assert not (tmp_path / "runs" / "evalharness.db").exists() or _rows(tmp_path / "runs" / "evalharness.db", "x") == []
    # a CA bundle in the environment (as behind a TLS-intercepting proxy) must not replace the engine's own CA
    done = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "--task", task, "--docker-host",
                   f"{url}?tls={client}#1", "--format", "json", cwd=tmp_path, timeout=900,
                   env={"REQUESTS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"})
    run_id = json.loads(done.stdout)["runs"][0]["run_id"]
    assert [r[1] for r in _rows(tmp_path / "runs" / "evalharness.db", run_id)] == ["resolved"]
    assert _nodes(tmp_path / "runs" / run_id) == {url: 1}


@pytest.mark.docker
@pytest.mark.slow
def test_ctrl_c_cleans_both_engines_and_a_resume_finishes(tmp_path, second_engine, docker_client):
    stderr = tmp_path / "stderr.txt"
    hosts = ["--docker-host", f"{LOCAL}#1", "--docker-host", f"{second_engine.url}#1"]
    with open(stderr, "w") as log:  # Ctrl-C as a terminal delivers it (see test_run_lifecycle.py)
        proc = subprocess.Popen([*EVALHARNESS, "run", "-p", str(QUICKSTART), "-H", "oracle", "--seeds", "2", *hosts],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log, env=dict(os.environ),
                                start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        db, deadline = tmp_path / "runs" / "evalharness.db", time.monotonic() + 600
        while time.monotonic() < deadline:  # both engines busy: containers of the run on each
            text = stderr.read_text()
            if "run " in text and "trials" in text:
                run_id = _run_id(text)
                if second_engine.containers(run_id) and docker_client.api.containers(
                        filters={"label": f"evalharness.run_id={run_id}"}):
                    break
            assert proc.poll() is None, text
            time.sleep(0.1)
        else:
            raise AssertionError(stderr.read_text())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130, stderr.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert second_engine.containers(run_id) == []
    assert docker_client.api.containers(all=True, filters={"label": f"evalharness.run_id={run_id}"}) == []
    before = len(_rows(db, run_id))
    assert before < 16
    run_cli("run", "--resume", run_id, *hosts, cwd=tmp_path, timeout=900)
    rows = _rows(db, run_id)
    assert len(rows) == 16 and len({r[0] for r in rows}) == 16 and {r[1] for r in rows} == {"resolved"}


@pytest.mark.docker
def test_sandbox_build_and_gc_work_against_another_engine(tmp_path, second_engine):
    task = "boltons-mathutils-ceil-exact-match"
    done = run_cli("sandbox", "build", "-p", str(QUICKSTART), "--task", task, "--docker-host", second_engine.url,
                   cwd=tmp_path, timeout=900)
    tag = done.stdout.split(f"{task}: ", 1)[1].split()[0]
    assert tag.startswith("evalharness/task.quickstart:")
    second_engine.client().images.get(tag)  # on the second engine, whatever the local one holds
    gc = run_cli("sandbox", "gc", "--run-id", "no-such-run", "--docker-host", second_engine.url, cwd=tmp_path)
    assert gc.stdout.startswith("removed 0 container")
