"""One trial: start a sandbox, let the harness work, grade in a fresh sandbox, keep everything."""

from __future__ import annotations

import dataclasses
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import docker

from evalharness.errors import BudgetExhausted, EvalHarnessError, HarnessError, PrerequisiteError, SandboxError, TaskError
from evalharness.grading.extract import Extracted, extract_patch
from evalharness.grading.grade import GradeResult, grade
from evalharness.models.unavailable import MODEL_UNAVAILABLE, from_error
from evalharness.packs import Pack
from evalharness.sandbox.base import Limits
from evalharness.sandbox.docker import DockerSandbox
from evalharness.redact import REDACTED, redact, secrets_of
from evalharness.sandbox.images import ImageBuilder
from evalharness.sources.harbor.run.trial import run_harbor_trial
from evalharness.trajectory import document as trajectory_document
from evalharness.types import NO_MODEL, AgentResult, Budget, Flag, Harness, ModelEndpoint, Outcome, TaskSpec, Usage


@dataclass(frozen=True)
class Trial:
    """One task x harness x model x seed."""

    task: TaskSpec
    harness: Harness
    model: ModelEndpoint | None
    seed: int

    @property
    def model_label(self) -> str:
        return self.model.label if self.model else NO_MODEL

    def trial_id(self, pack: str) -> str:
        return f"{pack}/{self.task.instance_id}/{self.harness.name}/{self.model_label}/seed-{self.seed}"


@dataclass
class TrialContext:
    """What every trial of a run shares."""

    run_id: str
    pack: Pack
    client: docker.DockerClient
    images: ImageBuilder
    budget: Budget
    limits: Limits


@dataclass
class TrialOutput:
    outcome: Outcome
    reason: str
    agent: AgentResult
    grade: GradeResult | None
    started_at: datetime
    finished_at: datetime
    timings: dict[str, float] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    patch: bytes | None = None
    """The graded patch, byte for byte (patch.diff); None where none was derived."""
    """Flag values (evalharness.types.Flag) the trial carries; stored in result.json and the store."""
    suspicious: list[dict[str, Any]] = field(default_factory=list)
    """Suspicious added lines of the graded patch (``grading.suspicious.Finding.to_dict``, found by the grader:
    ``GradeResult.suspicious``); result.json's ``suspicious``."""
    reward: dict[str, Any] | None = None
    """A Harbor verifier's reward (``sources.harbor.run.reward.Reward.to_dict`` and the agent's changes); result.json's
    ``reward``; None for other packs."""
    files: dict[str, Any] = field(default_factory=dict)
    """Further files of the trial's folder (a Harbor verifier's output)."""


PATCH_APPLY_FAILED = Outcome.PATCH_APPLY_FAILED.value
"""The ``exit_status`` of a harness whose given patch does not apply (``predictions``): outcome patch_apply_failed,
nothing is graded, the patch it was given is kept in patch.diff."""


@dataclass(frozen=True)
class Ungraded:
    """A trial's outcome decided without a grading container, with its reason and flags."""

    outcome: Outcome
    reason: str
    flags: tuple[str, ...] = ()


EMPTY_CHANGE = "the agent's change is empty: nothing to grade, no grading container started"


def ungraded_outcome(extracted: Extracted | None, agent: AgentResult) -> Ungraded | None:
    """Pure: the outcome of a trial that needs no grading container, or None when its change must be graded.

    What ended the agent comes first and keeps its outcome: a budget, a harness error, a dead model endpoint
    (infrastructure), a given patch that did not apply. Then the change the grader derived (``extracted``, None
    when none was derived): over the cap or rejected is the agent's outcome; an empty change from an agent that
    finished is ``no_patch`` (the tests at base prove nothing about the agent: there is nothing to grade).
    """
    if agent.budget_exhausted:
        return Ungraded(Outcome.BUDGET_EXHAUSTED, f"budget exhausted: {agent.budget_exhausted}")
    if agent.exit_status == "error":
        return Ungraded(Outcome.HARNESS_ERROR, agent.error or "harness error")
    if agent.exit_status == MODEL_UNAVAILABLE:  # the endpoint failed, not the agent: infrastructure, not graded
        return Ungraded(Outcome.MODEL_UNAVAILABLE, agent.error or "model endpoint unavailable")
    if agent.exit_status == PATCH_APPLY_FAILED:  # a given patch (predictions) does not apply: the agent's outcome
        return Ungraded(Outcome.PATCH_APPLY_FAILED, agent.error or "the patch does not apply")
    if extracted is None:  # no change derived (never so for an agent that finished): graded as before
        return None
    if extracted.outcome is not None:  # the agent's own state: its outcome, never infra
        flag = Flag.PATCH_TOO_LARGE if extracted.outcome is Outcome.PATCH_TOO_LARGE else Flag.PATCH_REJECTED
        return Ungraded(extracted.outcome, extracted.reason, (flag.value,))
    if not extracted.patch.strip():
        return Ungraded(Outcome.NO_PATCH, EMPTY_CHANGE,
                        (Flag.TOUCHED_CONFIG.value,) if extracted.agent_git else ())
    return None


