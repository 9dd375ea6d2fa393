"""The investigator: a harness + model audits one task in a sealed sandbox and writes a verdict.

Each seed gets a trial's agent sandbox (the task image at base, ``network_mode=none``, the trial's
limits; a CLI agent reaches its model only through the relay, ``minimal`` calls it from the host, as
in a trial: ``trial.run_harness``). Before the harness starts, ``/tmp/audit/`` in the sandbox gets
``statement.md``, ``test.patch``, ``gold.patch``, ``task.json`` (test lists and the grader's test
command) and ``run_tests.sh`` (that command), owned by the agent's user (the root file system is
read-only; /tmp is the agent's). The harness's problem statement is
the investigation prompt (``audits/investigator-prompt.md``, placeholders filled); the built-in
``minimal`` runs with its ``audit`` system prompt. The verdict is the JSON file
``/tmp/audit/verdict.json`` the agent writes (``verdicts.parse_verdict``; its last message is not
read). Outcomes per seed: ``ok`` (a valid verdict, even one written before a budget ran out),
``invalid`` (no file, or one that fails the schema: raw text and error kept), ``error`` (the engine,
the image or the model API failed). The trajectory is written under ``out_dir`` when one is given;
the evidence names it and lists the commands run. ``ensemble`` (from ``verdicts``) joins the seeds.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.verdicts import (FAMILIES, PROBE, VerdictError, ensemble, failed_finding, parse_verdict,
                                        verdict_finding)
from evalharness.errors import EvalHarnessError, FileTooLarge, UserError
from evalharness.grading.grade import test_modules
from evalharness.redact import redact, secrets_of
from evalharness.rundir import safe, write_trial
from evalharness.sandbox.base import AGENT_USER, Limits
from evalharness.sandbox.docker import DockerSandbox
from evalharness.templating import fill
from evalharness.trajectory import document, truncate
from evalharness.trial import MODEL_UNAVAILABLE, Trial, TrialContext, agent_image, run_harness
from evalharness.types import AgentResult, Budget, Harness, ModelEndpoint, TaskSpec

__all__ = ["PROMPT_PATH", "RULE", "VERDICT_FILE", "chosen_harness", "cli_investigator", "ensemble", "investigate",
           "investigation_context"]

VERSION = 2
"""Bumped when what the investigator is given or how its answer is read changes (resumed audits rerun).
2: seeds count from 0 as a run's do; a clean verdict has no family; a task without a test patch is told so."""
PROMPT_PATH = Path(__file__).resolve().parents[2] / "audits" / "investigator-prompt.md"
AUDIT_DIR = "/tmp/audit"
VERDICT_FILE = f"{AUDIT_DIR}/verdict.json"
MAX_VERDICT_BYTES = 64 * 1024
DEFAULT_BUDGET = Budget(max_steps=60)
"""Per seed, unless the caller gives one: model calls (the pack's agent timeout bounds the wall time)."""
EVIDENCE_COMMANDS, EVIDENCE_OUTPUT = 40, 600
"""Commands listed in a finding's evidence, and characters of each one's output (the trajectory has all)."""
DEFAULT_HARNESS = "minimal"
"""The harness ``--probe investigator`` runs when ``--investigator`` names none."""
RULE = ("An agent (the harness of --investigator, or minimal with --probe investigator; the model of -m) audits the "
        "task in a sealed sandbox (network none) holding the repository at base and, in /tmp/audit/, the statement, "
        "the test patch, the gold patch, the test lists and the grader's test command, and writes a JSON verdict "
        "(broken, family, severity 0-3, evidence) to /tmp/audit/verdict.json. One finding per seed (--seeds): ok "
        "with a valid verdict, invalid when the file is missing or fails the schema, error when the engine or the "
        "model API failed; the seeds' ensemble (seed -1) takes the most severe ok verdict.")
"""The investigator's rule as ``evalharness audit probes`` lists it (it is no registered probe: it needs a model)."""


def chosen_harness(harness: str | None, only: Sequence[str], skip: Sequence[str]) -> str | None:
    """The investigator's harness from ``--investigator HARNESS``, ``--probe`` and ``--skip-probe`` (None: no
    investigator). ``--probe investigator`` alone runs ``minimal``; ``--skip-probe investigator`` runs none and
    contradicts ``--investigator``."""
    if PROBE in skip:
        if harness is not None:
            raise UserError(f"--investigator {harness} and --skip-probe {PROBE} contradict each other",
                            "leave one of them out")
        return None
    if harness is None and PROBE in only:
        return DEFAULT_HARNESS
    return harness


@dataclass
class Investigation:
    """What one investigation left: the harness's result, the raw verdict (None: no file), the log."""

    agent: AgentResult
    raw: str | None
    log: list[str]
    verdict_problem: str = ""


