"""A task without an environment recipe: the probes that need none still read it, those that need one (validity,
Docker probes, the investigator) say skipped with the recipe's reason, and `--exclude` leaves tasks out."""

from __future__ import annotations

import json

from evalharness.audit.basecode import base_code_provider, from_sources
from evalharness.audit.context import AuditContext
from evalharness.audit.pipeline import Auditor, Investigator, needs_environment
from evalharness.audit.probes import load_probes
from evalharness.audit.results import audit_results
from evalharness.packs import load_pack
from evalharness.report.audit import render_audit
from evalharness.sources.swebench import import_swebench
from evalharness.store import Store
from support import run_cli

PATCH = """diff --git a/astropy/units/scale.py b/astropy/units/scale.py
--- a/astropy/units/scale.py
+++ b/astropy/units/scale.py
@@ -1,2 +1,4 @@
 def scale(x):
+    if x is None:
+        raise ValueError("scale needs a number, got None")
     return x
"""
TEST_PATCH = """diff --git a/astropy/units/tests/test_scale.py b/astropy/units/tests/test_scale.py
new file mode 100644
--- /dev/null
+++ b/astropy/units/tests/test_scale.py
@@ -0,0 +1,6 @@
+import pytest
+from astropy.units.scale import scale
+
+def test_none():
+    with pytest.raises(ValueError, match="scale needs a number, got None"):
+        scale(None)
"""
NO_RECIPE = "astropy__astropy-1"  # astropy 1.3: the built-in table lists it as unsupported, with the reason
WITH_RECIPE = "astropy__astropy-2"  # astropy 5.1 has a recipe


def _pack(tmp_path):
    records = [{"instance_id": iid, "repo": "astropy/astropy", "base_commit": "0" * 40, "version": version,
                "problem_statement": "scale(None) returns None; it should refuse it.", "patch": PATCH,
                "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["astropy/units/tests/test_scale.py::test_none"],
                "PASS_TO_PASS": []} for iid, version in ((NO_RECIPE, "1.3"), (WITH_RECIPE, "5.1"))]
    source = tmp_path / "records.json"
    source.write_text(json.dumps(records))
    import_swebench(str(source), tmp_path / "pack")
    return load_pack(tmp_path / "pack")


def _never(task, ctx, seeds):
    raise AssertionError(f"the investigator ran on {task.instance_id}, which has no environment")


def test_a_task_without_a_recipe_is_skipped_with_its_reason_by_the_probes_that_need_one(tmp_path):
    pack = _pack(tmp_path)
    reason = pack.recipe_problem(pack.task(NO_RECIPE))
    assert reason and "astropy 1.3" in reason and pack.recipe_problem(pack.task(WITH_RECIPE)) is None
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    probes = list(load_probes().values())
    assert from_sources(pack, pack.task(NO_RECIPE)) is None  # no mirror, no recipe: no base code (it once raised)
    ctx = AuditContext(pack, base_code=base_code_provider(pack), log=lambda line: None)  # as `audit --no-docker`
    lines = []
    done = Auditor(pack, store, ctx, probes, out_dir=tmp_path / "audits",
                   investigator=Investigator(_never, seeds=2)).run([pack.task(NO_RECIPE)], log=lines.append)
    found = {(f.probe, f.seed): f for f in done[NO_RECIPE]}
    needing = {p.name for p in probes if needs_environment(p)}
    assert {"validity", "mutants"} <= needing and not needing & {"leak", "strict_literals", "underspecified"}
    for (probe, seed), finding in found.items():
        if probe in needing or probe == "investigator":
            assert finding.status == "skipped" and reason in finding.reason, (probe, finding.reason)
            assert finding.evidence["no_environment"] == reason
        else:
            assert "no_environment" not in finding.evidence, probe
    assert {s for p, s in found if p == "investigator"} == {0, 1}
    assert {f.family for (p, _), f in found.items() if p == "investigator"} == {None}  # it names no family
    assert found[("leak", 0)].status == "ok" and found[("strict_literals", 0)].status == "ok"
    assert "no environment, so investigator, mutants, validity skipped: SWE-bench builds astropy 1.3" in lines[0]
    results = audit_results([t.instance_id for t in pack.tasks], store.findings(pack.name), [])
    assert results["no_environment"] == {NO_RECIPE: reason} and results["per_task"][NO_RECIPE]["audited"]
    assert "tasks without an environment" in render_audit(results, "table")


def test_a_task_with_a_recipe_is_not_skipped_for_want_of_one(tmp_path):
    pack = _pack(tmp_path)
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    ctx = AuditContext(pack, log=lambda line: None)
    done = Auditor(pack, store, ctx, list(load_probes().values()), out_dir=tmp_path / "audits").run(
        [pack.task(WITH_RECIPE)], log=lambda line: None)
    validity = next(f for f in done[WITH_RECIPE] if f.probe == "validity")
    assert validity.status == "skipped" and "no_environment" not in validity.evidence  # it asks for validation


def test_exclude_leaves_tasks_out_of_the_audit_and_an_unknown_id_is_an_error(tmp_path):
    _pack(tmp_path)
    (tmp_path / "skip.txt").write_text(f"# tasks we do not audit\n{WITH_RECIPE}  # no reason\n")
    done = run_cli("audit", "pack", "--no-docker", "--probe", "leak", "--exclude-from", "skip.txt", cwd=tmp_path)
    assert "auditing 1 task(s)" in done.stderr and NO_RECIPE in done.stderr and WITH_RECIPE not in done.stderr
    audit = json.loads((tmp_path / "audits" / "pack" / "audit.json").read_text())
    assert audit["tasks"] == 1 and list(audit["per_task"]) == [NO_RECIPE]
    both = run_cli("audit", "pack", "--no-docker", "--probe", "leak", "--exclude", NO_RECIPE, "--exclude", WITH_RECIPE,
                   cwd=tmp_path)
    assert "auditing 0 task(s)" in both.stderr
    bad = run_cli("audit", "pack", "--no-docker", "--exclude", "nope", cwd=tmp_path, check=False)
    assert bad.returncode == 1 and "cannot exclude nope" in bad.stderr
    report = run_cli("audit", "report", "pack", "--format", "json", "--exclude", WITH_RECIPE, cwd=tmp_path)
    assert json.loads(report.stdout)["tasks"] == 1