def _now() -> datetime:
    return datetime.now(timezone.utc)


def run_trial(ctx: TrialContext, trial: Trial) -> TrialOutput:
    """Run one attempt, secrets redacted. Raises SandboxError (incl. image build failures) for the caller to retry."""
    if ctx.pack.spec.kind == "harbor":  # a Harbor task: its own agent and verifier containers
        return redact_output(run_harbor_trial(ctx, trial), secrets_of(trial.model))
    return redact_output(_attempt(ctx, trial), secrets_of(trial.model))


def _attempt(ctx: TrialContext, trial: Trial) -> TrialOutput:
    started, log, timings = _now(), [], {}
    t0 = time.monotonic()
    image = ctx.images.task_image(ctx.pack, trial.task)
    agent_image_tag = agent_image(ctx, trial, image)
    timings["image_s"] = time.monotonic() - t0
    log.append(f"image {image}" + (f", agent image {agent_image_tag}" if agent_image_tag != image else ""))
    t0 = time.monotonic()
    agent, extracted = _run_agent(ctx, trial, agent_image_tag, log)
    timings["agent_s"] = time.monotonic() - t0
    ungraded = ungraded_outcome(extracted, agent)
    touched_git = extracted is not None and bool(extracted.agent_git)
    if touched_git and (ungraded is None or Flag.TOUCHED_CONFIG.value in ungraded.flags):
        log.append("the agent set up its own git to shape diffs (ignored by the grader): "
                   + ", ".join(extracted.agent_git))
    if ungraded is not None:  # decided without a grading container
        if extracted is not None:
            log.append(f"patch not graded: {ungraded.reason}")
        return TrialOutput(ungraded.outcome, ungraded.reason, agent, None, started, _now(), timings, log,
                           flags=list(ungraded.flags), patch=extracted.patch if extracted is not None else None)
    flags = {Flag.TOUCHED_CONFIG.value} if touched_git else set()
    t0 = time.monotonic()
    try:
        result = _grade_with_retries(ctx, trial, image, extracted.patch if extracted is not None else b"", log)
    except (SandboxError, TaskError, PrerequisiteError):
        raise
    except Exception as e:  # noqa: BLE001 - a bug of ours in grading: infrastructure, the agent's work and spend kept
        reason = "internal error in evalharness while grading: " + "".join(traceback.format_exception(e))[-3000:]
        log.append(reason)
        return TrialOutput(Outcome.INFRA_ERROR, reason, agent, None, started, _now(), timings, log,
                           flags=sorted(flags), patch=extracted.patch if extracted is not None else None)
    timings["grade_s"] = time.monotonic() - t0
    log.append(f"graded: {result.outcome.value} ({result.reason})")
    return TrialOutput(result.outcome, result.reason, agent, result, started, _now(), timings, log,
                       flags=sorted(flags | result.flags), patch=extracted.patch if extracted is not None else None,
                       suspicious=list(getattr(result, "suspicious", None) or []))


