"""The too-weak-tests probe: grade mutants of the gold patch with the task's tests (``docs/audit.md``).

Mutants (``audit/mutants.py``: dropped hunks, reverted changes, one file's part of the fix, AST mutations of
the added lines) are graded like any patch, with the task's FAIL_TO_PASS and PASS_TO_PASS, through
``ctx.validator``.

- A mutant is *killed* when a FAIL_TO_PASS test does not pass on it (a timeout or a test run that cannot
  run counts as killed); it *survives* otherwise; it is *accepted* when the whole grading resolves (every
  FAIL_TO_PASS and PASS_TO_PASS test passes). Mutants that do not apply are left out and counted.
- The mutation score is killed / (killed + survived).
- Flagged when the task's tests accept a mutant (every listed test passes on a wrong or incomplete fix).
  Severity 2 when a structural mutant (a hunk left out, a change reverted, only one file's part) is
  accepted, or at least two AST mutants are and they are at least a fifth of the graded mutants (the full
  lists' mutation score is under 0.8, the usual adequacy bar); severity 1 when a single wrong variant of
  the added lines passes (it may be an equivalent mutant: a candidate to read, not a verdict). Never 3:
  weak tests make a task easier, not unfair.
- Skipped without a validator, without the code at base, when the task's validation is not ok, when the gold
  patch does not resolve here, or when no mutant can be made. Engine failures are errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalharness.audit import mutants as gen
from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.probes import register
from evalharness.errors import ImageBuildError, SandboxError, TaskError
from evalharness.types import Outcome, TaskSpec

PASSING = ("passed", "xfail")
EXCLUDED = (Outcome.PATCH_APPLY_FAILED.value, Outcome.PATCH_REJECTED.value, Outcome.PATCH_TOO_LARGE.value)
ACCEPTED_SHARE = 0.2


def judge(task: TaskSpec, outcome: str, tests: dict[str, str], reason: str = "") -> dict:
    """One graded mutant: ``killed``/``survived``/``not_applied``, by which test, accepted or not (pure)."""
    if outcome in EXCLUDED:
        return {"result": "not_applied", "outcome": outcome, "reason": reason}
    failing = [t for t in task.FAIL_TO_PASS if tests.get(t) not in PASSING]
    if outcome in (Outcome.TESTS_TIMED_OUT.value, Outcome.TEST_RUN_ERROR.value) and not failing:
        failing = [f"({outcome})"]
    return {"result": "killed" if failing else "survived", "killed_by": failing[:5], "outcome": outcome,
            "accepted": outcome == Outcome.RESOLVED.value, "reason": reason}


def decide(graded: list[dict]) -> tuple[bool, int, str, float | None]:
    """(flagged, severity, reason, mutation score) from the graded mutants (``kind`` and ``judge`` fields)."""
    counted = [g for g in graded if g["result"] != "not_applied"]
    killed = sum(g["result"] == "killed" for g in counted)
    score = killed / len(counted) if counted else None
    accepted = [g for g in counted if g.get("accepted")]
    structural = [g for g in accepted if g["kind"] in gen.STRUCTURAL]
    share = len(accepted) / len(counted) if counted else 0.0
    flagged = bool(accepted)
    severity = 0 if not flagged else 2 if structural or (len(accepted) >= 2 and share >= ACCEPTED_SHARE) else 1
    summary = f"mutation score {killed}/{len(counted)}" if counted else "no mutant could be graded"
    if structural:
        reason = f"{summary}; the tests accept an incomplete fix: {structural[0]['description']}"
    elif flagged:
        reason = (f"{summary}; {len(accepted)} wrong variant(s) of the added lines pass every listed test: "
                  f"{accepted[0]['description']}")
    else:
        reason = f"{summary}; {len(accepted)} accepted"
    return flagged, severity, reason, score


@dataclass
class MutantsProbe:
    cap: int = gen.DEFAULT_CAP
    """At most this many mutants per task (each is one grading run)."""
    seed: int = 0
    name: str = "mutants"
    family: str = "too_weak_tests"
    version: int = 3
    needs: str = "docker"
    rule: str = ("Mutants of the gold patch (a hunk left out, a change inside a hunk reverted, one file's part of "
                 "the fix, AST mutations of the added lines) are graded with FAIL_TO_PASS and PASS_TO_PASS; "
                 "mutation score = killed / graded. "
                 "Flagged when a mutant passes every listed test; severity 2 when it is a partial fix (a hunk, "
                 "a change or a file left out) or when at least two AST mutants (a fifth of the graded) pass, "
                 "else 1.")

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        digest = inputs_hash(self.name, self.version, self.cap, self.seed, task.patch, task.test_patch,
                             list(task.FAIL_TO_PASS), list(task.PASS_TO_PASS))
        base = dict(task_id=task.instance_id, probe=self.name, family=self.family, inputs_hash=digest)
        missing = self._missing(task, ctx)
        if missing:
            return Finding(**base, flagged=False, status="skipped", reason=missing,
                           evidence={"cap": self.cap, "seed": self.seed})
        try:
            made, dropped = self._generate(task, ctx)
        except gen.PatchUnsupported as e:
            return Finding(**base, flagged=False, status="skipped", reason=f"no mutants: {e}")
        evidence = {"dropped": dict(dropped), "cap": self.cap, "seed": self.seed, "mutants": []}
        if not made:
            return Finding(**base, flagged=False, status="skipped", evidence=evidence,
                           reason=f"no mutant can be made of the gold patch (dropped: {dict(dropped)})")
        try:
            graded = self._grade_all(task, ctx, made, evidence)
        except (SandboxError, ImageBuildError, TaskError) as e:
            return Finding(**base, flagged=False, status="error", evidence=evidence,
                           reason=f"grading failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        if graded is None:
            return Finding(**base, flagged=False, status="skipped", evidence=evidence,
                           reason="the gold patch does not resolve in this environment")
        flagged, severity, reason, score = decide(graded)
        evidence.update(mutation_score=score, not_applied=sum(g["result"] == "not_applied" for g in graded))
        return Finding(**base, flagged=flagged, severity=severity, reason=reason, evidence=evidence)

    def _missing(self, task: TaskSpec, ctx: AuditContext) -> str:
        if ctx.validator is None:
            return "no validator: grading mutants needs Docker (audit with the engine running)"
        if not task.FAIL_TO_PASS:
            return "the task lists no FAIL_TO_PASS tests"
        report = ctx.validation(task)
        if report is not None and report.get("verdict") != "ok":
            return f"validation verdict is {report.get('verdict')}: mutants of a task that does not work say nothing"
        return ""

    def _generate(self, task: TaskSpec, ctx: AuditContext):
        code = ctx.base_code(task)
        if code is None:
            raise gen.PatchUnsupported("the code at base cannot be read here")
        files = gen.parse_patch(task.patch)
        base = {p: code.read(p) for f in files for p in {f.path, f.old_path} if p}
        return gen.generate(task.patch, base, cap=self.cap, seed=f"{self.seed}:{task.instance_id}")

    def _grade_all(self, task: TaskSpec, ctx: AuditContext, made: list, evidence: dict) -> list[dict] | None:
        validator = ctx.validator
        image = validator.images.task_image(ctx.pack, task)
        spec = ctx.pack.spec_for(task)
        report = ctx.validation(task)
        if report is None:
            control = validator._grade(image, spec, task, task.patch.encode())
            evidence["gold_control"] = control.outcome
            if control.outcome != Outcome.RESOLVED.value:
                return None
        graded = []
        for i, m in enumerate(made, 1):
            run = validator._grade(image, spec, task, m.patch.encode())
            if run.outcome in (Outcome.TASK_ERROR.value, Outcome.SANDBOX_ERROR.value, Outcome.INFRA_ERROR.value):
                raise SandboxError(f"mutant {i}: {run.outcome}: {run.reason}")
            g = {"kind": m.kind, "description": m.description, **judge(task, run.outcome, run.tests, run.reason),
                 "seconds": run.seconds, "change": m.change[:4000], "patch": m.patch[:8000]}
            graded.append(g)
            evidence["mutants"].append(g)
            ctx.log(f"{task.instance_id}: mutant {i}/{len(made)} {m.kind}: {g['result']}")
        return graded


PROBE = register(MutantsProbe())
