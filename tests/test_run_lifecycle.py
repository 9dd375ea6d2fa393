"""A run survives its own death: SIGKILL then --resume records every trial exactly once; Ctrl-C
leaves no container; infrastructure failures are retried and never counted as agent failures.

Pins: runners that appended results to a file twice after a restart, and counted a crashed
Docker daemon as the model failing the task.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest
from support import EVALHARNESS, REPO, run_cli

from evalharness.sandbox.engine import LABEL_RUN

pytestmark = pytest.mark.docker

HARNESSES = REPO / "tests" / "data" / "harnesses"


def _rows(db, run_id):
    with sqlite3.connect(db) as conn:
        return conn.execute("select trial_id, outcome, infra, attempts from trials where run_id = ?",
                            (run_id,)).fetchall()


def _run_id(stderr_text: str) -> str:
    for line in stderr_text.splitlines():
        if line.startswith("run ") and "trials" in line:
            return line.split()[1].rstrip(":")
    raise AssertionError(f"no run id in output:\n{stderr_text}")


def _start(tmp_path, *args, env=None):
    log = open(tmp_path / "stderr.txt", "w")  # noqa: SIM115
    # Ctrl-C as a terminal delivers it: a test session started in the background hands its children SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler
    proc = subprocess.Popen([*EVALHARNESS, "run", *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log,
                            env={**os.environ, **(env or {})}, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return proc, tmp_path / "stderr.txt"


def _wait_for_rows(db, stderr, minimum, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists() and "run " in stderr.read_text():
            run_id = _run_id(stderr.read_text())
            if len(_rows(db, run_id)) >= minimum:
                return run_id
        time.sleep(0.2)
    raise AssertionError(f"fewer than {minimum} trials recorded in time:\n{stderr.read_text()}")


def test_sigkill_then_resume_records_every_trial_once(tmp_path, base_image, docker_client, tinypack):
    proc, stderr = _start(tmp_path, "-p", str(tinypack.root), "-H", str(HARNESSES / "slow_oracle.py"),
                          "--seeds", "4", "-j", "2", env={"EH_TEST_SLEEP": "1"})
    db = tmp_path / "runs" / "evalharness.db"
    run_id = _wait_for_rows(db, stderr, minimum=2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _rows(db, run_id)
    assert 2 <= len(before) < 8, "the kill should land mid-run"
    run_cli("run", "--resume", run_id, cwd=tmp_path)
    after = _rows(db, run_id)
    ids = [r[0] for r in after]
    assert len(ids) == len(set(ids)) == 8
    assert set(before) <= set(after), "completed trials are kept, not redone"
    assert {r[1] for r in after} == {"resolved"}
    folders = sorted(p.parent.name + "/" + p.name for p in (tmp_path / "runs" / run_id).glob("*/*/*/*/seed-*"))
    assert len(folders) == 8 and not list((tmp_path / "runs" / run_id).glob("**/*.partial-*"))
    assert not docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})


def _containers(docker_client, run_id):
    # the low-level listing: containers.list() inspects each one and races with their removal
    return docker_client.api.containers(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})


def test_a_killed_run_shows_interrupted_and_gc_removes_its_containers(tmp_path, base_image, docker_client, tinypack):
    proc, stderr = _start(tmp_path, "-p", str(tinypack.root), "-H", str(HARNESSES / "slow_oracle.py"),
                          "--seeds", "4", "-j", "2", env={"EH_TEST_SLEEP": "3"})
    db = tmp_path / "runs" / "evalharness.db"
    run_id = _wait_for_rows(db, stderr, minimum=1)
    deadline = time.monotonic() + 60
    while not _containers(docker_client, run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"{run_id}  running" in run_cli("runs", cwd=tmp_path).stdout  # a live runner is believed
    second = run_cli("run", "--resume", run_id, cwd=tmp_path, check=False)
    assert second.returncode == 1 and f"run {run_id} is still running (pid {proc.pid}" in second.stderr
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _containers(docker_client, run_id), "a killed runner leaves its containers running"
    assert f"{run_id}  interrupted" in run_cli("runs", cwd=tmp_path).stdout
    gc = run_cli("sandbox", "gc", cwd=tmp_path)
    assert "of 1 run(s) whose runner is gone" in gc.stdout
    assert not _containers(docker_client, run_id)
    run_cli("run", "--resume", run_id, cwd=tmp_path, env={"EH_TEST_SLEEP": "3"})
    ids = [r[0] for r in _rows(db, run_id)]
    assert len(ids) == len(set(ids)) == 8
    assert f"{run_id}  completed" in run_cli("runs", cwd=tmp_path).stdout


def test_ctrl_c_after_failures_leaves_no_container(tmp_path, base_image, docker_client, tinypack):
    env = {"EH_TEST_SLEEP": "2", "EH_TEST_FAIL_TASKS": "tiny-mean-empty"}
    proc, stderr = _start(tmp_path, "-p", str(tinypack.root), "-H", str(HARNESSES / "slow_oracle.py"),
                          "--seeds", "6", "-j", "2", env=env)
    db = tmp_path / "runs" / "evalharness.db"
    run_id = _wait_for_rows(db, stderr, minimum=3)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130, stderr.read_text()
    assert not docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
    assert "interrupted" in stderr.read_text()
    with sqlite3.connect(db) as conn:
        assert conn.execute("select status from runs where run_id = ?", (run_id,)).fetchone()[0] == "interrupted"
    run_cli("run", "--resume", run_id, cwd=tmp_path, env=env)
    outcomes = [r[1] for r in _rows(db, run_id)]
    assert len(outcomes) == 12
    assert outcomes.count("harness_error") == 6 and outcomes.count("resolved") == 6


def _run_crashing(tmp_path, tinypack, crashes: int, exit_code: int = 0):
    """Run the crashing harness on the tiny pack; its container is killed on the first ``crashes`` attempts."""
    counter = tmp_path / "counter"
    counter.mkdir()
    done = run_cli("run", "-p", str(tinypack.root), "-H", str(HARNESSES / "crashing.py"), "--format", "json",
                   cwd=tmp_path, env={"EH_TEST_COUNTER": str(counter), "EH_TEST_CRASHES": str(crashes)}, check=False)
    assert done.returncode == exit_code, done.stderr
    report = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    return _rows(tmp_path / "runs" / "evalharness.db", _run_id(done.stderr)), report


def test_a_crashed_container_is_retried_not_blamed_on_the_agent(tmp_path, base_image, tinypack):
    rows, _ = _run_crashing(tmp_path, tinypack, crashes=1)
    assert [(r[1], r[3]) for r in rows] == [("resolved", 2), ("resolved", 2)]


def test_persistent_infra_failures_are_counted_apart_and_exit_3(tmp_path, base_image, tinypack):
    rows, report = _run_crashing(tmp_path, tinypack, crashes=99, exit_code=3)
    assert [(r[1], r[2], r[3]) for r in rows] == [("sandbox_error", 1, 3)] * 2
    assert report["n_infra"] == 2
    score = report["scores"][0]
    assert score["n_infra"] == 2 and score["resolve_rate"] is None  # no usable trial: undefined, not 0%


def test_a_recipe_that_fails_the_same_way_twice_is_a_task_error(tmp_path, base_image, tinypack_copy):
    manifest = tinypack_copy / "pack.yaml"
    manifest.write_text(manifest.read_text().replace("  setup: []", "  setup: ['echo broken recipe; exit 3']"))
    done = run_cli("run", "-p", str(tinypack_copy), "-H", "oracle", "--format", "json", cwd=tmp_path, check=False)
    assert done.returncode == 1, done.stderr
    rows = _rows(tmp_path / "runs" / "evalharness.db", _run_id(done.stderr))
    assert [(r[1], r[2]) for r in rows] == [("task_error", 0)] * 2
    # a broken recipe gets a second chance, not one build per trial and retry (2 trials x 3 attempts)
    assert done.stderr.count("building evalharness/env.tinypack") == 2
    result = next((tmp_path / "runs").glob("*/tinypack/tiny-clamp/oracle/none/seed-0/result.json"))
    assert json.loads(result.read_text())["reason"] == "broken recipe"
    assert "task error: tinypack/tiny-clamp: broken recipe" in done.stderr


def test_resume_refuses_a_changed_harness_configuration(tmp_path, base_image, tinypack):
    harness = str(HARNESSES / "slow_oracle.py")
    done = run_cli("run", "-p", str(tinypack.root), "-H", harness, "--format", "json", cwd=tmp_path,
                   env={"EH_TEST_SLEEP": "0"})
    run_id = _run_id(done.stderr)
    changed = run_cli("run", "--resume", run_id, cwd=tmp_path, env={"EH_TEST_SLEEP": "2"}, check=False)
    assert changed.returncode == 1
    assert f"harness configuration changed since run {run_id} started: slow-oracle" in changed.stderr
    same = run_cli("run", "--resume", run_id, cwd=tmp_path, env={"EH_TEST_SLEEP": "0"})
    assert "2 trials (2 already done, 0 to run)" in same.stderr


def test_a_model_given_twice_is_refused_before_anything_runs(tmp_path, tinypack):
    done = run_cli("run", "-p", str(tinypack.root), "-H", "minimal", "-m", "openai/x", "-m", "openai/x", cwd=tmp_path,
                   check=False)
    assert done.returncode == 1 and "a model is given twice" in done.stderr
    assert not (tmp_path / "runs").exists()
