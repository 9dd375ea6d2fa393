"""Run the matrix tasks x harnesses x models x seeds with bounded concurrency, resumably.

Each trial is recorded once. Infrastructure failures are retried with backoff and, if they
persist, recorded as their own outcome (never as agent failures); a resume retries them.
A SIGKILL at any moment loses only the trials in flight; Ctrl-C removes every container.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shutil
import signal
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Callable

from evalharness.errors import UserError
from evalharness.executors import ExecutorSpec, Finished, open_executor
from evalharness.executors.work import with_failed_attempts
from evalharness.grading.parsers import check_names
from evalharness.liveness import HEARTBEAT_S, run_status, this_host
from evalharness.packs import Pack, load_pack
from evalharness.rundir import git_revision, trial_dir, write_json, write_trial
from evalharness.runconfig import RunConfig, matrix as _matrix
from evalharness.store import Store, check_labels, database_url
from evalharness.trial import Trial, TrialOutput, trial_files
from evalharness.types import Outcome

__all__ = ["RunConfig", "RunSummary", "run", "new_run_id", "exit_code", "EXIT_OK", "EXIT_TASK_ERRORS",
           "EXIT_INFRA", "EXIT_NEVER_WORKED", "EXIT_INTERRUPTED", "never_worked", "with_failed_attempts",
           "ExecutorSpec"]

EXIT_OK, EXIT_TASK_ERRORS, EXIT_INFRA, EXIT_NEVER_WORKED, EXIT_INTERRUPTED = 0, 1, 3, 4, 130
"""Exit codes of `evalharness run`: all recorded cleanly / task errors (or user errors) / infrastructure
failures remained / a configuration whose every trial is harness_error / interrupted."""


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
    """(trial id, reason) of every trial of the run stored as a task error or a verifier error (a Harbor verifier
    that gave no valid reward), after this session: the run exits 1."""
    infra_remaining: int = 0
    """Trials of the run stored as infrastructure failures, or not stored at all, after this session."""
    nodes: dict[str, int] = field(default_factory=dict)
    """Trials recorded in this session per node (engine or Ray node) that ran them."""
    unclean: list[str] = field(default_factory=list)
    """Engines where the run's containers could not be removed at the end (gone or unreachable)."""
    never_worked: dict[str, str] = field(default_factory=dict)
    """Configurations (``harness/model``) whose every trial of the run is ``harness_error``, with one trial's
    error: the harness never worked (a wrong model name, a refused key, a script that matches nothing)."""

    @property
    def exit_code(self) -> int:
        return exit_code(task_errors=len(self.task_errors), infra=self.infra_remaining, interrupted=self.interrupted,
                         never_worked=len(self.never_worked))


def exit_code(*, task_errors: int, infra: int, interrupted: bool, never_worked: int = 0) -> int:
    """0 clean, 1 task or verifier errors (they need a fix of the pack, so they win), 3 infrastructure failures,
    4 a configuration whose every trial is harness_error (recorded and counted in its rate, but most likely a
    configuration mistake, which a cron job must hear about), 130 interrupted."""
    if interrupted:
        return EXIT_INTERRUPTED
    if task_errors:
        return EXIT_TASK_ERRORS
    if infra:
        return EXIT_INFRA
    return EXIT_NEVER_WORKED if never_worked else EXIT_OK


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


