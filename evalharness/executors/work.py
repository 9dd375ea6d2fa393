"""What a worker does with one trial, wherever it runs: the task check, the attempt, the retries.

A worker never writes the store or the run folder: it returns a ``Finished`` to the driver, which
records it (runner._record) exactly once. The same code runs in the local thread pool, in a thread
per remote Docker host and in a Ray actor on another node; only the engine (``NodeContext.client``) differs.
"""

from __future__ import annotations

import dataclasses
import threading
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable

import docker

from evalharness.errors import ImageBuildError, PrerequisiteError, SandboxError, TaskError
from evalharness.packs import Pack
from evalharness.runconfig import RunConfig
from evalharness.sandbox.base import Limits
from evalharness.sandbox.images import ImageBuilder
from evalharness.taskcheck import CheckCache, TaskChecker, default_cache_dir
from evalharness.trial import Trial, TrialContext, TrialOutput, run_trial, unknown_usage
from evalharness.types import AgentResult, Outcome, TaskSpec, Usage

__all__ = ["Finished", "NodeContext", "open_node", "attempt", "with_failed_attempts", "limits_of"]


@dataclass
class Finished:
    """One trial's result on its way to the driver. ``out`` is None when the run was stopped mid-trial."""

    trial_id: str
    out: TrialOutput | None
    attempts: int
    node: str = "local"
    """Where it ran: ``local``, a Docker host's URL, or a Ray node (its id and address)."""


@dataclass
class NodeContext:
    """What the trials one engine runs share: the trial context (engine, image builder) and the task checker."""

    ctx: TrialContext
    checker: TaskChecker
    node: str = "local"
    engine: str = ""
    """The engine's address as this node sees it (``unix:///var/run/docker.sock``, ``tcp://...``)."""
    built: list[str] = field(default_factory=list)


def limits_of(config: RunConfig) -> Limits:
    return Limits(cpus=config.cpus, memory=config.memory, pids=config.pids, disk=config.disk, tmp=config.tmp_disk,
                  max_patch_bytes=int(config.max_patch_mb * 1024 * 1024))


def open_node(run_id: str, pack: Pack, config: RunConfig, client: docker.DockerClient, *,
              ca_bundle: Path | bytes | None = None, log: Callable[[str], None] | None = None, node: str = "local",
              engine: str = "", registry: str | None = None) -> NodeContext:
    """The context of one engine. Images are built on that engine on demand, each content-hashed tag once (or
    pulled from ``registry``, and pushed there once built)."""
    images = ImageBuilder(client, ca_bundle=ca_bundle, log=log, registry=registry)
    limits = limits_of(config)
    ctx = TrialContext(run_id, pack, client, images, config.budget, limits)
    checker = TaskChecker(client, pack, run_id, limits, task_image_of(pack, images),
                          include_invalid=config.include_invalid, cache=CheckCache(default_cache_dir()))
    return NodeContext(ctx, checker, node=node, engine=engine, built=images.built)


def task_image_of(pack: Pack, images: ImageBuilder) -> Callable[[TaskSpec], str]:
    """How the task checker builds a task's image: the pack's tiers, or a Harbor task's environment."""
    if pack.spec.kind == "harbor":
        from evalharness.sources.harbor.run.build import HarborImages
        return partial(HarborImages(images).environment, pack)
    return partial(images.task_image, pack)


def attempt(ctx: TrialContext, config: RunConfig, trial: Trial, stop: threading.Event,
            checker: TaskChecker) -> tuple[TrialOutput | None, int]:
    """Run ``trial`` until it has an output: (output, attempts), or (None, attempts) when ``stop`` was set.

    Infrastructure failures (SandboxError, image builds included) are retried with backoff and, when they
    persist, become the trial's infrastructure outcome; a task error is never retried; a bug of ours is an
    infrastructure error, never the agent's failure. Failed attempts' spend is added to the output.
    """
    attempts, out = 0, None
    spent, failures = Usage(calls=0), []  # what failed attempts cost: added to the trial's record, never lost
    while out is None:
        if stop.is_set():
            return None, attempts
        attempts += 1
        try:
            checker.check(trial.task)  # once per task image (cached on disk): it builds, its gold patches apply
            out = run_trial(ctx, trial)
        except TaskError as e:  # the task is broken: not the agent, not the machine; never retried
            out = infra_output(trial, Outcome.TASK_ERROR, e.reason, attempts)
        except SandboxError as e:  # image build failures are SandboxErrors too
            spent = spent + (getattr(e, "usage", None) or Usage())
            failures.append(f"attempt {attempts}: {type(e).__name__}: {str(e)[:500]}")
            if attempts <= config.infra_retries:
                if stop.wait(config.retry_backoff_s * 2 ** (attempts - 1)):
                    return None, attempts
                continue
            kind = Outcome.INFRA_ERROR if isinstance(e, ImageBuildError) else Outcome.SANDBOX_ERROR
            out = infra_output(trial, kind, f"{type(e).__name__}: {e}", attempts)
        except PrerequisiteError as e:  # this engine lacks something (a base image): the machine's, not retried here
            hint = f" ({e.hint})" if getattr(e, "hint", None) else ""
            out = infra_output(trial, Outcome.INFRA_ERROR, f"{e.message}{hint}", attempts)
        except Exception as e:  # a bug of ours, not the agent's: recorded apart, the run goes on
            out = infra_output(trial, Outcome.INFRA_ERROR, "internal error in evalharness: "
                               + "".join(traceback.format_exception(e))[-3000:], attempts)
    if stop.is_set():  # interrupted mid-trial: its result may be an artefact of the teardown; do not keep it
        return None, attempts
    return with_failed_attempts(out, spent, failures), attempts


def with_failed_attempts(out: TrialOutput, spent: Usage, failures: list[str]) -> TrialOutput:
    """``out`` billed for the attempts that failed before it, their errors in its log (pure)."""
    if not failures:
        return out
    usage = out.agent.usage + spent  # an unknown cost on either side stays unknown, never 0
    return dataclasses.replace(out, agent=out.agent.model_copy(update={"usage": usage}), log=[*failures, *out.log])


def infra_output(trial: Trial, kind: Outcome, reason: str, attempts: int) -> TrialOutput:
    """The output of a trial that ended without the agent's doing: a task error or an infrastructure failure."""
    now = datetime.now(timezone.utc)
    status = "task_error" if kind is Outcome.TASK_ERROR else "infra"
    return TrialOutput(kind, reason[:4000], AgentResult(exit_status=status, usage=unknown_usage(trial)), None, now,
                       now, log=[f"attempt {attempts}: {reason[:4000]}"])


def lost_output(trial: Trial, reason: str, attempts: int) -> TrialOutput:
    """A trial whose every placement was lost with its node: an infrastructure failure a resume retries."""
    return infra_output(trial, Outcome.SANDBOX_ERROR, reason, attempts)


def describe(trials: list[Trial], pack: str) -> dict[str, Trial]:
    """Trials by id (the id is what crosses to a remote worker; the worker rebuilds the trial from the matrix)."""
    return {t.trial_id(pack): t for t in trials}

