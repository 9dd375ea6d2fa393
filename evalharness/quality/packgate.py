"""The quality gate over an existing pack's tasks (``packs gate``), without mining again.

Per task: the pure checks (gold patch, statement: ``run_gate``) and, with coverage, the coverage checks
(``measure.coverage_for``, one Docker run per task). Coverage results are kept in ``PACK/gate/<id>.json`` with a
hash of the task, so a second run measures only tasks that changed or whose measurement failed (``--force``
measures all again). The report goes to ``PACK/gate-report.json``, rewritten after each task, so it is usable
while a long run goes on. ``tasks.jsonl`` is rewritten only when asked (``write_tasks``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evalharness.errors import HarnessError, ImageBuildError, SandboxError, TaskError
from evalharness.packs import Pack
from evalharness.quality import coverage as cov
from evalharness.quality.gate import DEFAULT, VERDICTS, Thresholds, run_gate
from evalharness.types import TaskSpec

SCHEMA = 1
REPORT = "gate-report.json"
CACHE_DIR = "gate"
Log = Callable[[str], None]


def task_hash(task: TaskSpec) -> str:
    """What a task's coverage depends on besides its environment: its patches, lists and base."""
    parts = [task.patch, task.test_patch, task.FAIL_TO_PASS, task.PASS_TO_PASS, task.base_commit, task.repo,
             task.version]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class Outcome:
    """One task's gate: its checks (pure and coverage), the coverage details, how long it took."""

    instance_id: str
    checks: list[dict]
    coverage: dict | None
    seconds: float = 0.0
    cached: bool = False
    error: str = ""
    """An engine or build failure: the coverage was not measured (not the task's verdict)."""

    @property
    def verdicts(self) -> list[str]:
        return [c["name"] for c in self.checks if not c["passed"]]

    @property
    def passed(self) -> bool:
        return not self.verdicts and not self.error

    def gate_json(self) -> dict:
        """``metadata.gate`` of the task: the mining gate's shape plus ``coverage``."""
        return {"passed": not self.verdicts, "checks": self.checks,
                **({"coverage": self.coverage} if self.coverage is not None else {})}

    def to_json(self) -> dict:
        return {"instance_id": self.instance_id, "passed": self.passed, "verdicts": self.verdicts,
                "reason": "; ".join(f"{c['name']}: {c['reason']}" for c in self.checks if not c["passed"])
                or self.error, "error": self.error, "seconds": self.seconds, "cached": self.cached,
                "gate": self.gate_json()}


def static_checks(pack: Pack, task: TaskSpec, thresholds: Thresholds) -> list[dict]:
    """The pure checks of the gold patch and the statement, as ``packs mine`` runs them."""
    from evalharness.sources.leak import names_tests_use

    gate = run_gate(task.problem_statement, task.patch, project=task.repo or pack.name,
                    names=names_tests_use(task.test_patch), squashed=int(task.metadata.get("squashed_messages", 0)),
                    pinned=(task.patch, task.test_patch) if task.patch and task.test_patch else None,
                    thresholds=thresholds)
    return gate.to_json()["checks"]


def _cached(pack: Pack, task: TaskSpec) -> dict | None:
    path = pack.root / CACHE_DIR / f"{task.instance_id}.json"
    try:
        saved = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return saved if saved.get("task_hash") == task_hash(task) else None


def _save(pack: Pack, task: TaskSpec, result: cov.CoverageResult) -> None:
    folder = pack.root / CACHE_DIR
    folder.mkdir(exist_ok=True)
    data = {"schema": SCHEMA, "task_hash": task_hash(task), "checks": [c.to_json() for c in result.checks],
            "details": result.details}
    _write_json(folder / f"{task.instance_id}.json", data)


def gate_task(pack: Pack, task: TaskSpec, validator, *, coverage: bool, force: bool = False,
              thresholds: Thresholds = DEFAULT) -> Outcome:
    """One task's gate (``validator`` runs the coverage measurement; None when ``coverage`` is off)."""
    started = time.monotonic()
    checks = static_checks(pack, task, thresholds)
    if not coverage:
        return Outcome(task.instance_id, checks, None, round(time.monotonic() - started, 1))
    saved = None if force else _cached(pack, task)
    if saved is not None and not any(c["name"] == "coverage_unmeasured" for c in saved["checks"]):
        return Outcome(task.instance_id, checks + saved["checks"], saved["details"],
                       round(time.monotonic() - started, 1), cached=True)
    from evalharness.quality.measure import coverage_for

    problem = pack.recipe_problem(task)
    if problem is not None:
        return Outcome(task.instance_id, checks, None, round(time.monotonic() - started, 1),
                       error=f"no environment: {problem[:300]}")
    try:
        result = coverage_for(validator, task, thresholds)
    except (TaskError, ImageBuildError) as e:
        reason = getattr(e, "reason", "") or str(e).splitlines()[0]
        return Outcome(task.instance_id, checks, None, round(time.monotonic() - started, 1),
                       error=f"image could not be built: {reason[:300]}")
    except (SandboxError, HarnessError) as e:
        return Outcome(task.instance_id, checks, None, round(time.monotonic() - started, 1),
                       error=f"engine: {str(e).splitlines()[0][:300]}")
    except Exception as e:  # noqa: BLE001  (one task's failure must not end a long run; the report names it)
        return Outcome(task.instance_id, checks, None, round(time.monotonic() - started, 1),
                       error=f"{type(e).__name__}: {str(e)[:300]}")
    _save(pack, task, result)
    return Outcome(task.instance_id, checks + [c.to_json() for c in result.checks], result.details,
                   round(time.monotonic() - started, 1))


