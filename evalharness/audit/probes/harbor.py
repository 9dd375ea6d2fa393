"""The ``harbor_static`` probe: a Harbor task's static checks (``sources/harbor/checks/checks.py``) as one audit
finding.

Reads the task as published (its directory in the pack; no Docker): a defect is the task's even where the
pack's overlays mend it for evalharness's run; the evidence names the checks the overlays mend and any they
add (the task with them applied, ``build.harbor_task``, checked too). Every check's findings are kept in the evidence by check id, with their own severity and file:line evidence; the
finding is flagged when any check finds something, at the worst severity, in the family of the worst check
(``FAMILY``). The run-time half of ``validate-oracle`` / ``validate-nop`` is the ``validity`` probe's (the
pack's validation report, ``packs validate --run``).
"""

from __future__ import annotations

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.probes import register
from evalharness.types import TaskSpec

FAMILY = {"allow-internet": "environment", "dockerfile-platform": "environment", "gpu-request": "environment",
          "gpu-types": "environment", "pip-pinning": "environment", "trial-network-fetch": "environment",
          "instruction-timeout": "underspecified", "validate-nop": "too_weak_tests", "validate-oracle": "validity",
          "separate-verifier": "validity", "task-fields": "validity", "test-sh-sanity": "validity"}
"""Each check's defect family (``audit/findings.py``): what the task needs from its surroundings is environment;
a time limit the instruction misstates is underspecified; a no-op that passes is too-weak tests; the rest is
whether the task can be graded as written."""


class HarborStaticProbe:
    name = "harbor_static"
    family = "validity"
    version = 1
    needs = "task"
    kinds = ("harbor",)
    rule = (
        "Harbor tasks only: the static checks of `packs check-harbor` (the Terminal-Bench-3 template's rules: "
        "pinned installs, platform, GPUs, network per phase, separate verifier, test.sh sanity, verify-time "
        "downloads, reviewer metadata, the stated time limit, static hints that the oracle fails or the no-op "
        "passes) on the task as published; the checks the pack's overlays mend (or add) are named. Flags a task any check finds something in, at the "
        "worst check's severity and in its family; every check's findings are in the evidence with file:line. "
        "Whether the oracle truly fails or the no-op truly passes is the validity probe's (packs validate --run).")

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        from evalharness.sources.harbor.checks.checks import static_checks
        from evalharness.sources.harbor.model import HarborTask
        from evalharness.sources.harbor.run.build import harbor_task

        spec = ctx.pack.spec.harbor
        found = static_checks(HarborTask.load(ctx.pack.root / spec.tasks_dir / task.instance_id))
        overlays = _overlays(ctx.pack, task)
        as_run = static_checks(harbor_task(ctx.pack, task)) if overlays else found
        checks: dict[str, list[dict]] = {}
        for f in found:
            data = f.to_json()
            checks.setdefault(data.pop("check"), []).append(data)
        ran = {f.check for f in as_run}
        evidence = {"checks": checks, "overlays": overlays,
                    "mended_by_overlays": sorted(set(checks) - ran),
                    "added_by_overlays": sorted(ran - set(checks))}
        digest = inputs_hash(self.name, self.version, task.instance_id, ctx.pack.content_hash)
        if not found:
            return Finding(task.instance_id, self.name, self.family, False, 0, "no static check finds anything",
                           evidence, inputs_hash=digest)
        worst = found[0]  # static_checks sorts the most severe first
        reason = "; ".join(f"{f.check} ({f.severity}): {f.reason}" for f in found)
        if evidence["mended_by_overlays"]:
            reason += f" [the pack's overlays mend {', '.join(evidence['mended_by_overlays'])} in evalharness's run]"
        return Finding(task.instance_id, self.name, FAMILY.get(worst.check, self.family), True, worst.severity,
                       reason, evidence, inputs_hash=digest)


def _overlays(pack, task: TaskSpec) -> list[str]:
    folder = pack.spec.harbor.overlays
    where = pack.root / folder / task.instance_id if folder else None
    return sorted(p.name for p in where.glob("*.patch")) if where is not None and where.is_dir() else []


PROBE = register(HarborStaticProbe())
