"""Run the matrix tasks x harnesses x models x seeds with bounded concurrency, resumably.

Each trial is recorded once. Infrastructure failures are retried with backoff and, if they
persist, recorded as their own outcome (never as agent failures); a resume retries them.
A SIGKILL at any moment loses only the trials in flight; Ctrl-C removes every container.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import secrets
import shutil
import signal
import threading
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalharness.errors import ConfigError, ImageBuildError, SandboxError, TaskError, UserError
from evalharness.grading.parsers import check_names
from evalharness.harness.registry import load_harness
from evalharness.liveness import HEARTBEAT_S, run_status, this_host
from evalharness.packs import Pack, load_pack
from evalharness.rundir import git_revision, trial_dir, write_json, write_trial
from evalharness.sandbox.base import Limits, parse_size
from evalharness.sandbox.docker import remove_labelled
from evalharness.sandbox.engine import docker_client
from evalharness.sandbox.images import ImageBuilder
from evalharness.store import Store, check_labels, database_url
from evalharness.taskcheck import TaskChecker
from evalharness.trial import Trial, TrialContext, TrialOutput, run_trial, trial_files, unknown_usage
from evalharness.types import AgentResult, Budget, ModelEndpoint, Outcome, Usage

__all__ = ["RunConfig", "RunSummary", "run", "new_run_id", "exit_code", "EXIT_OK", "EXIT_TASK_ERRORS",
           "EXIT_INFRA", "EXIT_INTERRUPTED"]

EXIT_OK, EXIT_TASK_ERRORS, EXIT_INFRA, EXIT_INTERRUPTED = 0, 1, 3, 130
"""Exit codes of `evalharness run`: all recorded cleanly / task errors (or user errors) / infrastructure
failures remained / interrupted."""


class RunConfig(BaseModel):
    """Everything that defines a run; stored as its snapshot (no secrets: keys are env var names)."""

    model_config = ConfigDict(extra="forbid")
    pack: str
    harnesses: list[str] = Field(min_length=1)
    models: list[ModelEndpoint] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: [0])
    workers: int = Field(default=2, gt=0)
    budget: Budget = Field(default_factory=Budget)
    cpus: float = Field(default=1.0, gt=0)
    memory: str = "2g"
    pids: int = Field(default=512, gt=0)
    disk: str = "2g"
    """Size of each sandbox's writable work tree (tmpfs); the root file system is read-only."""
    tmp_disk: str = "1g"
    """Size of each sandbox's /tmp."""
    max_patch_mb: float = Field(default=8.0, gt=0)
    include_invalid: bool = False
    """Run tasks whose validation report (packs validate --run) is not ok; by default they are task errors."""
    """A change larger than this is the outcome patch_too_large."""

    @field_validator("disk", "tmp_disk", "memory")
    @classmethod
    def _a_size(cls, value: str) -> str:
        if parse_size(value) <= 0:  # ValueError names the value and the expected form
            raise ValueError(f"must be more than 0 bytes (got {value!r}; a tmpfs of size 0 would have no limit)")
        return value
    infra_retries: int = Field(default=2, ge=0)
    retry_backoff_s: float = Field(default=2.0, ge=0)
    tasks: list[str] | None = None
    """Restrict the run to these task ids."""
    created_after: str | None = None
    """Only tasks created after this date or time (strict; a date is its whole UTC day: stats/cutoff.py)."""
    created_before: str | None = None
    """Only tasks created before this date or time (strict). Tasks without a created_at are left out by either."""

    @field_validator("created_after", "created_before")
    @classmethod
    def _a_date(cls, value: str | None) -> str | None:
        if value:
            from evalharness.stats.cutoff import parse_when

            try:
                parse_when(value)
            except UserError as e:
                raise ValueError(e.message) from None
        return value


@dataclass
class RunSummary:
    run_id: str
    run_dir: Path
    total: int
    skipped: int
    counts: dict[str, int] = field(default_factory=dict)
    images_built: list[str] = field(default_factory=list)
    interrupted: bool = False
    task_errors: list[tuple[str, str]] = field(default_factory=list)
    """(trial id, reason) of every trial of the run stored as a task error, after this session."""
    infra_remaining: int = 0
    """Trials of the run stored as infrastructure failures, or not stored at all, after this session."""

    @property
    def exit_code(self) -> int:
        return exit_code(task_errors=len(self.task_errors), infra=self.infra_remaining, interrupted=self.interrupted)