def summary(entries: list[dict]) -> dict:
    """Totals over report entries (``Outcome.to_json``): tasks, passed, rejected, errors, rejections by verdict."""
    by = Counter(v for e in entries for v in e["verdicts"])
    return {"tasks": len(entries), "passed": sum(e["passed"] for e in entries),
            "rejected": sum(bool(e["verdicts"]) for e in entries), "errors": sum(bool(e["error"]) for e in entries),
            "by_verdict": {v: by[v] for v in [*VERDICTS, *cov.VERDICTS] if by.get(v)}}


def write_report(pack: Pack, outcomes: list[Outcome], *, coverage: bool, thresholds: Thresholds) -> dict:
    """``PACK/gate-report.json``: these outcomes, and the entries of an earlier report (same ``coverage``) for
    tasks of the pack not gated this time (``--task``), in the pack's order."""
    entries = {}
    try:
        old = json.loads((pack.root / REPORT).read_text())
        if old.get("coverage") == coverage:
            entries = {e["instance_id"]: e for e in old.get("tasks", [])}
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        pass
    entries.update({o.instance_id: o.to_json() for o in outcomes})
    ordered = [entries[t.instance_id] for t in pack.tasks if t.instance_id in entries]
    report = {"schema": SCHEMA, "pack": pack.name, "coverage": coverage, "thresholds": thresholds.__dict__,
              "totals": summary(ordered), "verdicts": {**VERDICTS, **cov.VERDICTS}, "tasks": ordered}
    _write_json(pack.root / REPORT, report)
    return report


def gate_pack(pack: Pack, tasks: list[TaskSpec], validator, *, coverage: bool, workers: int = 1,
              force: bool = False, thresholds: Thresholds = DEFAULT, log: Log = print) -> list[Outcome]:
    """Gate ``tasks``, a progress line per task as it ends; the report is rewritten after each."""
    done: dict[str, Outcome] = {}
    lock = threading.Lock()
    order = [t.instance_id for t in tasks]
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eh-gate")
    try:
        futures = {pool.submit(gate_task, pack, t, validator, coverage=coverage, force=force,
                               thresholds=thresholds): t for t in tasks}
        for future in as_completed(futures):
            outcome = future.result()
            with lock:
                done[outcome.instance_id] = outcome
                write_report(pack, [done[i] for i in order if i in done], coverage=coverage, thresholds=thresholds)
                line = ("passed" if outcome.passed else ", ".join(outcome.verdicts) or "error")
                extra = ""
                if outcome.coverage and outcome.coverage.get("measured"):
                    extra = f", covered {outcome.coverage['covered']}/{outcome.coverage['executable']}"
                why = outcome.to_json()["reason"]
                log(f"[{len(done)}/{len(tasks)}] {outcome.instance_id}: {line}{extra} ({outcome.seconds:.0f} s"
                    + (", cached" if outcome.cached else "") + ")" + (f": {why[:200]}" if why else ""))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [done[i] for i in order if i in done]


def table_lines(outcomes: list[Outcome]) -> list[str]:
    """The per-task table: id, gate, coverage (covered/executable changed lines, PASS_TO_PASS guards), reason."""
    rows = []
    for o in outcomes:
        c = o.coverage or {}
        measured = c.get("measured")
        rows.append([o.instance_id, "pass" if o.passed else ("error" if o.error else "REJECT"),
                     f"{c['covered']}/{c['executable']}" if measured else "-",
                     str(sum(g["count"] for g in c.get("p2p_guards", {}).values())) if measured else "-",
                     (o.to_json()["reason"] or "")[:100]])
    head = ["task", "gate", "f2p lines", "p2p guards", "reason"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[-1] for r in [head, *rows]]


def restamp_validation(pack: Pack, old: TaskSpec, new: TaskSpec) -> bool:
    """A current validation report of ``old`` made current for ``new``, a copy whose metadata alone changed (the
    gate's results: nothing validation ran depends on them), so runs and ``packs validate`` still find it.
    True when there was such a report."""
    from evalharness.validation import load_report, report_path, task_hash as validation_hash

    changed = {k for k in TaskSpec.model_fields if getattr(old, k) != getattr(new, k)}
    assert changed <= {"metadata"}, f"only metadata may change here, not {sorted(changed)}"
    report = load_report(pack, old)
    if report is None:
        return False
    report["task_hash"] = validation_hash(pack, new)
    _write_json(report_path(pack, new), report)
    return True


def write_tasks(pack: Pack, outcomes: list[Outcome], *, drop: bool) -> tuple[int, int]:
    """``tasks.jsonl`` with each gated task's ``metadata.gate`` replaced (and rejected tasks left out when
    ``drop``); the old file is kept as ``tasks.jsonl.bak``; validation reports stay current
    (``restamp_validation``). Returns (tasks kept, tasks dropped)."""
    path = pack.root / pack.spec.tasks
    by_id = {o.instance_id: o for o in outcomes}
    kept, dropped = [], 0
    for task in pack.tasks:
        outcome = by_id.get(task.instance_id)
        if outcome is not None and drop and outcome.verdicts:
            dropped += 1
            continue
        if outcome is not None and not outcome.error:
            new = task.model_copy(update={"metadata": {**task.metadata, "gate": outcome.gate_json()}})
            restamp_validation(pack, task, new)
            task = new
        kept.append(task)
    backup = path.with_name(path.name + ".bak")
    backup.write_bytes(path.read_bytes())
    path.write_text("".join(json.dumps(t.model_dump(mode="json", exclude_defaults=True), sort_keys=True) + "\n"
                            for t in kept))
    return len(kept), dropped


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
