"""`evalharness audit PACK --investigator minimal -m MODEL --api-base URL --seeds 2` end to end: the CLI
loads the harness, runs the scripted investigations of both tiny-pack tasks in real Docker, stores
one finding per seed (the malformed verdict as ``invalid``), keeps each trajectory under the audits
folder, and a second run keeps every stored seed (the investigator's configuration hashes stably).

Pins: an investigator configuration whose hash changed between runs (every resumed audit paid for
every seed again); an invalid verdict that made the command fail.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from investigator_scripts import VERDICTS, script
from support import TINYPACK, run_cli

from evalharness.models import ScriptedModelServer

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _audit(cwd, server):
    return run_cli("audit", str(TINYPACK), "--probe", "leak", "--investigator", "minimal",
                   "-m", "openai/scripted-investigator", "--api-base", f"{server.url}/v1", "--seeds", "2", cwd=cwd)


def test_the_audit_command_runs_stores_and_resumes_investigator_seeds(tmp_path, base_image):
    with ScriptedModelServer(script) as server:
        first = _audit(tmp_path, server)
        calls = len(server.requests)
        again = _audit(tmp_path, server)
        assert len(server.requests) == calls  # nothing investigated twice
    assert calls == 4 * 7  # 4 investigations: 5 commands, the verdict, the submit
    db = sqlite3.connect(tmp_path / "runs" / "evalharness.db")
    db.row_factory = sqlite3.Row
    rows = {(r["task_id"], r["seed"]): dict(r) for r in db.execute(
        "select * from audit_findings where probe = 'investigator' and seed >= 0")}
    assert sorted(rows) == sorted(VERDICTS)
    combined = {r["task_id"]: dict(r) for r in db.execute(
        "select * from audit_findings where probe = 'investigator' and seed = -1")}  # the stored ensemble
    assert (combined["tiny-clamp"]["flagged"], combined["tiny-clamp"]["severity"]) == (1, 2)
    assert json.loads(combined["tiny-clamp"]["evidence"])["agreement"] == 0.5
    assert (combined["tiny-mean-empty"]["status"], combined["tiny-mean-empty"]["severity"]) == ("ok", 3)
    statuses = {key: (r["status"], bool(r["flagged"]), r["family"], r["severity"]) for key, r in rows.items()}
    assert statuses[("tiny-clamp", 0)] == ("ok", False, "", 0)  # a clean verdict names no family ("" in the db)
    assert statuses[("tiny-clamp", 1)] == ("ok", True, "too_weak_tests", 2)
    assert statuses[("tiny-mean-empty", 0)] == ("ok", True, "underspecified", 3)
    assert statuses[("tiny-mean-empty", 1)][0] == "invalid"
    for r in rows.values():
        evidence = json.loads(r["evidence"])
        trajectory = tmp_path / "audits" / "tinypack" / evidence["trajectory"]
        assert trajectory.is_file() and evidence["commands_run"] == 6
    assert "investigator" in first.stderr and again.returncode == 0
