"""The ``universal`` probe: a task that no stored configuration solves (where OpenAI's audit started).

Read from ``ctx.trials`` (the trials DataFrame of the runs given with ``--runs``). Hard is not broken: an
unsolved task is a candidate for a reader to look at, so the flag is severity 1 and the evidence is the
per-configuration counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.probes import register
from evalharness.types import TaskSpec

MIN_TRIALS = 5
MIN_CONFIGS = 2


@dataclass
class UniversalProbe:
    min_trials: int = MIN_TRIALS
    min_configs: int = MIN_CONFIGS
    name: str = "universal"
    family: str = "universal_failure"
    version: int = 1
    needs: str = "runs"
    kinds: tuple = ("tasks", "harbor")

    @property
    def rule(self) -> str:
        return (f"From the stored runs (--runs): infrastructure failures and task errors left out, as the statistics "
                f"layer does. Flags a task that no configuration (harness/model) resolves on any of its trials, "
                f"when it has at least {self.min_trials} such trials over at least {self.min_configs} "
                f"configurations: fewer cannot tell a hard task from bad luck (an agent solving 30% of the time "
                f"misses 5 trials in a row 17% of the time). Severity 1: an unsolved task is a candidate, not a "
                f"verdict (hard is not broken); the other probes or a reader say why. Skipped with no stored runs "
                f"or too few trials of the task.")

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        if ctx.trials is None:
            return self._finding(task, {}, flagged=False, status="skipped",
                                 reason="no stored runs: give --runs RUN_ID (one or more)")
        counts = per_config(ctx.trials, task.instance_id)
        trials = sum(c["trials"] for c in counts.values())
        solved = {config: c for config, c in counts.items() if c["resolved"]}
        evidence = {"per_config": counts, "trials": trials, "configs": len(counts),
                    "min_trials": self.min_trials, "min_configs": self.min_configs}
        if solved:
            best = max(solved, key=lambda k: solved[k]["resolved"] / solved[k]["trials"])
            return self._finding(task, evidence, flagged=False,
                                 reason=f"solved by {len(solved)}/{len(counts)} configuration(s), best {best} "
                                        f"{solved[best]['resolved']}/{solved[best]['trials']}")
        if trials < self.min_trials or len(counts) < self.min_configs:
            return self._finding(task, evidence, flagged=False, status="skipped",
                                 reason=f"unsolved but too few trials to say: {trials} trial(s) over {len(counts)} "
                                        f"configuration(s); needs {self.min_trials} over {self.min_configs}")
        return self._finding(task, evidence, flagged=True, severity=1,
                             reason=f"no configuration solves it: 0/{trials} trials over {len(counts)} "
                                    f"configurations ({', '.join(sorted(counts))}); a candidate, not a verdict")

    def _finding(self, task: TaskSpec, evidence: dict, *, flagged: bool, reason: str, severity: int = 0,
                 status: str = "ok") -> Finding:
        return Finding(task.instance_id, self.name, self.family, flagged, severity, reason, evidence, status,
                       inputs_hash=inputs_hash(self.name, self.version, self.min_trials, self.min_configs,
                                               task.instance_id, evidence.get("per_config")))


def per_config(trials, task_id: str) -> dict[str, dict[str, int]]:
    """Per configuration label: non-infrastructure trials of ``task_id`` and how many resolved (task errors out)."""
    from evalharness.stats._frame import config_labels, usable_trials

    rows = trials.loc[trials["task_id"].astype(str) == task_id]
    if rows.empty:
        return {}
    usable, _ = usable_trials(rows)
    if usable.empty:
        return {}
    labels = config_labels(usable)
    grouped = usable.assign(_config=labels).groupby("_config", sort=True)["_y"]
    return {str(config): {"trials": int(ys.count()), "resolved": int(ys.sum())} for config, ys in grouped}


PROBE = register(UniversalProbe())