def investigation_context(ctx: AuditContext, *, budget: Budget | None = None, limits: Limits | None = None,
                          run_id: str | None = None) -> TrialContext:
    """The Docker plumbing of a trial, from an audit context's validator (its image builder and engine)."""
    if ctx.validator is None:
        raise UserError("the investigator needs Docker: the audit has no validator (engine, image builder)")
    images = ctx.validator.images
    return TrialContext(run_id=run_id or time.strftime("audit-%Y%m%d-%H%M%S"), pack=ctx.pack, client=images.client,
                        images=images, budget=budget or DEFAULT_BUDGET, limits=limits or Limits())


def investigate(task: TaskSpec, ctx: AuditContext, *, harness: Harness, endpoint: ModelEndpoint | None,
                seeds: list[int] | range, prompt_path: Path | None = None, plumbing: TrialContext | None = None,
                out_dir: Path | None = None) -> list[Finding]:
    """One finding per seed (probe ``investigator``, ``seed`` the seed), run one after another.

    ``plumbing`` is the trial context (engine, images, run id labelling the containers, budget and
    limits per seed); by default one is made from ``ctx.validator`` (``investigation_context``).
    ``out_dir`` (e.g. ``audits/<pack>``) receives ``<task>/investigator/<harness>/<model>/seed-<n>/``
    with ``trajectory.json``, ``verdict.raw`` and ``investigation.log``.
    """
    template = load_prompt(prompt_path)
    plumbing = plumbing or investigation_context(ctx)
    harness = for_investigation(harness)
    return [_one_seed(task, plumbing, harness, endpoint, seed, template, out_dir) for seed in seeds]


def cli_investigator(harness_spec: str, endpoint: ModelEndpoint | None, seeds: int, *, client: Any,
                     ca_bundle: Path | None = None, log: Callable[[str], None] = print,
                     budget: Budget | None = None, prompt_path: Path | None = None,
                     audits_dir: Path = Path("audits")) -> Any:
    """``evalharness audit --investigator HARNESS -m MODEL --seeds K``: a ``pipeline.Investigator`` whose
    ``run(task, ctx, seeds)`` investigates one task (the audit's image builder when it has one) and keeps
    each investigation under ``<audits_dir>/<pack>/``."""
    from evalharness.audit.pipeline import Investigator
    from evalharness.harness.registry import load_harness
    from evalharness.sandbox.images import ImageBuilder

    harness = load_harness(harness_spec)
    if getattr(harness, "uses_model", False) and endpoint is None:
        raise UserError(f"the investigator harness {harness.name} needs a model: give --model")
    budget = budget or DEFAULT_BUDGET
    run_id = time.strftime("audit-investigator-%Y%m%d-%H%M%S")
    own_images = ImageBuilder(client, ca_bundle=ca_bundle, log=log)

    def run(task: TaskSpec, ctx: AuditContext, todo: list[int]) -> list[Finding]:
        images = getattr(ctx.validator, "images", None) or own_images
        plumbing = TrialContext(run_id=run_id, pack=ctx.pack, client=client, images=images, budget=budget,
                                limits=Limits())
        return investigate(task, ctx, harness=harness, endpoint=endpoint, seeds=todo, prompt_path=prompt_path,
                           plumbing=plumbing, out_dir=audits_dir / ctx.pack.name)

    template = load_prompt(prompt_path)
    config = {"version": VERSION, "harness": harness.config(), "budget": budget.model_dump(),
              "model": endpoint.model_dump() if endpoint else None, "prompt_sha": inputs_hash(template)}
    return Investigator(run=run, seeds=seeds, config=config)


def load_prompt(path: Path | None = None) -> str:
    """The investigation prompt template (``audits/investigator-prompt.md`` by default); it must say where the
    verdict goes (``{verdict_file}``), else every seed would be invalid."""
    path = path or PROMPT_PATH
    try:
        template = Path(path).read_text()
    except OSError as e:
        raise UserError(f"cannot read the investigation prompt {path}: {e.strerror or e}") from e
    if "{verdict_file}" not in template:
        raise UserError(f"the investigation prompt {path} never says where the verdict goes",
                        "put {verdict_file} in it (filled with " + VERDICT_FILE + ")")
    return template


def for_investigation(harness: Harness) -> Harness:
    """The built-in ``minimal`` with its default (fix-it) system prompt runs with its ``audit`` one."""
    if getattr(harness, "prompt_variant", None) == "default" and type(harness).__name__ == "MinimalHarness":
        harness = copy.copy(harness)
        harness.prompt_variant = "audit"  # type: ignore[attr-defined]
    return harness