def exit_code(*, task_errors: int, infra: int, interrupted: bool) -> int:
    """0 clean, 1 task errors (they need a fix of the pack, so they win), 3 infrastructure failures, 130 interrupted."""
    if interrupted:
        return EXIT_INTERRUPTED
    if task_errors:
        return EXIT_TASK_ERRORS
    return EXIT_INFRA if infra else EXIT_OK


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


Progress = Callable[[str, dict[str, Any]], None]


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("evalharness", "docker", "litellm", "openai", "anthropic", "mini-swe-agent", "pandas", "scipy"):
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            pass
    return out


def _matrix(pack: Pack, config: RunConfig) -> list[Trial]:
    harnesses = [load_harness(name) for name in config.harnesses]
    names = [h.name for h in harnesses]
    if len(set(names)) != len(names):
        raise ConfigError(f"two harnesses share a name: {names}")
    labels = [m.label for m in config.models]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"a model is given twice: {labels}; give each --model once")
    tasks = pack.tasks
    if config.tasks:
        unknown = sorted(set(config.tasks) - {t.instance_id for t in tasks})
        if unknown:
            raise ConfigError(f"unknown task ids for pack {pack.name}: {', '.join(unknown)}")
        tasks = [t for t in tasks if t.instance_id in set(config.tasks)]
    if config.created_after or config.created_before:
        from evalharness.stats.cutoff import select_created

        kept = set(select_created({t.instance_id: t.created_at for t in tasks}, after=config.created_after,
                                  before=config.created_before).kept)
        tasks = [t for t in tasks if t.instance_id in kept]
        if not tasks:
            raise ConfigError(f"no task of pack {pack.name} was created in the window "
                              f"(after {config.created_after or '-'}, before {config.created_before or '-'})")
    trials = []
    for harness in harnesses:
        models: list[ModelEndpoint | None] = [None]
        if getattr(harness, "uses_model", True):
            if not config.models:
                raise ConfigError(f"harness {harness.name} needs a model: pass --model")
            models = list(config.models)
        covers = getattr(harness, "covers", None)  # optional: the (task, model) pairs it has work for
        for model in models:
            for task in tasks:
                if covers is None or covers(task, model):
                    trials += [Trial(task, harness, model, seed) for seed in config.seeds]
    return trials


