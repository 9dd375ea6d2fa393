"""``packs validate --run`` on a Harbor pack: the oracle and the no-op, each run N times through the Harbor trial.

Each run is a real trial (``trial.run_harbor_trial``: the agent's container, then a fresh verifier), so validation
sees exactly what ``evalharness run`` would. The verdict (``decide``, pure) comes from
``checks.validation_findings``: the oracle must reach reward 1 on every run, the no-op 0 on every run; a run with
no reward (a verifier failure, a tampered or timed-out trial) is undecided, never a 0. It is written with the
verdict names of ``validation`` (so ``invalid_reason`` makes a run skip the task, and the audit's ``validity``
probe reads it):

- ``ok``: oracle 1 and no-op 0 on every run;
- ``gold_fails``: an oracle run scored other than 1, was ``tampered`` (its solution changes a shared verifier's
  toolchain, which no honest agent may do here), or the task has no solution/solve.sh;
- ``empty_passes``: a no-op run scored other than 0 (its tests pass without any work);
- ``incomplete``: some run gave no reward and none scored wrong: nothing decided, validated again next time;
- ``env_build_failed`` / ``infra_error``: as for every pack.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from evalharness.errors import ImageBuildError, PrerequisiteError, SandboxError, TaskError
from evalharness.harness.registry import load_harness
from evalharness.sources.harbor.checks.checks import validation_findings
from evalharness.sources.harbor.importer import REWARD_TEST
from evalharness.sources.harbor.run.build import HarborImages, harbor_task
from evalharness.types import Outcome, TaskSpec
from evalharness.validation import SCHEMA, Log, task_hash, write_report

SIDES = ("oracle", "null")
VERDICT_OF = {"validate-oracle": "gold_fails", "validate-nop": "empty_passes"}
"""A check that found a wrong reward (severity 3) -> the verdict it gives the task."""


@dataclass
class HarborRun:
    """One validation trial: its outcome and the reward its verifier wrote (None: none was read)."""

    outcome: str
    reason: str
    reward: float | None
    seconds: float = 0.0
    rewards: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "reason": self.reason[:2000], "reward": self.reward,
                "rewards": self.rewards, "seconds": self.seconds}


def decide(oracle: list[HarborRun], null: list[HarborRun], *, has_solution: bool = True) -> tuple[str, str, list]:
    """(verdict, reason, findings as JSON) from the runs of each side (pure; see the module doc)."""
    findings = validation_findings([r.reward for r in oracle], [r.reward for r in null])
    as_json = [f.to_json() for f in findings]
    if not has_solution:
        return "gold_fails", "no solution/solve.sh: the oracle cannot run, so nothing shows the task can be solved", \
            as_json
    for check in ("validate-oracle", "validate-nop"):
        wrong = [f for f in findings if f.check == check and f.severity == 3]
        if wrong:
            return VERDICT_OF[check], f"{check}: {wrong[0].reason} ({_rewards(oracle, null)})", as_json
    tampered = [r for r in oracle if r.outcome == Outcome.TAMPERED.value]
    if tampered:  # the task's own solution cannot pass evalharness's rule: no honest agent can either
        return "gold_fails", ("the oracle's own run is tampered (its solution changes what the shared verifier "
                              f"runs: {tampered[0].reason[:200]}); give the task a separate verifier"), as_json
    if findings:
        runs = [r for r in [*oracle, *null] if r.reward is None]
        what = f"; first: {runs[0].outcome}: {runs[0].reason[:200]}" if runs else ""
        return "incomplete", "; ".join(f.reason for f in findings) + what, as_json
    return "ok", f"oracle reward 1 on {len(oracle)}/{len(oracle)} runs, no-op 0 on {len(null)}/{len(null)}", as_json


def _rewards(oracle: list[HarborRun], null: list[HarborRun]) -> str:
    def show(runs: list[HarborRun]) -> str:
        return ", ".join("none" if r.reward is None else f"{r.reward:g}" for r in runs)
    return f"oracle rewards {show(oracle)}; no-op rewards {show(null)}"


def reward_tests(oracle: list[HarborRun], null: list[HarborRun]) -> dict[str, dict]:
    """The reward as the one listed test (``harbor:reward``), in the shape ``validation.decide`` gives its tests:
    its status with no work (the no-op's first run) and its pass rate over the oracle's runs."""
    def status(run: HarborRun) -> str:
        return "missing" if run.reward is None else "passed" if run.reward == 1.0 else "failed"
    statuses = [status(r) for r in oracle]
    rate = sum(s == "passed" for s in statuses) / len(statuses) if statuses else None
    return {REWARD_TEST: {"list": "FAIL_TO_PASS", "base": status(null[0]) if null else None,
                          "gold_pass_rate": rate, "gold": statuses}}


@dataclass
class HarborValidator:
    """Validates tasks of a Harbor pack (``validation.validate_pack`` drives it as it does ``Validator``)."""

    pack: object  # evalharness.packs.Pack
    ctx: object  # evalharness.trial.TrialContext
    reruns: int = 3
    log: Log = print

    def validate(self, task: TaskSpec, **_) -> dict:
        started = time.monotonic()
        report: dict = {"schema": SCHEMA, "kind": "harbor", "instance_id": task.instance_id,
                        "task_hash": task_hash(self.pack, task), "environment": "harbor", "reruns": self.reruns}
        try:  # both images first: a task that cannot build is the task's verdict, never a crash mid-run
            images = HarborImages(self.ctx.images)
            report["image"] = images.environment(self.pack, task)
            report["verifier_image"] = images.verifier(self.pack, task)
        except TaskError as e:
            tail = getattr(e.__cause__, "log_tail", "") or ""
            return write_report(self.pack, task, {**report, "verdict": "env_build_failed", "reason": e.reason,
                                                  "build_log_tail": tail[-4000:]}, started)
        except ImageBuildError as e:
            verdict = "env_build_failed" if e.kind != "transient" else "infra_error"
            return write_report(self.pack, task, {**report, "verdict": verdict, "reason": e.reason or
                                                  str(e).splitlines()[0], "build_log_tail": e.log_tail[-4000:]}, started)
        try:
            runs = {side: [self._run(task, side, seed) for seed in range(self.reruns)] for side in SIDES}
        except (SandboxError, PrerequisiteError) as e:
            return write_report(self.pack, task, {**report, "verdict": "infra_error",
                                                  "reason": str(e).splitlines()[0] if str(e) else repr(e)}, started)
        has_solution = harbor_task(self.pack, task).solve_script is not None
        verdict, reason, findings = decide(runs["oracle"], runs["null"], has_solution=has_solution)
        report.update(verdict=verdict, reason=reason, findings=findings, tests=reward_tests(runs["oracle"], runs["null"]),
                      rewards={side: [r.reward for r in rs] for side, rs in runs.items()},
                      runs={"gold": [r.to_json() for r in runs["oracle"]],
                            "empty": runs["null"][0].to_json() if runs["null"] else None,
                            "null": [r.to_json() for r in runs["null"]]})
        return write_report(self.pack, task, report, started)

    def _run(self, task: TaskSpec, side: str, seed: int) -> HarborRun:
        """One trial of ``side``; an engine failure is tried once more, then raised (the task's infra_error)."""
        from evalharness.trial import Trial
        from evalharness.sources.harbor.run.trial import run_harbor_trial

        trial = Trial(task, load_harness(side), None, seed)
        t0 = time.monotonic()
        for attempt in range(2):
            try:
                out = run_harbor_trial(self.ctx, trial)
                break
            except SandboxError:
                if attempt == 1:
                    raise
        reward = out.reward or {}
        decided = out.outcome in (Outcome.RESOLVED, Outcome.UNRESOLVED)
        return HarborRun(out.outcome.value, out.reason, reward.get("reward") if decided else None,
                         round(time.monotonic() - t0, 1), dict(reward.get("rewards") or {}) if decided else {})