def prompt_for(task: TaskSpec, template: str, workdir: str) -> str:
    """The investigation prompt for ``task``: the template's placeholders filled. A task whose test patch is
    empty (its tests are already in the repository) is told so, never to apply an empty file."""
    return fill(template, {"instance_id": task.instance_id, "workdir": workdir, "audit_dir": AUDIT_DIR,
                           "verdict_file": VERDICT_FILE, "test_command": "bash " + AUDIT_DIR + "/run_tests.sh",
                           "families": ", ".join(f"`{f}`" for f in FAMILIES),
                           "statement": task.problem_statement, **_test_patch_words(task)})


def _test_patch_words(task: TaskSpec) -> dict[str, str]:
    """The prompt's ``{test_patch_item}`` and ``{apply_tests}``, for a task with or without a test patch."""
    if task.test_patch.strip():
        return {"test_patch_item": f"`{AUDIT_DIR}/test.patch`: the tests that grade the task (not applied to the "
                                   "repository yet).",
                "apply_tests": f"`git apply {AUDIT_DIR}/test.patch`, "}
    return {"test_patch_item": "no test patch: this task's tests are already in the repository at base "
                               f"(`{AUDIT_DIR}/task.json` names them; `{AUDIT_DIR}/test.patch` is empty).",
            "apply_tests": ""}


def audit_files(task: TaskSpec, test_command: str) -> dict[str, bytes]:
    """The files put in ``/tmp/audit/`` (sandbox paths -> contents)."""
    listing = {"instance_id": task.instance_id, "FAIL_TO_PASS": task.FAIL_TO_PASS,
               "PASS_TO_PASS": task.PASS_TO_PASS, "test_files": task.test_files, "test_command": test_command}
    files = {"statement.md": task.problem_statement, "test.patch": _with_newline(task.test_patch),
             "gold.patch": _with_newline(task.patch), "task.json": json.dumps(listing, indent=1) + "\n",
             "run_tests.sh": f"#!/bin/bash\n# the grader's test command for this task\n{test_command}\n"}
    return {f"{AUDIT_DIR}/{name}": text.encode() for name, text in files.items()}


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def test_command_of(task: TaskSpec, spec: Any) -> str:
    """The pack's test command as the grader fills it for ``task`` (JUnit XML into /tmp)."""
    return fill(spec.test_command, {"test_files": " ".join(task.test_files),
                                    "test_modules": " ".join(test_modules(task.test_files)),
                                    "junit_xml": "/tmp/audit-junit.xml"})


def _one_seed(task: TaskSpec, plumbing: TrialContext, harness: Harness, endpoint: ModelEndpoint | None,
              seed: int, template: str, out_dir: Path | None) -> Finding:
    spec = plumbing.pack.spec_for(task)
    prompt = prompt_for(task, template, spec.environment.workdir)
    hash_ = inputs_hash(VERSION, task.instance_id, task.problem_statement, task.patch, task.test_patch,
                        task.FAIL_TO_PASS, task.PASS_TO_PASS, prompt, harness.config(),
                        endpoint.model_dump() if endpoint else None, seed)
    base = {"harness": harness.name, "model": endpoint.label if endpoint else None, "prompt_sha": inputs_hash(prompt)}
    try:
        seen = _run(task, plumbing, harness, endpoint, seed, prompt, test_command_of(task, spec))
    except EvalHarnessError as e:  # engine, image build, sandbox: not the task's fault
        return failed_finding(task.instance_id, seed, "error", f"{type(e).__name__}: {e}"[:2000], base, hash_)
    seen = _redacted(seen, secrets_of(endpoint))
    evidence = {**base, **_evidence(seen), **_kept(seen, task, harness, endpoint, seed, out_dir)}
    return judge(task.instance_id, seed, seen, evidence, hash_)


def _run(task: TaskSpec, plumbing: TrialContext, harness: Harness, endpoint: ModelEndpoint | None, seed: int,
         prompt: str, test_command: str) -> Investigation:
    """One sandbox, set up as a trial's agent sandbox, plus ``/tmp/audit/``; the harness; the verdict file."""
    spec, log = plumbing.pack.spec_for(task), []
    trial = Trial(task.model_copy(update={"problem_statement": prompt}), harness, endpoint, seed)
    image = agent_image(plumbing, trial, plumbing.images.task_image(plumbing.pack, task))
    wall = plumbing.budget.max_wall_s or spec.timeouts.agent_s
    options = dict(getattr(harness, "sandbox_options", lambda: {})())
    with DockerSandbox(plumbing.client, image, run_id=plumbing.run_id, role="investigator",
                       trial=f"{trial.trial_id(plumbing.pack.name)}/investigator", limits=plumbing.limits,
                       workdir=spec.environment.workdir, default_timeout=spec.timeouts.exec_s, **options) as sandbox:
        sandbox.start()
        sandbox.write_files(audit_files(task, test_command), user=AGENT_USER)
        sandbox.set_wall_budget(wall)
        log.append(f"investigator container {sandbox.id[:12]} from {image}, wall budget {wall:g} s")
        agent = run_harness(trial, sandbox, plumbing.budget, log)
        log.append(f"harness ended: {agent.exit_status}" + (f" ({agent.error[:300]})" if agent.error else ""))
        raw, problem = _read_verdict(sandbox)
    return Investigation(agent, raw, log, problem)