def redact_output(out: TrialOutput, secrets: list[str]) -> TrialOutput:
    """``out`` with API keys removed from everything that is stored (files and database row).

    The patch loses only exact secret values (a key-shaped string in code is left alone); the
    rest also loses anything shaped like a known credential (evalharness.redact).
    """
    agent = out.agent.model_copy(update={
        "patch": redact(out.agent.patch, secrets, patterns=False), "error": redact(out.agent.error, secrets),
        "trajectory": redact(out.agent.trajectory, secrets)})
    grade_result = out.grade
    if grade_result is not None:
        grade_result = dataclasses.replace(grade_result, test_output=redact(grade_result.test_output, secrets),
                                           junit_xml=redact(grade_result.junit_xml, secrets),
                                           reason=redact(grade_result.reason, secrets),
                                           results=_redact_bytes(grade_result.results, secrets))
    return dataclasses.replace(out, reason=redact(out.reason, secrets), agent=agent, grade=grade_result,
                               log=redact(out.log, secrets), patch=_redact_bytes(out.patch, secrets),
                               suspicious=redact(out.suspicious, secrets, patterns=False),
                               files={k: redact(v, secrets) if isinstance(v, str) else v for k, v in out.files.items()})


def _redact_bytes(data: bytes | None, secrets: list[str]) -> bytes | None:
    """Exact secret values out of stored bytes (the patch, the results records)."""
    if data is None:
        return None
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            data = data.replace(secret.encode(), REDACTED.encode())
    return data


GRADE_RETRIES = 2
"""A grading container that fails is retried with the same patch: the agent's work (and spend) is kept."""


def _grade_with_retries(ctx: TrialContext, trial: Trial, image: str, patch: bytes, log: list[str]) -> GradeResult:
    spec, trial_id = ctx.pack.spec_for(trial.task), trial.trial_id(ctx.pack.name)
    for attempt in range(GRADE_RETRIES + 1):
        try:
            with DockerSandbox(ctx.client, image, run_id=ctx.run_id, trial=trial_id, role="grader",
                               limits=ctx.limits, workdir=spec.environment.workdir,
                               default_timeout=spec.timeouts.exec_s) as grader:
                grader.start()
                return grade(trial.task, spec, patch, grader)
        except SandboxError as e:
            log.append(f"grading attempt {attempt + 1} failed: {e}")
            if attempt == GRADE_RETRIES:
                raise
            time.sleep(2 ** attempt)
    raise AssertionError("unreachable")


def agent_image(ctx: TrialContext, trial: Trial, task_image: str) -> str:
    """The task image, or the harness tier when the harness installs something (optional ``image_layer()``)."""
    steps = list(getattr(trial.harness, "image_layer", lambda: [])())
    return ctx.images.harness_image(ctx.pack, trial.task, steps) if steps else task_image


def _run_agent(ctx: TrialContext, trial: Trial, image: str, log: list[str]) -> tuple[AgentResult, Extracted | None]:
    """Run the harness, then derive the patch from the work tree after the agent has stopped.

    The harness's own ``patch`` is not graded: the grader derives the change itself (grading.extract).
    A SandboxError raised here is infrastructure; it carries what the harness had spent (``usage``)
    so that a retry adds to the bill rather than hiding it.
    """
    spec, trial_id = ctx.pack.spec_for(trial.task), trial.trial_id(ctx.pack.name)
    wall = ctx.budget.max_wall_s or spec.timeouts.agent_s
    options = dict(getattr(trial.harness, "sandbox_options", lambda: {})())  # e.g. {"shared_dirs": [...]}
    with DockerSandbox(ctx.client, image, run_id=ctx.run_id, trial=trial_id, role="agent", limits=ctx.limits,
                       workdir=spec.environment.workdir, default_timeout=spec.timeouts.exec_s,
                       **options) as sandbox:
        sandbox.start()
        sandbox.set_wall_budget(wall)
        log.append(f"agent container {sandbox.id[:12]}, wall budget {wall:g} s")
        result = run_harness(trial, sandbox, ctx.budget, log)
        if result.budget_exhausted or result.exit_status in ("error", PATCH_APPLY_FAILED, MODEL_UNAVAILABLE):
            return result, None
        try:
            extracted = extract_patch(sandbox, max_bytes=ctx.limits.max_patch_bytes)
        except SandboxError as e:
            e.usage = result.usage  # type: ignore[attr-defined]
            raise
        patch_text = extracted.text if extracted.outcome is None else ""
        if result.patch and result.patch.strip() != patch_text.strip():
            log.append("the harness's own patch differs from the work tree's change; the work tree's is graded")
        return result.model_copy(update={"patch": patch_text}), extracted


