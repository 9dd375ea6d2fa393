"""`evalharness audit PACK`: run the probes (and investigators) over a pack's tasks, resumably.

For each task and probe the finding is stored (``Store.record_finding``) and written with its
evidence to ``<audits>/<pack>/findings/<task>.json``. A finding is kept on a resumed audit while
its ``inputs_hash`` (the task, the probe's name and version, and what the probe read: the stored
runs, the validation report, the investigator's configuration) still matches and it is not an
``error`` or ``skipped`` (a probe that had nothing to go on is cheap to ask again); everything else
runs again. A task without an environment (``Pack.recipe_problem``: no recipe for its repository and
version) is still read by the probes that need none (the statement, the patches, a mirror's base code);
those that need one (``needs_environment``: Docker probes, the investigator, validity) say ``skipped``
with the reason, kept in the evidence as ``no_environment``. A probe reads the kinds of pack its ``kinds``
names (SWE-style ``tasks`` without it); on another kind's task it says ``skipped`` with what it needs
(evidence ``pack_kind``): on a Harbor pack the patch and test-code probes and the investigator skip, while
``validity``, ``universal`` and ``harbor_static`` run. The task's findings file holds every stored finding of the task, not only this run's. A probe that raises is recorded as ``error`` with the
traceback (an audit never stops on one task) and the CLI exits 3 so the run can be repeated.
"""

from __future__ import annotations

import json
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.errors import SandboxError
from evalharness.types import TaskSpec

Investigate = Callable[[TaskSpec, AuditContext, list[int]], list[Finding]]
"""Runs the investigator on a task for the given seeds; one Finding per seed (probe ``investigator``)."""


@dataclass
class Investigator:
    run: Investigate
    seeds: int
    config: dict[str, Any] = field(default_factory=dict)
    """Harness and model settings: part of the findings' inputs hash."""


def needs_environment(probe) -> bool:
    """Does the probe's evidence come from the task's environment (its image, runs made in it)?"""
    return getattr(probe, "needs_environment", probe.needs in ("docker", "model"))


def _no_environment(task: TaskSpec, name: str, family: str | None, problem: str, seed: int = 0) -> Finding:
    return Finding(task.instance_id, name, family, False, status="skipped", seed=seed,
                   reason=f"the task has no environment: {problem}", evidence={"no_environment": problem},
                   inputs_hash=inputs_hash(name, "no_environment", task.model_dump(mode="json"), problem))


KIND_NEEDS = {"tasks": "a SWE-style task (a repository at a base commit, gold and test patches)",
              "harbor": "a Harbor task directory (task.toml, tests/test.sh)"}


def reads(probe, kind: str) -> bool:
    """Does the probe read tasks of a pack of this kind (``tasks`` or ``harbor``)? A probe says so in ``kinds``;
    without it, SWE-style tasks only."""
    return kind in getattr(probe, "kinds", ("tasks",))


def _other_kind(task: TaskSpec, name: str, family: str | None, kind: str, wants: str, seed: int = 0) -> Finding:
    return Finding(task.instance_id, name, family, False, status="skipped", seed=seed,
                   reason=f"{name} reads {KIND_NEEDS.get(wants, wants)}; this is a {kind} pack's task",
                   evidence={"pack_kind": kind},
                   inputs_hash=inputs_hash(name, "pack_kind", task.model_dump(mode="json"), kind))


def _context_key(needs: str, task: TaskSpec, ctx: AuditContext) -> Any:
    """What a probe reads beyond the task: changing it makes a resumed audit run the probe again."""
    if needs == "runs":
        if ctx.trials is None:
            return None
        rows = ctx.trials[ctx.trials["task_id"] == task.instance_id]
        if rows.empty:
            return None  # as without runs: nothing about this task was stored
        return sorted(rows[["run_id", "harness", "model", "seed", "outcome", "infra"]].astype(str)
                      .itertuples(index=False, name=None))
    if needs in ("task", "docker"):
        report = ctx.validation(task)
        key = None if report is None else [report.get("task_hash"), report.get("verdict")]
        return [key, ctx.validator is not None] if needs == "docker" else key
    if needs == "base":
        return ctx.base_code(task) is not None
    if needs == "predictions":
        if ctx.predictions is None:
            return None
        return sorted((p.agent, p.patch, p.resolved) for p in ctx.predictions.get(task.instance_id, []))
    return None


