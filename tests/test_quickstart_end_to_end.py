"""The built-in pack, end to end through the CLI: oracle resolves every task, null none, over two
seeds; a second run builds no image; a wrong gold patch is an unresolved outcome with its reason.

Pins: a pack whose gold patches stopped applying after a dependency bump went unnoticed for weeks.
"""

from __future__ import annotations

import json

import pytest
from support import QUICKSTART, TINYPACK, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _report(stdout: str) -> dict:
    return json.loads(stdout[: stdout.rindex("}") + 1])


def test_quickstart_oracle_resolves_all_and_null_none(tmp_path, base_image):
    done = run_cli("run", "--pack", str(QUICKSTART), "--harness", "oracle", "--harness", "null", "--seeds", "2",
                   "--workers", "2", "--format", "json", cwd=tmp_path)
    report = _report(done.stdout)
    scores = {s["config"]: s for s in report["scores"]}
    assert scores["oracle/none"]["resolve_rate"] == 1.0 and scores["oracle/none"]["n_trials"] == 16
    assert scores["null/none"]["resolve_rate"] == 0.0 and scores["null/none"]["n_trials"] == 16
    assert report["n_infra"] == 0
    assert all(row[1:] == ["2/2", "0/2"] or row[1:] == ["0/2", "2/2"] for row in report["per_task"]["rows"])
    run_dir = next(p for p in (tmp_path / "runs").iterdir() if p.is_dir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["pack"]["name"] == "quickstart" and manifest["revision"]["commit"]
    assert {"evalharness", "docker"} <= set(manifest["versions"])
    trial = run_dir / "quickstart" / "boltons-mathutils-ceil-exact-match" / "oracle" / "none" / "seed-1"
    assert {"patch.diff", "result.json", "trajectory.json", "test_output.txt", "results.jsonl", "trial.log"} <= {
        p.name for p in trial.iterdir()}
    assert (tmp_path / "reports" / f"{run_dir.name}.html").read_text().startswith("<!doctype html>")

    again = run_cli("run", "--pack", str(QUICKSTART), "--harness", "null", "--format", "json", cwd=tmp_path)
    assert "0 image(s) built" in again.stderr and "building" not in again.stderr


def test_a_wrong_gold_patch_is_unresolved_with_its_reason(tmp_path, base_image, tinypack_copy):
    tasks = tinypack_copy / "tasks.jsonl"
    rows = [json.loads(line) for line in tasks.read_text().splitlines()]
    # a "fix" that touches the right function but the wrong branch
    rows[0]["patch"] = rows[0]["patch"].replace("-        return value\n+        return high\n",
                                                "-        return value\n+        return value  # fixed?\n")
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run_cli("run", "--pack", str(tinypack_copy), "--harness", "oracle", "--format", "json", cwd=tmp_path)
    result = json.loads(next((tmp_path / "runs").glob("*/tinypack/tiny-clamp/oracle/none/seed-0/result.json"))
                        .read_text())
    assert result["outcome"] == "unresolved"
    assert result["reason"] == "1 of 5 required tests not passing, e.g. tests/test_calc.py::test_clamp_high_edge (failed)"
    assert _report(done.stdout)["scores"][0]["resolve_rate"] == 0.5


def test_report_formats_render_a_stored_run(tmp_path, base_image):
    done = run_cli("run", "--pack", str(TINYPACK), "--harness", "oracle", "--format", "md", cwd=tmp_path)
    assert "| oracle/none | 2 | 2 | 0 | 100.0% |" in done.stdout
    run_id = next(p.name for p in (tmp_path / "runs").iterdir() if p.is_dir())
    table = run_cli("report", run_id, cwd=tmp_path).stdout
    assert "oracle/none" in table and "tiny-clamp" in table
    html = run_cli("report", run_id, "--format", "html", "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert "wrote" in html.stderr and '<svg class="plot" data-plot="forest"' in (tmp_path / "r.html").read_text()
    listing = run_cli("runs", cwd=tmp_path).stdout
    assert run_id in listing and "completed" in listing
    missing = run_cli("report", "nope", cwd=tmp_path, check=False)
    assert missing.returncode == 1 and "no run 'nope'" in missing.stderr
