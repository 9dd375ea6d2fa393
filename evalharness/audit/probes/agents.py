"""The ``agents`` probe: real agents' patches with their official verdicts (``audit --agent-preds FILE``).

Rule registered before its agreement with human labels was computed (docs/audit-probes-vs-labels.md): a task
some agent resolved is not flagged; a task where a failing agent patch changes every code region the gold patch
changes (a near miss) is flagged overly_strict at severity 2; otherwise not flagged. Without predictions of the
task (a patch and a true/false verdict): skipped.
"""

from __future__ import annotations

from evalharness.audit.agentpreds import near_misses
from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.probes import register
from evalharness.types import TaskSpec

GIVE_PREDS = "no agents' predictions: give --agent-preds FILE (JSONL: instance_id, model_patch, resolved)"
SEVERITY = 2


class AgentsProbe:
    name = "agents"
    family = "overly_strict"
    version = 1
    needs = "predictions"
    rule = (
        "Reads real agents' predictions with their official verdicts (--agent-preds FILE: JSONL of instance_id, "
        "model_patch, resolved or official_resolved). A task some agent resolved is not flagged: the tests accept "
        "a fix written from the statement. A task where a failing prediction changes every code region the gold "
        "patch changes (a region: a file and the innermost def/class around the changed base lines, from the code "
        "at base; the whole file without it or outside Python) is flagged overly_strict at severity 2, a near miss "
        "whose rejection is a correct alternative refused when the patch is right, a wrong fix when it is not: a "
        "reader decides. Otherwise not flagged. No prediction of the task with a patch and a true/false verdict: "
        "skipped. Registered before it was scored against labels (docs/audit-probes-vs-labels.md).")

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        if ctx.predictions is None:
            return self._finding(task, [], flagged=False, status="skipped", reason=GIVE_PREDS)
        preds = [p for p in ctx.predictions.get(task.instance_id, []) if p.usable]
        if not preds:
            return self._finding(task, [], flagged=False, status="skipped",
                                 reason="no prediction of this task with a patch and an official verdict")
        solved = sorted({p.agent for p in preds if p.resolved})
        if solved:
            return self._finding(task, preds, flagged=False, evidence={"resolved_by": solved},
                                 reason=f"resolved by {', '.join(solved)}: the tests accept an agent's fix")
        base = ctx.base_code(task)
        read = base.read if base is not None else (lambda path: None)
        hits, gold = near_misses(task.patch, preds, read)
        evidence = {"gold_regions": gold, "near_misses": hits, "failed": sorted({p.agent for p in preds}),
                    "base_code": base is not None}
        if hits:
            agents = ", ".join(sorted({h["agent"] for h in hits}))
            return self._finding(task, preds, flagged=True, severity=SEVERITY, evidence=evidence,
                                 reason=f"{agents} changed every region the gold patch changes ({', '.join(gold)}) "
                                        f"and was not resolved: a correct alternative refused, or a wrong fix")
        return self._finding(task, preds, flagged=False, evidence=evidence,
                             reason=f"{len(preds)} failing prediction(s), none changes every gold region "
                                    f"({', '.join(gold) or 'none readable'})")

    def _finding(self, task: TaskSpec, preds: list, *, flagged: bool, reason: str, severity: int = 0,
                 status: str = "ok", evidence: dict | None = None) -> Finding:
        key = sorted((p.agent, p.patch, p.resolved) for p in preds)
        return Finding(task.instance_id, self.name, self.family, flagged, severity, reason, evidence or {}, status,
                       inputs_hash=inputs_hash(self.name, self.version, task.instance_id, key))


PROBE = register(AgentsProbe())
