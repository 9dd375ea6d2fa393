"""The ``validity`` probe: does the task work as its lists say? Read from its validation report.

The report is the shared one ``evalharness packs validate PACK --run`` writes (``validation.load_report``:
None when absent or stale). This probe runs nothing itself; it turns the verdict into a finding.
"""

from __future__ import annotations

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.probes import register
from evalharness.types import TaskSpec
from evalharness.validation import PASSING

VALIDATE_FIRST = "no current validation report: validate first: evalharness packs validate PACK --run"
SEVERITY = {"gold_fails": 3, "gold_does_not_apply": 3, "env_build_failed": 3, "flaky": 2}
"""Per flagged verdict; ``empty_passes`` is 3 when every FAIL_TO_PASS test passes at base (the empty patch
resolves the task), else 2."""


class ValidityProbe:
    name = "validity"
    family = "validity"
    version = 1
    needs = "task"
    kinds = ("tasks", "harbor")  # a Harbor pack's report: oracle and no-op rewards (sources/harbor/run/validate)
    needs_environment = True  # its report comes from runs in the task's environment
    rule = (
        "Reads the task's current validation report (packs validate --run: one empty-patch run, gold-patch "
        "reruns). Flags gold_fails (the reference fix does not resolve: severity 3), gold_does_not_apply (3), "
        "env_build_failed (3: validation already calls a transient build failure infra_error, so what is left, "
        "such as a pin that no longer resolves or a compile error, makes the task unsolvable as shipped), "
        "flaky (a listed test changes status between gold runs: 2, with per-test pass rates) and empty_passes "
        "(3 when every FAIL_TO_PASS test passes with no fix, so the empty patch resolves the task; 2 when only "
        "some do). ok is not flagged. No report (or a stale one): skipped, validate first. no_recipe: skipped "
        "(the pack declares the environment unsupported here; nothing was tested). infra_error: error (the "
        "machine failed; validate again).")

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        report = ctx.validation(task)
        if report is None:
            return self._finding(task, None, flagged=False, status="skipped", reason=VALIDATE_FIRST)
        verdict, why = report.get("verdict", ""), report.get("reason", "")
        evidence = _evidence(report)
        if verdict == "ok":
            return self._finding(task, report, flagged=False, reason=f"validation ok: {why}", evidence=evidence)
        if verdict == "no_recipe":
            return self._finding(task, report, flagged=False, status="skipped",
                                 reason=f"no environment recipe, nothing validated: {why}", evidence=evidence)
        if verdict == "infra_error":
            return self._finding(task, report, flagged=False, status="error",
                                 reason=f"validation hit an infrastructure error (validate again): {why}",
                                 evidence=evidence)
        if verdict == "empty_passes":
            return self._finding(task, report, flagged=True, severity=_empty_passes_severity(task, report),
                                 reason=f"empty_passes: {why}", evidence=evidence)
        if verdict in SEVERITY:
            return self._finding(task, report, flagged=True, severity=SEVERITY[verdict], reason=f"{verdict}: {why}",
                                 evidence=evidence)
        return self._finding(task, report, flagged=False, status="error",
                             reason=f"unknown validation verdict {verdict!r}", evidence=evidence)

    def _finding(self, task: TaskSpec, report: dict | None, *, flagged: bool, reason: str, severity: int = 0,
                 status: str = "ok", evidence: dict | None = None) -> Finding:
        key = (report or {}).get("task_hash"), (report or {}).get("verdict"), (report or {}).get("seconds")
        return Finding(task.instance_id, self.name, self.family, flagged, severity, reason, evidence or {}, status,
                       inputs_hash=inputs_hash(self.name, self.version, task.instance_id, key))


def _empty_passes_severity(task: TaskSpec, report: dict) -> int:
    tests = report.get("tests") or {}
    at_base = [(tests.get(name) or {}).get("base") in PASSING for name in task.FAIL_TO_PASS]
    return 3 if at_base and all(at_base) else 2


def _evidence(report: dict) -> dict:
    """What a reader needs: the verdict, the listed tests that did not behave (with rates), failed runs' tails."""
    tests = report.get("tests") or {}
    odd = {name: {k: t.get(k) for k in ("list", "base", "gold_pass_rate", "gold")} for name, t in tests.items()
           if t.get("gold_pass_rate") != 1.0 or (t.get("list") == "FAIL_TO_PASS" and t.get("base") in PASSING)}
    runs = report.get("runs") or {}
    tails = [r.get("output_tail", "")[-1500:] for r in runs.get("gold", []) if r.get("output_tail")]
    evidence = {"verdict": report.get("verdict"), "reason": report.get("reason"), "tests": odd,
                "gold_outcomes": [r.get("outcome") for r in runs.get("gold", [])],
                "empty_outcome": (runs.get("empty") or {}).get("outcome")}
    for key in ("cause", "build_log_tail", "environment", "reruns"):
        if report.get(key):
            evidence[key] = report[key] if key != "build_log_tail" else report[key][-1500:]
    if tails:
        evidence["gold_output_tail"] = tails[0]
    return evidence


PROBE = register(ValidityProbe())
