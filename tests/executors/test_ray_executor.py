"""`evalharness run --executor ray` on a real two-node Ray cluster on loopback whose nodes use two different real
Docker engines, through the real CLI: trials spread over both engines and each is recorded once; a node killed
mid-run loses no trial and records none twice and leaves no container; Ray listens on 127.0.0.1 only; Ctrl-C
exits 130 with no container left and a resume finishes the run.

Pins: a distributed run that records a rescheduled trial twice, or counts a lost node's trials as the agent's
failures, silently changes every resolve rate it reports.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray_cluster import FIRST_ENGINE, RayCluster

from evalharness.store import Store, database_url

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EVALHARNESS = str(Path(sys.executable).with_name("evalharness"))
MATRIX = 8 * 2 * 2
"""quickstart's 8 tasks x oracle and null x 2 seeds."""


@pytest.fixture(scope="module")
def ray_cluster(second_engine, docker_client):
    cluster = RayCluster(second_engine.url)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(ray_cluster):
    """The module's cluster with both nodes up (a test that killed the extra node gets it back)."""
    if ray_cluster.extra is None:
        ray_cluster.start_extra()
    return ray_cluster


def _containers(client, tmp_path: Path) -> list[str]:
    """The containers of this test's run on one engine (others may run evaluations on the same engine)."""
    runs = tmp_path / "runs"
    ids = [p.name for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []
    return [c["Id"] for run_id in ids
            for c in client.api.containers(all=True, filters={"label": f"evalharness.run_id={run_id}"})]


def _default_sigint() -> None:
    """A test session started in the background (`./scripts/test &`, CI runners, nohup) ignores SIGINT, and an
    ignored signal stays ignored across exec: the CLI would never see the Ctrl-C the test sends. A user's Ctrl-C
    reaches a process whose SIGINT is at its default; start the CLI that way."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(cluster: RayCluster, tmp_path: Path, *args: str, tag: str = "run") -> subprocess.Popen:
    out, err = open(tmp_path / f"{tag}.out", "wb"), open(tmp_path / f"{tag}.err", "wb")
    return subprocess.Popen([EVALHARNESS, "run", "--executor", "ray", "--ray-address", cluster.address,
                             "--runs-dir", str(tmp_path / "runs"), "--report-dir", str(tmp_path / "reports"), *args],
                            cwd=REPO, env=cluster.env(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                            preexec_fn=_default_sigint)


def _quickstart(*extra: str) -> list[str]:
    return ["-p", "tasks/quickstart", "-H", "oracle", "-H", "null", "--seeds", "2", "-j", "2", *extra]


def _wait(proc: subprocess.Popen, tmp_path: Path, tag: str = "run", timeout: float = 1200) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"the run did not end in {timeout} s:\n{_text(tmp_path, tag + '.err')[-3000:]}")


def _text(tmp_path: Path, name: str) -> str:
    return (tmp_path / name).read_text(errors="replace")


def _run_dir(tmp_path: Path) -> Path:
    return next(p for p in (tmp_path / "runs").iterdir() if p.is_dir())


def _results(tmp_path: Path) -> list[dict]:
    runs = tmp_path / "runs"
    return [json.loads(p.read_text()) for p in runs.glob("*/quickstart/*/*/*/seed-*/result.json")] if runs.is_dir() \
        else []


def _infra_reasons(tmp_path: Path) -> str:
    """Why each infrastructure failure happened, with its attempts' errors (a failure must say what to fix)."""
    return "".join(f"{r['task_id']}/{r['harness']}/seed-{r['seed']} on {r.get('node')}: {r['outcome']}: {r['reason']} "
                   f"{r.get('error') or ''}\n" for r in _results(tmp_path)
                   if r["outcome"] in ("sandbox_error", "infra_error"))


def _rows(tmp_path: Path) -> list[dict]:
    return Store(database_url(tmp_path / "runs" / "evalharness.db")).trial_rows([_run_dir(tmp_path).name])


def _on(engine: str, results: list[dict]) -> list[dict]:
    return [r for r in results if r.get("node", "").endswith(f"({engine})")]


def _wait_for(what, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert proc.poll() is None, "the run ended before the test could act on it"
        assert time.monotonic() < deadline, "timed out waiting for the run"
        time.sleep(0.5)


def _assert_each_trial_once(tmp_path: Path) -> list[dict]:
    rows = _rows(tmp_path)
    assert len(rows) == MATRIX and len({r["trial_id"] for r in rows}) == MATRIX
    assert len(_results(tmp_path)) == MATRIX
    return rows


def test_trials_spread_over_both_nodes_and_each_is_recorded_once(cluster, second_engine, tmp_path):
    started = int(time.time()) - 1
    proc = _start(cluster, tmp_path, *_quickstart("--format", "json"))
    assert _wait(proc, tmp_path) == 0, _text(tmp_path, "run.err")[-3000:]
    report = json.loads(_text(tmp_path, "run.out"))  # stdout is the report alone: no Ray line on it
    rows = _assert_each_trial_once(tmp_path)
    assert {r["outcome"] for r in rows if r["harness"] == "oracle"} == {"resolved"}
    assert not [r for r in rows if r["harness"] == "null" and (r["resolved"] or r["infra"])]  # no_patch: unresolved
    assert report["n_infra"] == 0
    results = _results(tmp_path)
    first, second = _on(FIRST_ENGINE, results), _on(second_engine.url, results)
    assert first and second and len(first) + len(second) == MATRIX
    assert all(re.fullmatch(r"ray:127\.0\.0\.1:[0-9a-f]{8} \(unix://\S+\)", r["node"]) for r in results)
    run_id = _run_dir(tmp_path).name
    created = [e for e in second_engine.client().events(
        since=started, until=int(time.time()) + 1, decode=True,
        filters={"type": "container", "event": "create", "label": f"evalharness.run_id={run_id}"})]
    assert created, "the second engine's own events show no container of this run"
    assert second_engine.client().images.list(name="evalharness/task.quickstart"), "no task image on engine 2"


def test_a_node_killed_mid_run_loses_no_trial_and_records_none_twice(cluster, second_engine, docker_client, tmp_path):
    proc = _start(cluster, tmp_path, *_quickstart())
    _wait_for(lambda: len(_on(second_engine.url, _results(tmp_path))) >= 2, 900, proc)
    cluster.kill_extra()
    assert _wait(proc, tmp_path) == 0, _text(tmp_path, "run.err")[-3000:]
    rows = _assert_each_trial_once(tmp_path)
    assert not [r["trial_id"] for r in rows if r["infra"]], "a lost node's trial was recorded as a failure"
    assert {r["outcome"] for r in rows if r["harness"] == "oracle"} == {"resolved"}
    err = " ".join(_text(tmp_path, "run.err").split())  # the console wraps long lines
    assert re.search(r"node ray:127\.0\.0\.1:\S+ \(unix://\S+\) lost \(\w+\): \d+ trial\(s\) go to the other nodes",
                     err), err[-3000:]
    assert "second result" not in err
    later = _on(FIRST_ENGINE, _results(tmp_path))
    assert len(later) > MATRIX // 2, "the head's node did not take over the lost node's trials"
    # the killed node's actor cannot remove its trials' containers: the driver does, through the engine's socket
    assert not _containers(second_engine.client(), tmp_path) and not _containers(docker_client, tmp_path)


def _sockets(pids: set[int]) -> list[tuple[str, str, str, int]]:
    """(state, local, peer, pid) of every TCP and UDP socket of ``pids`` (`ss`)."""
    out = subprocess.run(["ss", "-Htuanp"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        for pid in map(int, re.findall(r"pid=(\d+),", line)):
            if pid in pids:
                found.append((parts[1], parts[4], parts[5], pid))
    return found


def _loopback(endpoint: str) -> bool:
    host = endpoint.rsplit(":", 1)[0].strip("[]")
    return host.startswith(("127.", "::ffff:127.")) or host == "::1"


def _descendants(pid: int) -> set[int]:
    children = {pid}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children |= _descendants(int(stat.parent.name))
    return children


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ray_listens_and_connects_on_loopback_only(cluster, tmp_path):
    proc = _start(cluster, tmp_path, "-p", "tasks/quickstart", "-H", "oracle", "--seeds", "2", "-j", "2",
                  "--task", "boltons-strutils-parse-int-list", "--task", "boltons-mathutils-ceil-exact-match")
    seen: list[tuple[str, str, str, int]] = []
    while proc.poll() is None:
        seen += _sockets(cluster.pids() | _descendants(proc.pid))
        time.sleep(0.5)
    assert proc.returncode == 0, _text(tmp_path, "run.err")[-3000:]
    listening = {(s[1], s[3]) for s in seen if s[0] in ("LISTEN", "UNCONN")}
    assert len(listening) >= 8, listening  # GCS, two raylets, agents, workers: the check is not vacuous
    assert {s[3] for s in seen if s[0] == "ESTAB"} & _descendants(proc.pid), "the driver's connections were not seen"
    wide = sorted({(s[0], s[1], s[3]) for s in seen if s[0] in ("LISTEN", "UNCONN") and not _loopback(s[1])})
    assert not wide, f"Ray listens beyond loopback: {wide}"
    away = sorted({(s[1], s[2], s[3]) for s in seen if s[0] != "LISTEN" and s[2] not in ("*:*", "0.0.0.0:*")
                   and not _loopback(s[2])})
    assert not away, f"a Ray connection leaves loopback: {away}"


def test_ctrl_c_exits_130_leaves_no_container_and_a_resume_finishes(cluster, second_engine, docker_client, tmp_path):
    proc = _start(cluster, tmp_path, *_quickstart())
    _wait_for(lambda: len(_results(tmp_path)) >= 3 and _containers(docker_client, tmp_path)
              and _containers(second_engine.client(), tmp_path), 900, proc)
    assert proc.poll() is None  # still running: the Ctrl-C below is what ends it
    proc.send_signal(signal.SIGINT)
    assert _wait(proc, tmp_path, timeout=180) == 130, _text(tmp_path, "run.err")[-3000:]
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as conn:
        assert conn.execute("select status from runs").fetchall() == [("interrupted",)]
    assert not _containers(docker_client, tmp_path) and not _containers(second_engine.client(), tmp_path)
    stored = len(_rows(tmp_path))
    assert 3 <= stored < MATRIX
    run_id = _run_dir(tmp_path).name
    again = _start(cluster, tmp_path, "--resume", run_id, tag="resume")
    assert _wait(again, tmp_path, "resume") == 0, _infra_reasons(tmp_path) + _text(tmp_path, "resume.err")[-3000:]
    rows = _assert_each_trial_once(tmp_path)
    assert not [r for r in rows if r["infra"]]
    assert f"{stored} already done, {MATRIX - stored} to run" in _text(tmp_path, "resume.err")


def test_a_cluster_started_for_the_run_listens_on_loopback_only_and_ends_with_it(tmp_path, docker_client):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # no RAY_ADDRESS: nothing to join
    proc = subprocess.Popen([EVALHARNESS, "run", "--executor", "ray", "--runs-dir", str(tmp_path / "runs"),
                             "--report-dir", str(tmp_path / "reports"), "-p", "tasks/quickstart", "-H", "oracle",
                             "--task", "boltons-strutils-parse-int-list"],
                            cwd=REPO, env=env, stdout=open(tmp_path / "run.out", "wb"),
                            stderr=open(tmp_path / "run.err", "wb"), stdin=subprocess.DEVNULL)
    seen: list[tuple[str, str, str, int]] = []
    pids: set[int] = set()
    while proc.poll() is None:
        pids |= _descendants(proc.pid)
        seen += _sockets(pids)
        time.sleep(0.5)
    assert proc.returncode == 0, _text(tmp_path, "run.err")[-3000:]
    assert len({(s[1], s[3]) for s in seen if s[0] == "LISTEN"}) >= 4
    wide = sorted({(s[0], s[1], s[3]) for s in seen if s[0] in ("LISTEN", "UNCONN") and not _loopback(s[1])})
    assert not wide, f"Ray listens beyond loopback: {wide}"
    deadline = time.monotonic() + 30  # Ray's own processes exit on their own shortly after the driver
    while (left := [pid for pid in pids - {proc.pid} if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"processes of the run's own Ray cluster outlive it by 30 s: {left}"
