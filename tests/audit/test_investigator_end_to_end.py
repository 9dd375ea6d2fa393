"""The investigator end to end: the built-in ``minimal`` harness drives a scripted model (real litellm,
real HTTP) that investigates both tiny-pack tasks in real, sealed Docker sandboxes, two seeds each.

The scripted investigations read /tmp/audit/, grep the code, run the task's tests at base and with
the gold patch, try the network, and write verdicts: for tiny-clamp the seeds disagree (clean vs
too-weak tests), for tiny-mean-empty one seed flags it and the other writes a verdict with a family
nobody defined and severity 7. Every per-seed finding and both ensembles are stored, and the
ensembles are compared with human labels through the statistics layer.

Pins: an investigator sandbox that reached the network or lacked the task's files; commands that
were claimed in the verdict but never ran (the evidence holds their real outputs); a malformed
verdict that crashed the audit or was taken as an answer; containers left behind.
"""

from __future__ import annotations

import json

import pytest
from investigator_scripts import INVESTIGATION, NETWORK, VERDICTS, script

from evalharness.audit.context import AuditContext
from evalharness.audit.investigator import VERDICT_FILE, ensemble, investigate
from evalharness.models import ScriptedModelServer
from evalharness.sandbox.base import Limits
from evalharness.sandbox.engine import LABEL_RUN
from evalharness.stats.agreement import agreement_table, cohen_kappa
from evalharness.store import Store, database_url
from evalharness.trial import TrialContext
from evalharness.types import Budget

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RUN_ID = "test-investigator-e2e"


@pytest.fixture(scope="module")
def audited(tmp_path_factory, docker_client, image_builder, tinypack):
    from evalharness.harness.registry import load_harness

    out = tmp_path_factory.mktemp("audits")
    store = Store(database_url(out / "audit.db"))
    plumbing = TrialContext(run_id=RUN_ID, pack=tinypack, client=docker_client, images=image_builder,
                            budget=Budget(max_steps=20), limits=Limits())
    ctx = AuditContext(tinypack)
    findings = {}
    with ScriptedModelServer(script) as server:
        endpoint = server.endpoint("scripted-investigator")
        for task in tinypack.tasks:
            seeds = investigate(task, ctx, harness=load_harness("minimal"), endpoint=endpoint, seeds=[0, 1],
                                plumbing=plumbing, out_dir=out)
            findings[task.instance_id] = (seeds, ensemble(seeds))
        requests = server.requests
    for seeds, joined in findings.values():
        for finding in [*seeds, joined]:
            store.record_finding(tinypack.name, finding)
    left = docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={RUN_ID}"})
    return {"findings": findings, "store": store, "out": out, "requests": requests, "left": left,
            "pack": tinypack}


def _commands(finding):
    return {c["command"]: c for c in finding.evidence["commands"]}


def test_the_investigation_runs_its_commands_in_a_sealed_sandbox_holding_the_task(audited):
    for seeds, _ in audited["findings"].values():
        for finding in seeds:
            ran = _commands(finding)
            assert finding.evidence["commands_run"] == len(INVESTIGATION) + 1, finding
            listing = ran[INVESTIGATION[0]]
            assert listing["exit_code"] == 0 and finding.task_id in listing["output"]
            assert "FAIL_TO_PASS" in listing["output"] and "gold.patch" in listing["output"]
            assert "def clamp" in ran[INVESTIGATION[1]]["output"]
            at_base, with_gold = ran[INVESTIGATION[2]], ran[INVESTIGATION[3]]
            assert at_base["exit_code"] != 0 and "failed" in at_base["output"]  # the F2P test fails at base
            assert with_gold["exit_code"] == 0 and "passed" in with_gold["output"]
            offline = ran[NETWORK]
            assert offline["exit_code"] != 0 and "ONLINE" not in offline["output"]
            assert "calc/__init__.py" in finding.evidence["work_tree_diff"]  # the gold patch it applied
    assert audited["left"] == []


