"""A broken task is named with its reason at the end of the run and in every report, left out of
the rate, and makes the run exit 1; `sandbox build` says why in one line. Through the real CLI
and real Docker.

Pins: a pack with one good and one broken task (a `defect_patch` that did not apply, a wrong
sdist sha256) showed oracle 100%, printed nothing and exited 0: the broken task had become an
infra_error; `sandbox build` showed a traceback on a sha256 mismatch.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3

import pytest
from support import QUICKSTART, run_cli

from evalharness.sandbox.engine import LABEL_RUN

pytestmark = pytest.mark.docker


def _rows(tmp_path, run_id):
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as conn:
        return dict(conn.execute("select task_id, outcome || ' | ' || reason from trials where run_id = ?",
                                 (run_id,)).fetchall())


def _run_id(stderr: str) -> str:
    return next(line.split()[1].rstrip(":") for line in stderr.splitlines() if line.startswith("run "))


def _break_task(pack, task_id, field, old, new):
    path = pack / "tasks.jsonl"
    lines = []
    for line in path.read_text().splitlines():
        task = json.loads(line)
        if task["instance_id"] == task_id:
            assert old in task[field]
            task[field] = task[field].replace(old, new)
        lines.append(json.dumps(task))
    path.write_text("\n".join(lines) + "\n")


def _json_report(stdout: str) -> dict:
    return json.loads(stdout[: stdout.rindex("}") + 1])


def test_a_defect_patch_that_does_not_apply_is_a_named_task_error(tmp_path, base_image, tinypack_copy, docker_client):
    _break_task(tinypack_copy, "tiny-clamp", "defect_patch", "-        return high", "-        return hihg")
    done = run_cli("run", "-p", str(tinypack_copy), "-H", "null", "--format", "json", cwd=tmp_path, check=False)
    assert done.returncode == 1, done.stderr
    run_id = _run_id(done.stderr)
    rows = _rows(tmp_path, run_id)
    assert rows["tiny-clamp"].startswith("task_error | defect_patch does not apply: error: patch failed: calc/__init__.py")
    assert rows["tiny-mean-empty"].startswith("no_patch")
    assert "task error: tinypack/tiny-clamp: defect_patch does not apply" in done.stderr
    assert "Traceback" not in done.stderr
    built = re.findall(r"building (evalharness/task\.tinypack:\w+)", done.stderr)
    assert built and len(built) == len(set(built))  # a known defect is not built twice (the other may be cached)
    report = _json_report(done.stdout)
    assert [(e["task_id"], e["trials"]) for e in report["task_errors"]] == [("tiny-clamp", 1)]
    assert report["scores"][0]["n_trials"] == 1 and report["n_infra"] == 0  # left out of the rate, not infra
    for fmt in ("table", "md", "html", "json"):
        text = run_cli("report", run_id, "--format", fmt, cwd=tmp_path).stdout
        assert "defect_patch does not apply" in text and "tiny-clamp" in text, fmt
    again = run_cli("run", "--resume", run_id, cwd=tmp_path, check=False)  # a resume retries it, still broken
    assert again.returncode == 1 and "1 already done, 1 to run" in again.stderr
    assert _rows(tmp_path, run_id)["tiny-clamp"].startswith("task_error")
    assert not docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})


def test_a_gold_patch_that_does_not_apply_is_a_task_error(tmp_path, base_image, tinypack_copy, docker_client):
    _break_task(tinypack_copy, "tiny-clamp", "patch", "-        return value", "-        return valeu")
    done = run_cli("run", "-p", str(tinypack_copy), "-H", "null", "--format", "md", cwd=tmp_path, check=False)
    assert done.returncode == 1, done.stderr
    run_id = _run_id(done.stderr)
    rows = _rows(tmp_path, run_id)
    assert rows["tiny-clamp"].startswith("task_error | gold patch does not apply to the task's base: error: patch failed")
    assert rows["tiny-mean-empty"].startswith("no_patch")
    assert "## Task errors" in done.stdout and "gold patch does not apply" in done.stdout
    assert not docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})


def test_a_clean_run_and_its_resume_exit_0(tmp_path, base_image, tinypack):
    done = run_cli("run", "-p", str(tinypack.root), "-H", "null", cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    resumed = run_cli("run", "--resume", _run_id(done.stderr), cwd=tmp_path, check=False)
    assert resumed.returncode == 0 and "2 already done, 0 to run" in resumed.stderr


def test_user_errors_exit_1_without_a_traceback(tmp_path, tinypack):
    done = run_cli("run", "-p", str(tinypack.root), "-H", "no-such-harness", cwd=tmp_path, check=False)
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert "Exit codes" in run_cli("run", "--help", cwd=tmp_path).stdout


def test_a_wrong_sdist_sha256_is_one_line_in_sandbox_build_and_a_task_error_in_a_run(tmp_path, base_image):
    pack = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, pack)
    manifest = pack / "pack.yaml"
    manifest.write_text(manifest.read_text().replace("sha256: d39c", "sha256: 0000"))
    built = run_cli("sandbox", "build", "-p", str(pack), cwd=tmp_path, check=False)
    assert built.returncode == 1 and "Traceback" not in built.stderr
    [line] = built.stderr.strip().splitlines()
    assert line.startswith("error: task boltons-")
    assert "sha256 mismatch for boltons-26.2.0.tar.gz: expected 0000" in line and ", got d39cfd15" in line
    task = json.loads((pack / "tasks.jsonl").read_text().splitlines()[0])["instance_id"]
    done = run_cli("run", "-p", str(pack), "-H", "oracle", "--task", task, cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert f"task error: quickstart/{task}: sha256 mismatch for boltons-26.2.0.tar.gz" in done.stderr