def _read_verdict(sandbox: DockerSandbox) -> tuple[str | None, str]:
    try:
        return sandbox.read_file(VERDICT_FILE, max_bytes=MAX_VERDICT_BYTES).decode(errors="replace"), ""
    except FileNotFoundError:
        return None, f"no verdict: {VERDICT_FILE} was not written"
    except FileTooLarge:
        return None, f"the verdict file is over {MAX_VERDICT_BYTES} bytes"


def judge(task_id: str, seed: int, seen: Investigation, evidence: dict[str, Any], hash_: str) -> Finding:
    """A valid verdict is the answer whatever ended the harness; else a harness error is ``error``
    (the model API or the harness failed) and anything else (no file, bad JSON, wrong schema) ``invalid``."""
    problem = seen.verdict_problem
    if seen.raw is not None:
        try:
            return verdict_finding(task_id, seed, parse_verdict(seen.raw), evidence, hash_)
        except VerdictError as e:
            problem = f"invalid verdict: {e}"
    if seen.agent.exit_status in ("error", MODEL_UNAVAILABLE):  # an endpoint that was down: asked again too
        return failed_finding(task_id, seed, "error", f"harness error: {(seen.agent.error or '')[:1500]}",
                              {**evidence, "verdict_problem": problem}, hash_)
    return failed_finding(task_id, seed, "invalid", problem, {**evidence, "verdict_problem": problem}, hash_)


def _redacted(seen: Investigation, secrets: list[str]) -> Investigation:
    agent = seen.agent.model_copy(update={"error": redact(seen.agent.error, secrets),
                                          "patch": redact(seen.agent.patch, secrets, patterns=False),
                                          "trajectory": redact(seen.agent.trajectory, secrets)})
    raw = redact(seen.raw, secrets) if seen.raw is not None else None
    return Investigation(agent, raw, redact(seen.log, secrets), seen.verdict_problem)


def _evidence(seen: Investigation) -> dict[str, Any]:
    """The part of the trajectory a reader checks first: the commands the harness ran (exit codes, outputs) and
    the tool calls the model made (a CLI agent runs those itself: its own log files are in the trajectory)."""
    commands = [{"command": truncate(s.get("command", ""), 2000), "exit_code": s.get("exit_code"),
                 "output": truncate(s.get("output", ""), EVIDENCE_OUTPUT)}
                for s in seen.agent.trajectory if s.get("kind") == "command"]
    asked = [f"{c.get('name')}: {c.get('arguments')}"[:EVIDENCE_OUTPUT]
             for s in seen.agent.trajectory if s.get("kind") == "model" for c in s.get("tool_calls") or []]
    return {"exit_status": seen.agent.exit_status, "usage": seen.agent.usage.model_dump(),
            "commands": commands[:EVIDENCE_COMMANDS], "commands_run": len(commands),
            "tool_calls": asked[:EVIDENCE_COMMANDS],
            "raw": truncate(seen.raw, 8000) if seen.raw is not None else None,
            "work_tree_diff": truncate(seen.agent.patch, 4000)}


def _kept(seen: Investigation, task: TaskSpec, harness: Harness, endpoint: ModelEndpoint | None, seed: int,
          out_dir: Path | None) -> dict[str, Any]:
    """Write the whole investigation under ``out_dir``; its path (relative to ``out_dir``) for the evidence."""
    if out_dir is None:
        return {}
    model = endpoint.label if endpoint else "none"
    rel = Path(safe(task.instance_id)) / PROBE / safe(harness.name) / safe(model) / f"seed-{seed}"
    files: dict[str, Any] = {
        "trajectory.json": document(seen.agent.trajectory, seen.agent.usage, task_id=task.instance_id,
                                    harness=harness.name, model=model, seed=seed,
                                    exit_status=seen.agent.exit_status),
        "investigation.log": "\n".join(seen.log) + "\n"}
    if seen.raw is not None:
        files["verdict.raw"] = seen.raw
    write_trial(out_dir / rel, files)
    return {"trajectory": str(rel / "trajectory.json")}
