"""A real run in Docker through the CLI, labelled and read by a machine: `run --format json` prints one
JSON document on stdout (the HTML report's path and progress on stderr), `runs --tag` finds the run with
its name and tags, and a resume that repeats the same labels is accepted.

Pins: `run --format json | python -m json.tool` failed on the `HTML report:` line after the JSON; runs
could not be named or tagged, so a cron job could not find its own runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import QUICKSTART, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "boltons-mathutils-ceil-exact-match"


def test_a_labelled_json_run_is_one_document_and_runs_finds_it_by_tag(tmp_path, base_image):
    common = ["--runs-dir", str(tmp_path / "runs"), "--report-dir", str(tmp_path / "reports")]
    done = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "--task", TASK, "--format", "json", "--name", "x",
                   "--tag", "a=b", *common, cwd=tmp_path)
    report = json.loads(done.stdout)
    piped = subprocess.run([sys.executable, "-m", "json.tool"], input=done.stdout, capture_output=True, text=True)
    assert piped.returncode == 0, piped.stderr
    [run] = report["runs"]
    run_id = run["run_id"]
    assert [(s["config"], s["n_trials"], s["resolve_rate"]) for s in report["scores"]] == [("oracle/none", 1, 1.0)]
    assert f"HTML report: {tmp_path / 'reports' / run_id}.html" in done.stderr
    assert f"run {run_id}: 1 trials" in done.stderr

    found = json.loads(run_cli("runs", "--tag", "a=b", "--format", "json", *common[:2], cwd=tmp_path).stdout)
    assert [(r["run_id"], r["name"], r["tags"], r["status"], r["harnesses"], r["models"], r["trials"], r["resolved"])
            for r in found] == [(run_id, "x", {"a": "b"}, "completed", ["oracle"], [], 1, 1)]
    assert json.loads(run_cli("runs", "--tag", "a=c", "--format", "json", *common[:2], cwd=tmp_path).stdout) == []
    listed = run_cli("runs", "--name", "x", *common[:2], cwd=tmp_path).stdout
    assert listed.startswith(f"{run_id}  completed") and "name=x tags=a=b harnesses=oracle" in listed
    manifest = json.loads((tmp_path / "runs" / run_id / "manifest.json").read_text())
    assert (manifest["name"], manifest["tags"]) == ("x", {"a": "b"})

    again = run_cli("run", "--resume", run_id, "--name", "x", "--tag", "a=b", "--format", "json", *common,
                    cwd=tmp_path)
    assert json.loads(again.stdout)["runs"][0]["run_id"] == run_id and "(1 already done, 0 to run)" in again.stderr