def run(config: RunConfig | None = None, *, resume: str | None = None, runs_dir: Path = Path("runs"),
        db: str | None = None, progress: Progress | None = None, ca_bundle: Path | None = None,
        run_id: str | None = None, name: str | None = None, tags: dict[str, str] | None = None,
        executor: ExecutorSpec | None = None) -> RunSummary:
    """Run (or resume) a run and return its summary. Ctrl-C raises KeyboardInterrupt after cleanup.

    ``ca_bundle`` is copied into images it builds (default: the host's bundle when present).
    ``run_id`` names a new run (default: a fresh one), for callers that put files in its folder first.
    ``name`` and ``tags`` label a new run in the store (``Store.find_runs``); a resume keeps the run's own,
    and refuses different ones. ``executor`` says where trials run (default: threads on the local engine);
    wherever they run, only this process records them.
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
    # every engine must answer before a new run is stored; on a resume the executor first removes the containers
    # a killed runner left on each engine (its half-written folders are removed below)
    engines = open_executor(executor or ExecutorSpec(), run_id=run_id, pack=pack, config=config, resume=bool(resume),
                            ca_bundle=ca_bundle, log=lambda m: progress("log", {"message": m}))
    store = Store(store_url)
    run_dir = runs_dir / run_id
    if not resume:
        snapshot = _snapshot(config, pack, trials)
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(run_dir / "manifest.json", {"run_id": run_id, "name": name, "tags": tags or {}, **snapshot})
        store.create_run(run_id, pack=pack.name, pack_hash=pack.content_hash, version=_versions().get("evalharness", "?"),
                         git_commit=snapshot["revision"]["commit"], config=snapshot, name=name, tags=tags)
    if resume:
        for stale in run_dir.glob("**/*.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)
    done = store.done_trials(run_id)
    todo = [t for t in trials if t.trial_id(pack.name) not in done]
    summary = RunSummary(run_id, run_dir, total=len(trials), skipped=len(trials) - len(todo))
    progress("start", {"run_id": run_id, "total": len(trials), "todo": len(todo), "skipped": summary.skipped,
                       "executor": engines.name})
    store.set_runner(run_id, host=this_host(), pid=os.getpid())
    stop_heartbeat = _start_heartbeat(store, run_id)
    try:
        _execute(engines, store, pack, todo, run_dir, summary, progress)
    except KeyboardInterrupt:
        summary.interrupted = True
        store.set_status(run_id, "interrupted")
        raise
    except BaseException:
        store.set_status(run_id, "failed")
        raise
    finally:
        stop_heartbeat()
        summary.unclean = engines.close(run_id)
        summary.images_built = list(engines.images_built)
        for engine in summary.unclean:
            progress("log", {"message": f"warning: containers of run {run_id} may remain on {engine}: remove them "
                                        f"with `evalharness sandbox gc --run-id {run_id} --docker-host URL` once it answers"})
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
                                 if r["outcome"] in (Outcome.TASK_ERROR.value, Outcome.VERIFIER_ERROR.value))
    summary.infra_remaining = sum(1 for r in rows.values() if r["infra"]) + len(expected - set(rows))
    summary.never_worked = never_worked(list(rows.values()))


def never_worked(rows: list[dict[str, Any]]) -> dict[str, str]:
    """``harness/model`` -> one trial's error, for each configuration whose every stored trial is harness_error."""
    by_config: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_config.setdefault(f"{r['harness']}/{r['model']}", []).append(r)
    return {config: next((r["reason"] for r in trials if r["reason"]), "no reason recorded")
            for config, trials in sorted(by_config.items())
            if all(r["outcome"] == Outcome.HARNESS_ERROR.value for r in trials)}


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


def _execute(engines, store: Store, pack: Pack, todo: list[Trial], run_dir: Path, summary: RunSummary,
             progress: Progress) -> None:
    """Hand ``todo`` to the executor and record each result as it comes back, once (the driver alone writes)."""
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if previous is not None:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    by_id = {t.trial_id(pack.name): t for t in todo}
    recorded: set[str] = set()

    def done(finished: Finished) -> None:
        trial = by_id.get(finished.trial_id)
        if trial is None or finished.out is None or finished.trial_id in recorded:
            if finished.trial_id in recorded:  # a rescheduled trial whose first placement came back after all
                progress("log", {"message": f"second result of {finished.trial_id} from {finished.node} ignored"})
            return
        recorded.add(finished.trial_id)
        _record(store, run_dir, summary.run_id, pack.name, trial, finished.out, finished.attempts, finished.node)
        outcome = finished.out.outcome.value
        summary.counts[outcome] = summary.counts.get(outcome, 0) + 1
        summary.nodes[finished.node] = summary.nodes.get(finished.node, 0) + 1
        progress("trial", {"trial": finished.trial_id, "outcome": outcome, "node": finished.node})

    try:
        engines.run(todo, done, stop)
    except BaseException:
        stop.set()
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def reward_columns(out: TrialOutput) -> dict[str, Any]:
    """The store's ``reward`` (a number, None for packs without one) and ``rewards`` (JSON of named rewards)."""
    if out.reward is None:
        return {}
    return {"reward": out.reward.get("reward"), "rewards": json.dumps(out.reward.get("rewards") or {}, sort_keys=True)}


def _record(store: Store, run_dir: Path, run_id: str, pack: str, trial: Trial, out: TrialOutput, attempts: int,
            node: str = "local") -> None:
    folder = trial_dir(run_dir, pack, trial.task.instance_id, trial.harness.name, trial.model_label, trial.seed)
    write_trial(folder, trial_files(trial, out, attempts, {"run_id": run_id, "node": node}))
    usage = out.agent.usage
    store.record_trial({
        "run_id": run_id, "trial_id": trial.trial_id(pack), "pack": pack, "task_id": trial.task.instance_id,
        "harness": trial.harness.name, "model": trial.model_label, "seed": trial.seed,
        "outcome": out.outcome.value, "resolved": out.outcome.resolved, "infra": out.outcome.is_infra,
        "reason": out.reason, "attempts": attempts, "cost_usd": usage.cost_usd,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens, "calls": usage.calls,
        "duration_s": (out.finished_at - out.started_at).total_seconds(), "started_at": out.started_at,
        "finished_at": out.finished_at, "repo": trial.task.repo or trial.task.metadata.get("repo", ""),
        "detail": str(folder.relative_to(run_dir.parent)), "flags": sorted(out.flags),
        **reward_columns(out),
    })