class Auditor:
    """Runs ``probes`` (and an optional investigator) over tasks; stores and writes every finding."""

    def __init__(self, pack, store, ctx: AuditContext, probes: Iterable, *, out_dir: Path,
                 investigator: Investigator | None = None, force: bool = False):
        self.pack, self.store, self.ctx, self.probes = pack, store, ctx, list(probes)
        self.out_dir, self.investigator, self.force = out_dir / pack.name, investigator, force
        self._stored = {(r["task_id"], r["probe"], r["seed"]): r for r in store.findings(pack.name)}
        self._lock = threading.Lock()

    def _current(self, task: TaskSpec, probe: str, seed: int, digest: str) -> Finding | None:
        row = self._stored.get((task.instance_id, probe, seed))
        if self.force or row is None or row["inputs_hash"] != digest or row["status"] in ("error", "skipped"):
            return None
        return Finding.from_json(row)

    def _probe(self, probe, task: TaskSpec) -> tuple[Finding, bool]:
        kind = self.pack.spec.kind
        if not reads(probe, kind):
            wants = next(k for k in KIND_NEEDS if reads(probe, k)) if any(reads(probe, k) for k in KIND_NEEDS) \
                else "another kind of task"
            return _other_kind(task, probe.name, probe.family, kind, wants), True
        problem = self.pack.recipe_problem(task)
        if problem is not None and needs_environment(probe):
            return _no_environment(task, probe.name, probe.family, problem), True
        digest = inputs_hash(probe.name, probe.version, task.model_dump(mode="json"),
                             _context_key(probe.needs, task, self.ctx),
                             *([self.pack.content_hash] if kind == "harbor" else []))  # its task directory
        kept = self._current(task, probe.name, 0, digest)
        if kept is not None:
            return kept, False
        try:
            finding = probe.run(task, self.ctx)
        except SandboxError as e:
            finding = Finding(task.instance_id, probe.name, probe.family, False, status="error",
                              reason=f"the engine failed: {str(e).splitlines()[0] if str(e) else e!r}")
        except Exception as e:  # a probe's bug must not stop the audit; it is loud in the finding and exit code
            finding = Finding(task.instance_id, probe.name, probe.family, False, status="error",
                              reason=f"probe {probe.name} raised {type(e).__name__}: {e}",
                              evidence={"traceback": traceback.format_exc()[-4000:]})
        finding.inputs_hash = digest
        return finding, True

    def _investigate(self, task: TaskSpec) -> list[tuple[Finding, bool]]:
        inv = self.investigator
        if self.pack.spec.kind != "tasks":
            return [(_other_kind(task, "investigator", None, self.pack.spec.kind, "tasks", s), True)
                    for s in range(inv.seeds)]
        problem = self.pack.recipe_problem(task)
        if problem is not None:
            return [(_no_environment(task, "investigator", None, problem, s), True)
                    for s in range(inv.seeds)]
        digest = inputs_hash("investigator", inv.config, task.model_dump(mode="json"))
        self._forget_stale_seeds(task, digest, inv.seeds)
        out, todo = [], []
        for seed in range(inv.seeds):
            kept = self._current(task, "investigator", seed, digest)
            if kept is not None:
                out.append((kept, False))
            else:
                todo.append(seed)
        if todo:
            try:
                fresh = inv.run(task, self.ctx, todo)
            except SandboxError as e:
                fresh = [Finding(task.instance_id, "investigator", None, False, status="error", seed=s,
                                 reason=f"the engine failed: {e}") for s in todo]
            for finding in fresh:
                finding.inputs_hash = digest
                out.append((finding, True))
        if out and any(fresh for _, fresh in out):
            from evalharness.audit.verdicts import ensemble

            combined = ensemble([f for f, _ in out])  # seed ENSEMBLE_SEED (-1): most severe wins, agreement kept
            combined.inputs_hash = digest
            out.append((combined, True))
        elif out:
            kept = self._stored.get((task.instance_id, "investigator", -1))
            if kept is not None:
                out.append((Finding.from_json(kept), False))
        return out

    def _forget_stale_seeds(self, task: TaskSpec, digest: str, seeds: int) -> None:
        """Stored seeds outside ``range(seeds)`` made with another configuration (an older investigator numbered
        its seeds from 1) would keep flagging the task beside the current ones: they are removed. A seed made
        with this configuration (an earlier, larger --seeds) is kept."""
        for (task_id, probe, seed), row in list(self._stored.items()):
            if (task_id == task.instance_id and probe == "investigator" and seed >= seeds
                    and row["inputs_hash"] != digest):
                self.store.forget_finding(self.pack.name, task_id, probe, seed)
                with self._lock:
                    del self._stored[(task_id, probe, seed)]

    def audit_task(self, task: TaskSpec) -> list[Finding]:
        results = [self._probe(p, task) for p in self.probes]
        if self.investigator is not None:
            results += self._investigate(task)
        for finding, fresh in results:
            if fresh:
                self.store.record_finding(self.pack.name, finding)
        findings = [f for f, _ in results]
        ran = {(f.probe, f.seed) for f in findings}
        others = [Finding.from_json(r) for (t, p, s), r in self._stored.items()
                  if t == task.instance_id and (p, s) not in ran]
        self._write(task, [*findings, *others])
        return findings

    def _write(self, task: TaskSpec, findings: list[Finding]) -> None:
        path = self.out_dir / "findings" / f"{task.instance_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"task_id": task.instance_id, "pack": self.pack.name,
                                   "findings": [f.to_json() for f in findings]}, indent=1, default=str) + "\n")
        tmp.replace(path)

    def run(self, tasks: list[TaskSpec], *, workers: int = 1, log: Callable[[str], None] = print) -> dict[str, list]:
        """Audit ``tasks``, ``workers`` at once, a line per task as it ends."""
        done: dict[str, list[Finding]] = {}
        pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eh-audit")
        try:
            futures = {pool.submit(self.audit_task, t): t for t in tasks}
            for future in as_completed(futures):
                task = futures[future]
                done[task.instance_id] = future.result()
                log(f"[{len(done)}/{len(tasks)}] {task.instance_id}: {summary_line(done[task.instance_id])}")
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        return done


def summary_line(findings: list[Finding]) -> str:
    flagged = [f"{f.probe}{' ensemble' if f.seed < 0 else '#' + str(f.seed) if f.probe == 'investigator' else ''} "
               f"({f.family}, severity {f.severity})" for f in findings if f.flagged]
    other = {s: sum(f.status == s for f in findings) for s in ("skipped", "error", "invalid")}
    tail = ", ".join(f"{n} {s}" for s, n in other.items() if n)
    head = ("flagged by " + "; ".join(flagged)) if flagged else "no probe flags it"
    missing = next((f.evidence["no_environment"] for f in findings if f.evidence.get("no_environment")), "")
    if missing:
        skipped = sorted({f.probe for f in findings if f.evidence.get("no_environment")})
        tail += f"; no environment, so {', '.join(skipped)} skipped: {missing[:160]}"
    return head + (f" [{tail}]" if tail else "")