def run_harness(trial: Trial, sandbox: DockerSandbox, budget: Budget, log: list[str]) -> AgentResult:
    """Run the harness in a started sandbox; every way it can end becomes an AgentResult (what it spent and saw
    kept), except a SandboxError (infrastructure), which is raised. Trials and investigators share it.

    Model calls that failed for good because the endpoint was unavailable (evalharness.models.unavailable)
    end as ``exit_status`` model_unavailable, the reason in ``error``; any other harness error as ``error``."""
    try:
        result = trial.harness.run(trial.task, sandbox, trial.model, seed=trial.seed, budget=budget)
        if not isinstance(result, AgentResult):
            raise HarnessError(f"harness {trial.harness.name} returned {type(result).__name__}, not an AgentResult")
        return result
    except BudgetExhausted as e:
        log.append(str(e))
        return AgentResult(patch="", exit_status="budget_exhausted", budget_exhausted=e.which,
                           error=str(e), **_kept(e, trial))
    except SandboxError:
        raise
    except HarnessError as e:
        unavailable = from_error(e)
        if unavailable is not None:
            log.append(unavailable.reason)
            return AgentResult(exit_status=MODEL_UNAVAILABLE, error=unavailable.reason, **_kept(e, trial))
        log.append(f"harness error: {e}")
        return AgentResult(exit_status="error", error=str(e), **_kept(e, trial))
    except EvalHarnessError as e:
        return AgentResult(exit_status="error", error=f"{type(e).__name__}: {e}", **_kept(e, trial))
    except Exception as e:  # a bug in the harness: the trial ends, the run goes on, the traceback is kept
        return AgentResult(exit_status="error", error="".join(traceback.format_exception(e))[-4000:],
                           **_kept(e, trial))


def unknown_usage(trial: Trial) -> Usage:
    """Usage when the harness could not say: nothing for a harness without a model, else cost unknown."""
    return Usage() if trial.model is None else Usage(cost_usd=None)


def _kept(e: Exception, trial: Trial) -> dict[str, Any]:
    """Usage and trajectory a harness attached to the exception that ended it (spent money is never lost)."""
    return {"usage": getattr(e, "usage", None) or unknown_usage(trial), "trajectory": getattr(e, "trajectory", None) or []}


def trial_files(trial: Trial, out: TrialOutput, attempts: int, extra: dict[str, Any]) -> dict[str, Any]:
    """The contents of a trial's run folder."""
    result = {
        "outcome": out.outcome.value, "reason": out.reason, "flags": sorted(out.flags), "attempts": attempts,
        "task_id": trial.task.instance_id, "harness": trial.harness.name, "model": trial.model_label,
        "seed": trial.seed, "started_at": out.started_at.isoformat(), "finished_at": out.finished_at.isoformat(),
        "timings": out.timings, "usage": out.agent.usage.model_dump(), "exit_status": out.agent.exit_status,
        "error": out.agent.error, "grade": _grade_summary(out.grade), "suspicious": out.suspicious, **extra,
    }
    if out.reward is not None:
        result["reward"] = out.reward
    files: dict[str, Any] = {
        "patch.diff": out.patch if out.patch is not None else out.agent.patch,
        "trajectory.json": trajectory_document(
            out.agent.trajectory, out.agent.usage, **extra, task_id=trial.task.instance_id,
            harness=trial.harness.name, model=trial.model_label, seed=trial.seed, outcome=out.outcome.value,
            reason=out.reason, exit_status=out.agent.exit_status),
        "result.json": result,
        "trial.log": "\n".join(out.log) + "\n",
        **out.files,
    }
    if out.grade is not None:
        files["test_output.txt"] = out.grade.test_output
        if out.grade.junit_xml:
            files["junit.xml"] = out.grade.junit_xml
        if out.grade.results is not None:
            files["results.jsonl"] = out.grade.results
    return files


def _grade_summary(grade: GradeResult | None) -> dict[str, Any] | None:
    if grade is None:
        return None
    bulky = ("test_output", "junit_xml", "results", "all_tests",  # kept as files, or in results.jsonl
             "suspicious")  # result.json's own "suspicious" (redacted: TrialOutput.suspicious)
    return {k: v for k, v in grade.to_dict().items() if k not in bulky}
