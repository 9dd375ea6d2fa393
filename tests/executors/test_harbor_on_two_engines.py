"""A Harbor pack run over two real engines (`run --docker-host`, the local one and a second dockerd with its own
socket and data root) through the real CLI: each engine builds the task's images from its own local base, runs
agent and verifier containers and volumes there, and removes them; every trial is recorded once with the outcome
it has on one engine (oracle resolved, null unresolved). Pins: Harbor trials were run on the local engine only."""

from __future__ import annotations

import json
import sqlite3

import pytest
from support import run_cli, write_file

pytestmark = [pytest.mark.docker, pytest.mark.slow]
LOCAL = "unix:///var/run/docker.sock"
CHECK = ('import os\np = "/app/answer.txt"\nok = os.path.exists(p) and open(p).read().strip() == "solved"\n'
         'open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")\n')


def _task(root, name: str, separate: bool) -> None:
    task = root / name
    mode = 'environment_mode = "separate"\n' if separate else ""
    top = 'artifacts = ["/app/answer.txt"]\n' if separate else ""
    write_file(task / "task.toml", f'version = "1.0"\n{top}[verifier]\ntimeout_sec = 60.0\n{mode}[agent]\n'
                                   'timeout_sec = 60.0\n[environment]\nallow_internet = false\n')
    write_file(task / "instruction.md", f"Write the word solved into /app/answer.txt ({name}).\n")
    write_file(task / "environment" / "Dockerfile", "FROM debian:bookworm-slim\nWORKDIR /app\n")
    if separate:
        write_file(task / "tests" / "Dockerfile", "FROM debian:bookworm-slim\nCOPY . /tests/\n")
    write_file(task / "tests" / "test.sh", "#!/bin/bash\npython3 /tests/check.py\n", 0o755)
    write_file(task / "tests" / "check.py", CHECK)
    write_file(task / "solution" / "solve.sh", "#!/bin/bash\necho solved > /app/answer.txt\n", 0o755)


def test_a_harbor_pack_runs_on_two_engines_each_trial_once(tmp_path, second_engine, docker_client):
    for name, separate in (("shared-one", False), ("separate-one", True)):
        _task(tmp_path / "src", name, separate)
    run_cli("packs", "import", "harbor", str(tmp_path / "src"), "--out", str(tmp_path / "pack"), cwd=tmp_path)
    done = run_cli("run", "-p", str(tmp_path / "pack"), "-H", "oracle", "-H", "null", "--seeds", "2",
                   "--docker-host", f"{LOCAL}#1", "--docker-host", f"{second_engine.url}#1", "--format", "json",
                   cwd=tmp_path, timeout=1500)
    run_id = json.loads(done.stdout)["runs"][0]["run_id"]
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as db:
        rows = db.execute("select trial_id, harness, outcome, infra from trials where run_id = ?", (run_id,)).fetchall()
    assert len(rows) == 8 and len({r[0] for r in rows}) == 8, rows
    assert {(r[1], r[2], r[3]) for r in rows} == {("oracle", "resolved", 0), ("null", "unresolved", 0)}, rows
    nodes = [json.loads(p.read_text())["node"] for p in (tmp_path / "runs" / run_id).glob("**/result.json")]
    assert set(nodes) == {LOCAL, second_engine.url}, nodes
    second = second_engine.client()
    built = {t for image in second.images.list() for t in image.tags}
    assert any(t.startswith("evalharness/harbor-env.") for t in built), built
    label = {"label": f"evalharness.run_id={run_id}"}
    assert second_engine.containers(run_id) == []
    assert docker_client.api.containers(all=True, filters=label) == []
    for client in (second, docker_client):  # volumes and snapshots of each trial went with it
        assert client.volumes.list(filters=label) == []
        assert [i.tags for i in client.images.list(filters=label)] == []
