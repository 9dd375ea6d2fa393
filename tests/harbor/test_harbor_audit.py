"""`evalharness audit PACK --no-docker` on an imported pack of the Terminal-Bench-3-template fixtures: the
``harbor_static`` probe reports each fixture's named check (with file:line evidence), the probes that read a
SWE-style task say skipped with the reason instead of crashing, and on a SWE pack ``harbor_static`` skips.
No engine: the static checks read the task directories (overlays applied)."""

from __future__ import annotations

import json
import shutil

import pytest

from support import QUICKSTART, REPO, SHARED, run_cli
from test_harbor_checks_flag_each_fixture import FIXTURES

TASKS = SHARED / "research-data" / "harbor" / "tasks"
OVERLAYS = REPO / "tasks" / "harbor-overlays"
SWE_ONLY = ("underspecified", "strict_literals", "leak", "environment", "agents", "mutants")


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    if not TASKS.is_dir():
        pytest.skip(f"{TASKS} absent (shared research data)")
    root = tmp_path_factory.mktemp("harbor-audit")
    for name in FIXTURES:
        shutil.copytree(TASKS / name, root / "src" / name)
    imported = run_cli("packs", "import", "harbor", str(root / "src"), "--out", str(root / "pack"), "--overlays",
                       str(OVERLAYS), "--base-map", str(OVERLAYS / "base-map.yaml"), cwd=root)
    done = run_cli("audit", str(root / "pack"), "--no-docker", cwd=root, check=False)
    findings = {}
    for path in (root / "audits" / "pack" / "findings").glob("*.json"):
        findings[path.stem] = {f["probe"]: f for f in json.loads(path.read_text())["findings"]}
    return imported, done, findings


def test_every_imported_fixture_is_reported_for_its_named_check(audited):
    imported, done, findings = audited
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # GPUs cannot run here: that fixture is not imported, with its reason (`packs check-harbor` flags it statically)
    assert "not imported: tb3tpl-fail-static-gpu-types: GPUs requested" in imported.stdout
    assert set(findings) == set(FIXTURES) - {"tb3tpl-fail-static-gpu-types"}
    for name, found in findings.items():
        static = found["harbor_static"]
        named, every = FIXTURES[name]
        assert static["status"] == "ok" and static["flagged"], (name, static)
        assert named in static["evidence"]["checks"], (name, static["evidence"]["checks"].keys())
        assert set(static["evidence"]["checks"]) <= every, name  # only defects the fixture truly has
        assert all(e["evidence"] and e["evidence"][0]["file"] for e in static["evidence"]["checks"][named])
        assert named in static["reason"] and static["severity"] == max(
            e["severity"] for es in static["evidence"]["checks"].values() for e in es)


def test_probes_that_read_swe_tasks_skip_harbor_tasks_with_the_reason(audited):
    _, done, findings = audited
    for found in findings.values():
        for probe in SWE_ONLY:
            assert found[probe]["status"] == "skipped" and "SWE-style task" in found[probe]["reason"], probe
            assert found[probe]["evidence"] == {"pack_kind": "harbor"}
        assert found["validity"]["status"] == "skipped" and "validate first" in found["validity"]["reason"]
    assert "Traceback" not in done.stderr


def test_the_shared_mode_finding_puts_the_risk_on_harbors_run_not_evalharnesss(audited):
    _, _, findings = audited
    [shared] = findings["tb3tpl-fail-static-separate-verifier"]["harbor_static"]["evidence"]["checks"][
        "separate-verifier"]
    assert "when Harbor runs this task" in shared["reason"]
    assert "a program of the agent's that test.sh runs still runs as root beside the reward" in shared["reason"]
    assert shared["severity"] == 1  # noted, never a flag at the default --min-severity 2
    mended = findings["tb3tpl-fail-static-allow-internet"]["harbor_static"]  # the overlay drops the download
    assert "allow-internet" in mended["evidence"]["mended_by_overlays"] and "overlays mend" in mended["reason"]


def test_a_swe_pack_skips_the_harbor_probe(tmp_path):
    done = run_cli("audit", str(QUICKSTART), "--no-docker", "--probe", "harbor_static", "--task",
                   "boltons-strutils-parse-int-list", cwd=tmp_path)
    assert "[1/1]" in done.stderr
    [found] = json.loads((tmp_path / "audits" / "quickstart" / "findings" / "boltons-strutils-parse-int-list.json")
                         .read_text())["findings"]
    assert found["status"] == "skipped" and "Harbor task directory" in found["reason"]