def run(config: RunConfig | None = None, *, resume: str | None = None, runs_dir: Path = Path("runs"),
        db: str | None = None, progress: Progress | None = None, ca_bundle: Path | None = None,
        run_id: str | None = None, name: str | None = None, tags: dict[str, str] | None = None) -> RunSummary:
    """Run (or resume) a run and return its summary. Ctrl-C raises KeyboardInterrupt after cleanup.

    ``ca_bundle`` is copied into images it builds (default: the host's bundle when present).
    ``run_id`` names a new run (default: a fresh one), for callers that put files in its folder first.
    ``name`` and ``tags`` label a new run in the store (``Store.find_runs``); a resume keeps the run's own,
    and refuses different ones.
    """
    progress = progress or (lambda event, data: None)
    store_url = database_url(db or runs_dir / "evalharness.db")
    check_labels(name, tags)
    stored: dict[str, Any] = {}
    if resume:
        stored = Store(store_url).get_run(resume)
        _check_same_labels(stored, name, tags)
        if run_status(stored) == "running":
            raise UserError(f"run {resume} is still running (pid {stored['runner_pid']} on {stored['runner_host']})",
                            "a run has one runner at a time: wait for it to end, or stop it, then resume")
        config = RunConfig.model_validate(stored["config"]["run"])
        run_id = resume
    elif config is None:
        raise UserError("nothing to run: give a configuration or --resume RUN_ID")
    else:
        run_id = run_id or new_run_id()
    pack = load_pack(config.pack)
    check_names(pack.log_parsers(), f"task pack {config.pack}")
    if resume and pack.content_hash != stored["pack_hash"]:
        raise UserError(f"pack {config.pack} changed since run {run_id} started",
                        "resume only with the same pack content; start a new run otherwise")
    trials = _matrix(pack, config)
    if resume:
        _check_same_harnesses(trials, stored["config"].get("harnesses", {}), run_id)
    client = docker_client()
    store = Store(store_url)
    run_dir = runs_dir / run_id
    if not resume:
        snapshot = _snapshot(config, pack, trials)
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(run_dir / "manifest.json", {"run_id": run_id, "name": name, "tags": tags or {}, **snapshot})
        store.create_run(run_id, pack=pack.name, pack_hash=pack.content_hash, version=_versions().get("evalharness", "?"),
                         git_commit=snapshot["revision"]["commit"], config=snapshot, name=name, tags=tags)
    if resume:  # a killed runner leaves containers and half-written trial folders behind
        remove_labelled(client, run_id)
        for stale in run_dir.glob("**/*.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)
    done = store.done_trials(run_id)
    todo = [t for t in trials if t.trial_id(pack.name) not in done]
    summary = RunSummary(run_id, run_dir, total=len(trials), skipped=len(trials) - len(todo))
    ctx = TrialContext(run_id, pack, client, ImageBuilder(client, ca_bundle=ca_bundle, log=lambda m: progress("log", {"message": m})),
                       config.budget, Limits(cpus=config.cpus, memory=config.memory, pids=config.pids, disk=config.disk,
                              tmp=config.tmp_disk, max_patch_bytes=int(config.max_patch_mb * 1024 * 1024)))
    progress("start", {"run_id": run_id, "total": len(trials), "todo": len(todo), "skipped": summary.skipped})
    store.set_runner(run_id, host=this_host(), pid=os.getpid())
    checker = TaskChecker(client, pack, run_id, ctx.limits, partial(ctx.images.task_image, pack),
                          include_invalid=config.include_invalid)
    stop_heartbeat = _start_heartbeat(store, run_id)
    try:
        _execute(ctx, store, config, todo, run_dir, summary, progress, checker)
    except KeyboardInterrupt:
        summary.interrupted = True
        store.set_status(run_id, "interrupted")
        raise
    except BaseException:
        store.set_status(run_id, "failed")
        raise
    finally:
        stop_heartbeat()
        remove_labelled(client, run_id)
        summary.images_built = list(ctx.images.built)
    store.set_status(run_id, "completed")
    _tally(store, run_id, {t.trial_id(pack.name) for t in trials}, summary)
    return summary


def _start_heartbeat(store: Store, run_id: str) -> Callable[[], None]:
    """Refresh the run's heartbeat every HEARTBEAT_S seconds until the returned function is called."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            try:
                store.heartbeat(run_id)
            except Exception:  # noqa: BLE001 - a missed beat must not end the run; the next one may pass
                continue

    thread = threading.Thread(target=beat, name="eh-heartbeat", daemon=True)
    thread.start()
    return stop.set


def _tally(store: Store, run_id: str, expected: set[str], summary: RunSummary) -> None:
    """Task errors and remaining infrastructure failures of the whole run (earlier sessions included)."""
    rows = {r["trial_id"]: r for r in store.trial_rows([run_id]) if r["trial_id"] in expected}
    summary.task_errors = sorted((tid, r["reason"]) for tid, r in rows.items()
                                 if r["outcome"] == Outcome.TASK_ERROR.value)
    summary.infra_remaining = sum(1 for r in rows.values() if r["infra"]) + len(expected - set(rows))


def _check_same_labels(stored: dict[str, Any], name: str | None, tags: dict[str, str] | None) -> None:
    """A resume keeps the run's name and tags: giving them again is allowed only unchanged."""
    for what, given, kept in (("name", name, stored.get("name")), ("tags", tags, stored.get("tags") or {})):
        if given is not None and given != kept:
            raise UserError(f"run {stored['run_id']} has {_label_text(what, kept)}; a resume cannot change that "
                            f"(given: {_label_text(what, given)})",
                            f"resume without --{what.rstrip('s')}, or start a new run")


def _label_text(what: str, value: str | dict[str, str] | None) -> str:
    if not value:
        return f"no {what}"
    if isinstance(value, dict):
        return "tags " + ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    return f"name {value!r}"


def _check_same_harnesses(trials: list[Trial], stored: dict[str, Any], run_id: str) -> None:
    """A resumed run must use the harness configurations it started with, or one label would mix two."""
    now = {t.harness.name: t.harness.config() for t in trials}
    changed = sorted(name for name in now if json.dumps(now[name], sort_keys=True, default=str)
                     != json.dumps(stored.get(name), sort_keys=True, default=str))
    if changed:
        raise UserError(f"harness configuration changed since run {run_id} started: {', '.join(changed)}",
                        "resume with the same harness files (and from the same folder), or start a new run")


def _snapshot(config: RunConfig, pack: Pack, trials: list[Trial]) -> dict[str, Any]:
    harnesses = {t.harness.name: t.harness.config() for t in trials}
    return {"run": config.model_dump(mode="json"), "pack": {"name": pack.name, "version": pack.spec.version,
            "hash": pack.content_hash, "path": str(pack.root)}, "harnesses": harnesses, "versions": _versions(),
            "task_created_at": {t.task.instance_id: t.task.created_at for t in trials},
            "revision": git_revision(Path(__file__).resolve().parent), "host": platform.node(),
            "created_at": datetime.now(timezone.utc).isoformat()}


def _execute(ctx: TrialContext, store: Store, config: RunConfig, todo: list[Trial], run_dir: Path,
             summary: RunSummary, progress: Progress, checker: TaskChecker) -> None:
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if previous is not None:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    pool = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="eh-trial")
    try:
        futures: dict[Future, Trial] = {pool.submit(_trial_with_retries, ctx, store, config, t, run_dir, stop, checker): t
                                        for t in todo}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                outcome = future.result()
                summary.counts[outcome.value] = summary.counts.get(outcome.value, 0) + 1
                progress("trial", {"trial": futures[future].trial_id(ctx.pack.name), "outcome": outcome.value})
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        remove_labelled(ctx.client, ctx.run_id)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _trial_with_retries(ctx: TrialContext, store: Store, config: RunConfig, trial: Trial, run_dir: Path,
                        stop: threading.Event, checker: TaskChecker) -> Outcome:
    attempts, out = 0, None
    spent, failures = Usage(calls=0), []  # what failed attempts cost: added to the trial's record, never lost
    while out is None:
        if stop.is_set():
            return Outcome.SANDBOX_ERROR
        attempts += 1
        try:
            checker.check(trial.task)  # once per task per run: its image builds, its gold patches apply
            out = run_trial(ctx, trial)
        except TaskError as e:  # the task is broken: not the agent, not the machine; never retried
            out = _infra_output(trial, Outcome.TASK_ERROR, e.reason, attempts)
        except SandboxError as e:  # image build failures are SandboxErrors too
            spent = spent + (getattr(e, "usage", None) or Usage())
            failures.append(f"attempt {attempts}: {type(e).__name__}: {str(e)[:500]}")
            if attempts <= config.infra_retries:
                if stop.wait(config.retry_backoff_s * 2 ** (attempts - 1)):
                    return Outcome.SANDBOX_ERROR
                continue
            kind = Outcome.INFRA_ERROR if isinstance(e, ImageBuildError) else Outcome.SANDBOX_ERROR
            out = _infra_output(trial, kind, f"{type(e).__name__}: {e}", attempts)
        except Exception as e:  # a bug of ours, not the agent's: recorded apart, the run goes on
            out = _infra_output(trial, Outcome.INFRA_ERROR, "internal error in evalharness: "
                                + "".join(traceback.format_exception(e))[-3000:], attempts)
    if stop.is_set():  # interrupted mid-trial: its result may be an artefact of the teardown; do not keep it
        return out.outcome
    out = with_failed_attempts(out, spent, failures)
    _record(ctx, store, trial, out, attempts, run_dir)
    return out.outcome