def test_verdicts_become_findings_and_the_malformed_one_is_invalid(audited):
    (clean, weak), _ = audited["findings"]["tiny-clamp"]
    assert (clean.status, clean.flagged, clean.severity, clean.seed) == ("ok", False, 0, 0)
    assert (weak.status, weak.flagged, weak.family, weak.severity, weak.seed) == ("ok", True, "too_weak_tests", 2, 1)
    (flagged, malformed), _ = audited["findings"]["tiny-mean-empty"]
    assert (flagged.status, flagged.family, flagged.severity) == ("ok", "underspecified", 3)
    assert malformed.status == "invalid" and not malformed.flagged
    assert "family" in malformed.reason and "severity" in malformed.reason
    assert json.loads(malformed.evidence["raw"]) == VERDICTS[("tiny-mean-empty", 1)]


def test_two_disagreeing_seeds_ensemble_to_the_most_severe_with_agreement_one_half(audited):
    _, clamp = audited["findings"]["tiny-clamp"]
    assert (clamp.flagged, clamp.family, clamp.severity, clamp.evidence["agreement"]) == (
        True, "too_weak_tests", 2, 0.5)
    _, mean = audited["findings"]["tiny-mean-empty"]
    assert (mean.status, mean.family, mean.severity) == ("ok", "underspecified", 3)
    assert mean.evidence["statuses"] == {"ok": 1, "invalid": 1} and mean.evidence["agreement"] == 1.0


def test_trajectories_are_kept_where_the_evidence_says(audited):
    for seeds, _ in audited["findings"].values():
        for finding in seeds:
            path = audited["out"] / finding.evidence["trajectory"]
            steps = json.loads(path.read_text())["steps"]
            commands = [s["command"] for s in steps if s["kind"] == "command"]
            assert commands[:len(INVESTIGATION)] == INVESTIGATION
            assert (path.parent / "verdict.raw").is_file() and (path.parent / "investigation.log").is_file()


def test_the_model_was_told_to_investigate_not_to_fix(audited):
    first = [r for r in audited["requests"] if len(r.body["messages"]) == 2]
    assert len(first) == 4 and {r.body["seed"] for r in first} == {0, 1}
    system = first[0].body["messages"][0]["content"]
    assert "not asked to fix" in system
    assert VERDICT_FILE in first[0].body["messages"][1]["content"]


def test_stored_verdicts_compare_with_human_labels(audited):
    store, pack = audited["store"], audited["pack"].name
    rows = store.findings(pack)
    assert len(rows) == 6
    assert sorted((r["task_id"], r["seed"], r["status"]) for r in rows) == [
        ("tiny-clamp", -1, "ok"), ("tiny-clamp", 0, "ok"), ("tiny-clamp", 1, "ok"),
        ("tiny-mean-empty", -1, "ok"), ("tiny-mean-empty", 0, "ok"), ("tiny-mean-empty", 1, "invalid")]
    store.record_label(pack, task_id="tiny-clamp", annotator="ann", broken=False, severity=0)
    store.record_label(pack, task_id="tiny-mean-empty", annotator="ann", broken=True, severity=2,
                       family="underspecified")
    human = {r["task_id"]: r["broken"] for r in store.labels(pack)}
    joined = {r["task_id"]: r["flagged"] for r in rows if r["seed"] == -1 and r["status"] == "ok"}
    tasks = sorted(joined)
    table = agreement_table([joined[t] for t in tasks], [human[t] for t in tasks], categories=[True, False])
    summary = cohen_kappa(table)
    assert table.tolist() == [[1, 1], [0, 0]]
    assert (summary.precision, summary.recall, summary.raw_agreement) == (0.5, 1.0, 0.5)


def test_an_engine_that_fails_is_an_error_finding_per_seed_not_a_crash(image_builder, tinypack):
    import docker

    from evalharness.harness.registry import load_harness
    from evalharness.types import ModelEndpoint

    # the engine went away mid-audit (a version given: the client does not ask the engine at construction)
    gone = docker.DockerClient(base_url="unix:///nonexistent/docker.sock", version="1.41")
    plumbing = TrialContext(run_id=RUN_ID, pack=tinypack, client=gone, images=image_builder, budget=Budget(),
                            limits=Limits())
    findings = investigate(tinypack.tasks[0], AuditContext(tinypack), harness=load_harness("minimal"),
                           endpoint=ModelEndpoint(name="openai/never-called", api_base="http://127.0.0.1:9/v1"),
                           seeds=[0, 1], plumbing=plumbing)
    assert [(f.seed, f.status, f.flagged) for f in findings] == [(0, "error", False), (1, "error", False)]
    assert all(f.reason.startswith("SandboxError: could not start a container") for f in findings)
    assert ensemble(findings).status == "error"
