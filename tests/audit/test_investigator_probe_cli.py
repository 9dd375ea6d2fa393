"""`evalharness audit PACK --probe investigator -m MODEL --api-base URL` through the real CLI: the investigator
is chosen like a probe (the built-in ``minimal`` unless ``--investigator`` names a harness), runs against the
scripted model server serving ``audits/investigator-scripted.yaml`` (the file docs/audit.md serves), and its
verdicts land in the store, the findings files and audit.json; no other probe runs.

Pins: ``--probe investigator`` refused as an unknown probe; ``--probe investigator`` running every probe
(an empty probe list read as "all") or no investigator; a verdict that does not depend on the task.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from support import QUICKSTART, REPO, run_cli

from evalharness.audit.investigator import DEFAULT_HARNESS, chosen_harness
from evalharness.errors import UserError
from evalharness.models import ScriptedModelServer

SCRIPT = REPO / "audits" / "investigator-scripted.yaml"


def test_the_investigator_is_chosen_like_a_probe():
    assert chosen_harness(None, ["investigator"], []) == DEFAULT_HARNESS == "minimal"
    assert chosen_harness("claude-code", ["investigator"], []) == "claude-code"
    assert chosen_harness("minimal", ["leak"], []) == "minimal"  # --investigator alone still runs it
    assert chosen_harness(None, ["leak"], []) is None
    assert chosen_harness(None, [], []) is None  # a plain audit runs no agent
    assert chosen_harness(None, ["investigator"], ["investigator"]) is None
    with pytest.raises(UserError, match="contradict"):
        chosen_harness("minimal", [], ["investigator"])


def test_investigator_probe_needs_docker_and_a_model_and_is_listed(tmp_path):
    no_docker = run_cli("audit", str(QUICKSTART), "--probe", "investigator", "-m", "openai/x", "--no-docker",
                        cwd=tmp_path, check=False)
    assert no_docker.returncode == 1 and "runs in Docker" in no_docker.stderr
    unknown = run_cli("audit", str(QUICKSTART), "--probe", "nosuch", "--no-docker", cwd=tmp_path, check=False)
    assert unknown.returncode == 1 and "investigator" in unknown.stderr  # named among the probes one can pick
    listed = run_cli("audit", "probes", cwd=tmp_path).stdout
    assert "investigator (any family" in listed and "/tmp/audit/verdict.json" in listed


@pytest.mark.docker
@pytest.mark.slow
def test_probe_investigator_runs_the_agent_and_its_verdicts_land_in_the_audit(tmp_path, tinypack_copy, base_image):
    tasks = [json.loads(line) for line in (tinypack_copy / "tasks.jsonl").read_text().splitlines()]
    by_id = {t["instance_id"]: t for t in tasks}
    by_id["tiny-mean-empty"]["patch"] = by_id["tiny-clamp"]["patch"]  # a gold patch that does not apply here
    (tinypack_copy / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))

    with ScriptedModelServer(SCRIPT) as server:
        done = run_cli("audit", str(tinypack_copy), "--probe", "investigator", "-m", "openai/scripted",
                       "--api-base", f"{server.url}/v1", "--seeds", "2", cwd=tmp_path)
        asked = len(server.requests)
    assert asked == 2 * 2 * 3  # two tasks, two seeds, three replies each
    assert "the investigator (minimal, 2 seed(s))" in done.stderr

    db = sqlite3.connect(tmp_path / "runs" / "evalharness.db")
    db.row_factory = sqlite3.Row
    rows = {(r["task_id"], r["probe"], r["seed"]): dict(r) for r in db.execute("select * from audit_findings")}
    assert {probe for _, probe, _ in rows} == {"investigator"}  # no other probe ran
    assert sorted(rows) == sorted((t, "investigator", s) for t in by_id for s in (-1, 0, 1))
    clamp, broken = rows[("tiny-clamp", "investigator", -1)], rows[("tiny-mean-empty", "investigator", -1)]
    assert (clamp["status"], clamp["flagged"], clamp["severity"]) == ("ok", 0, 0)
    assert (broken["status"], broken["flagged"], broken["family"], broken["severity"]) == ("ok", 1, "validity", 3)

    out = tmp_path / "audits" / "tinypack"
    findings = json.loads((out / "findings" / "tiny-mean-empty.json").read_text())["findings"]
    seed0 = next(f for f in findings if f["seed"] == 0)
    assert "with the gold patch" in seed0["reason"] and (out / seed0["evidence"]["trajectory"]).is_file()
    audit = json.loads((out / "audit.json").read_text())
    assert audit["flagged"] == 1 and audit["per_probe"]["investigator"]["flagged"] == 1