def with_failed_attempts(out: TrialOutput, spent: Usage, failures: list[str]) -> TrialOutput:
    """``out`` billed for the attempts that failed before it, their errors in its log (pure)."""
    if not failures:
        return out
    usage = out.agent.usage + spent  # an unknown cost on either side stays unknown, never 0
    return dataclasses.replace(out, agent=out.agent.model_copy(update={"usage": usage}), log=[*failures, *out.log])


def _infra_output(trial: Trial, kind: Outcome, reason: str, attempts: int) -> TrialOutput:
    now = datetime.now(timezone.utc)
    status = "task_error" if kind is Outcome.TASK_ERROR else "infra"
    return TrialOutput(kind, reason[:4000], AgentResult(exit_status=status, usage=unknown_usage(trial)), None, now,
                       now, log=[f"attempt {attempts}: {reason[:4000]}"])


def _record(ctx: TrialContext, store: Store, trial: Trial, out: TrialOutput, attempts: int, run_dir: Path) -> None:
    pack = ctx.pack.name
    folder = trial_dir(run_dir, pack, trial.task.instance_id, trial.harness.name, trial.model_label, trial.seed)
    write_trial(folder, trial_files(trial, out, attempts, {"run_id": ctx.run_id}))
    usage = out.agent.usage
    store.record_trial({
        "run_id": ctx.run_id, "trial_id": trial.trial_id(pack), "pack": pack, "task_id": trial.task.instance_id,
        "harness": trial.harness.name, "model": trial.model_label, "seed": trial.seed,
        "outcome": out.outcome.value, "resolved": out.outcome.resolved, "infra": out.outcome.is_infra,
        "reason": out.reason, "attempts": attempts, "cost_usd": usage.cost_usd,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens, "calls": usage.calls,
        "duration_s": (out.finished_at - out.started_at).total_seconds(), "started_at": out.started_at,
        "finished_at": out.finished_at, "repo": trial.task.repo or trial.task.metadata.get("repo", ""),
        "detail": str(folder.relative_to(run_dir.parent)), "flags": sorted(out.flags),
    })
