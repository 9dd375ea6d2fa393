"""One trial of a Harbor task: the agent in the environment container, then the verifier where the agent's
processes are gone (docs/threat-model.md, "Harbor tasks").

1. The agent's container runs (network none); the harness works in it.
2. It is stopped: every process ends. The engine's filesystem diff is read (tamper.classify).
3. The verifier runs in a fresh container: the separate verifier image (only /logs/artifacts and the declared
   artifacts copied over, by the grader) or a snapshot of the agent's final filesystem. /tests and
   /logs/verifier are fresh volumes the agent never had; tests/ is copied in by the engine, as root.
4. The reward is read from that volume by the grader (reward.parse_reward); a shared verifier over a changed
   toolchain is not run: the trial is ``tampered``.
"""

from __future__ import annotations

import shlex
import threading
import time
from datetime import datetime, timezone

from evalharness.errors import SandboxError
from evalharness.sources.harbor.model import HarborTask
from evalharness.sources.harbor.run.agent import prepare, remove_shared, run_agent, shared_folders
from evalharness.sources.harbor.run.build import HarborImages, harbor_task, image_workdir, workdir_of
from evalharness.sources.harbor.run.container import HarborContainer, dir_tar, reroot
from evalharness.sources.harbor.run.links import carried_links, links_into_verifier
from evalharness.sources.harbor.run.reward import TIMED_OUT, Reward, attribute, parse_reward
from evalharness.sources.harbor.run.tamper import Changes, classify, tampered
from evalharness.sources.harbor.run.workdiff import MAX_FILE, unified_patch, workdir_paths
from evalharness.types import AgentResult, Flag, Outcome

ARTIFACTS = "/logs/artifacts"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def run_harbor_trial(ctx, trial):
    """A TrialOutput (evalharness.trial) for ``trial`` of a Harbor pack; SandboxError for the caller to retry."""
    from evalharness.trial import TrialOutput, ungraded_outcome

    started, log, timings = _now(), [], {}
    t0 = time.monotonic()
    images = HarborImages(ctx.images)
    task = harbor_task(ctx.pack, trial.task)
    env_image, verifier_image = images.environment(ctx.pack, trial.task), images.verifier(ctx.pack, trial.task)
    workdir = workdir_of(ctx.client, env_image, task)
    steps = list(getattr(trial.harness, "image_layer", lambda: [])())  # a harness's install steps: its own tier
    agent_image = images.harness(ctx.pack, trial.task, env_image, steps, workdir) if steps else env_image
    timings["image_s"] = time.monotonic() - t0
    log += [*images.notes, f"image {env_image}" + (f", agent image {agent_image}" if steps else "")
            + (f", verifier image {verifier_image}" if verifier_image else "")]
    trial_id = trial.trial_id(ctx.pack.name)
    t0 = time.monotonic()
    agent, changes, carried, snapshot, patch = _agent_phase(ctx, trial, task, agent_image, workdir, trial_id, log,
                                                            separate=verifier_image is not None)
    timings["agent_s"] = time.monotonic() - t0
    flags = _flags(changes)
    ungraded = ungraded_outcome(None, agent)  # a budget, a harness error, a dead model endpoint: not verified
    if ungraded is not None:
        _drop_image(ctx.client, snapshot)
        log.append(f"not verified: {ungraded.reason}")
        return TrialOutput(ungraded.outcome, ungraded.reason, agent, None, started, _now(), timings, log,
                           flags=sorted({*flags, *ungraded.flags}), patch=patch)
    if tampered(changes, shared_verifier=verifier_image is None):
        _drop_image(ctx.client, snapshot)
        reason = ("the agent changed what the verifier would run in its filesystem: "
                  + ", ".join(changes.toolchain[:8]) + (" ..." if len(changes.toolchain) > 8 else ""))
        log.append(f"not verified: {reason}")
        return TrialOutput(Outcome.TAMPERED, reason, agent, None, started, _now(), timings, log,
                           flags=sorted({*flags, Flag.TAMPERED.value}), patch=patch)
    t0 = time.monotonic()
    try:
        verifier_workdir = image_workdir(ctx.client, verifier_image) if verifier_image else workdir
        reward, output, raw = _verify(ctx, trial, task, verifier_image or snapshot, verifier_workdir, carried, trial_id,
                                      () if verifier_image else changes.bytecode,
                                      carried_links(carried) if verifier_image else changes.written)
    finally:
        _drop_image(ctx.client, snapshot)
    own_state = None
    if reward.defect is not None:  # whose failure: the same verifier on the task's own state tells
        probe = _own_state_reward(ctx, trial, task, verifier_image or env_image, verifier_workdir, trial_id)
        log.append(f"the verifier on the task's own state: {probe.outcome.value} ({probe.reason})")
        own_state = {"outcome": probe.outcome.value, "reason": probe.reason, **probe.to_dict()}
        reward = attribute(reward, probe)
    timings["verify_s"] = time.monotonic() - t0
    log.append(f"verified: {reward.outcome.value} ({reward.reason})")
    record = {**reward.to_dict(), "verifier_timed_out": reward.defect == TIMED_OUT,
              "changed_outside_workdir": list(changes.outside), "changed_toolchain": list(changes.toolchain),
              "compiled_artefacts_removed": list(changes.bytecode) if verifier_image is None else [],
              **({"own_state": own_state} if own_state else {})}
    if reward.outcome is Outcome.TAMPERED:
        flags = sorted({*flags, Flag.TAMPERED.value})
    return TrialOutput(reward.outcome, reward.reason, agent, None, started, _now(), timings, log, flags=flags,
                       reward=record, files={"verifier_output.txt": output, **raw}, patch=patch)


def _verified(agent: AgentResult) -> bool:
    """Whether the agent's run ended in a state the verifier judges (not a budget, harness or endpoint failure)."""
    from evalharness.trial import ungraded_outcome

    return ungraded_outcome(None, agent) is None


def _flags(changes: Changes) -> list[str]:
    flags = set()
    if changes.outside:
        flags.add(Flag.CHANGED_OUTSIDE_WORKDIR.value)
    if changes.toolchain:
        flags.add(Flag.CHANGED_TOOLCHAIN.value)
    if changes.bytecode:
        flags.add(Flag.COMPILED_ARTEFACT.value)
    return sorted(flags)


def _limits(ctx, task: HarborTask) -> dict:
    env = task.config.environment
    return {"cpus": min(float(env.cpus), ctx.limits.cpus) if ctx.limits.cpus else float(env.cpus),
            "memory_mb": env.memory_mb, "pids": ctx.limits.pids}


def _agent_phase(ctx, trial, task, image, workdir, trial_id, log, *, separate):
    """Run the agent, stop its container, read its changes; (agent result, changes, files carried to a separate
    verifier, snapshot image of a shared one or None, the work directory's patch)."""
    shared = shared_folders(trial.harness, trial.model)  # e.g. the model relay's socket folder, read-only
    try:
        box = HarborContainer(ctx.client, image, run_id=ctx.run_id, trial=trial_id, role="agent",
                              env=dict(task.config.environment.env), binds=shared, **_limits(ctx, task))
    except SandboxError:
        remove_shared(shared)
        raise
    try:
        prepare(box, task)
        box.start()
        log.append(f"agent container {box.container.id[:12]}")
        agent = run_agent(box, task, trial, ctx.budget, workdir, log, shared)
        box.stop()  # every process the agent left ends here, before anything is read or verified
        engine_diff = [c for c in box.changes() if c.get("Path") not in shared]  # our mount points: not the agent's
        changes = classify(engine_diff, workdir, tuple(task.config.artifacts))
        patch = _workdir_patch(ctx, task, image, box, workdir, engine_diff, trial_id)
        if changes.outside or changes.toolchain:
            log.append("changed outside the work directory: " + ", ".join([*changes.toolchain, *changes.outside][:20]))
        carried = [(path, box.get_tar(path)) for path in [ARTIFACTS, *task.config.artifacts]] if separate else []
        snapshot = None if separate or not _verified(agent) else box.snapshot()
        return agent, changes, carried, snapshot, patch
    finally:
        box.remove()
        remove_shared(shared)


def _workdir_patch(ctx, task, image: str, box, workdir: str, engine_diff, trial_id: str) -> bytes:
    """The agent's changes in its work directory as patch.diff (``workdiff``): before from an unstarted container
    of the environment image, after from the stopped agent container."""
    changed = workdir_paths(engine_diff, workdir)
    if not changed:
        return b""
    base = HarborContainer(ctx.client, image, run_id=ctx.run_id, trial=trial_id, role="diff", env={},
                           own_entrypoint=False, **_limits(ctx, task))
    try:
        base.start()  # read from a started container (sleep alone): the engine hung removing never-started ones
        return unified_patch(changed, lambda p: _shown(base, p), lambda p: _shown(box, p), workdir).encode()
    finally:
        base.remove()


def _shown(box, path: str) -> bytes | None:
    """A file's bytes for patch.diff; None for what cannot be shown (a folder, a file far over the cap): the
    review copy never fails a trial (a SandboxError here would charge the agent's folder to the machine)."""
    try:
        return box.read_file(path, MAX_FILE + 1)
    except SandboxError:
        return None


def _verify(ctx, trial, task: HarborTask, image: str, workdir: str, carried, trial_id,
            bytecode: tuple[str, ...], agents_paths) -> tuple[Reward, str, dict[str, bytes]]:
    """The reward, the verifier's output, and the reward files as the verifier wrote them (kept: ``grade``
    decides them again). ``agents_paths``: the agent's files here, checked for links into /tests or
    /logs/verifier (a ``tampered`` Reward, the tests not run)."""
    verifier = task.config.verifier
    box = HarborContainer(ctx.client, image, run_id=ctx.run_id, trial=trial_id, role="verifier",
                          env=dict(verifier.env), volumes=("/tests", "/logs/verifier"), own_entrypoint=False,
                          **_limits(ctx, task))
    try:
        box.put("/tests", dir_tar(task.tests_dir))
        for path, data in carried:
            if data is not None:
                box.put("/", reroot(data, path))
        box.start()
        for command in removals(bytecode):  # the agent's bytecode never runs in the verifier
            removed = box.exec(command, workdir="/", timeout=120)
            if removed.exit_code != 0:
                raise SandboxError(f"could not remove the agent's bytecode before verifying: {removed.output[:300]}")
        linked = links_into_verifier(box, agents_paths)
        if linked:
            reason = "the agent's files link into the verifier's own folders: " + ", ".join(linked[:8])
            return Reward(Outcome.TAMPERED, reason), f"not verified: {reason}", {}
        done = box.exec("bash /tests/test.sh", workdir=workdir, timeout=verifier.timeout_sec)
        box.stop()
        raw = {name: box.read_file(f"/logs/verifier/{name}") for name in ("reward.txt", "reward.json")}
        reward = parse_reward(raw["reward.txt"], raw["reward.json"], timed_out=done.timed_out)
        output = f"$ bash /tests/test.sh  (exit {done.exit_code})\n{done.output}"
        return reward, output, {name: data for name, data in raw.items() if data is not None}
    finally:
        box.remove()


_OWN_STATE: dict[tuple[str, str, str], Reward] = {}
_OWN_STATE_LOCK = threading.Lock()


def _own_state_reward(ctx, trial, task: HarborTask, image: str, workdir: str, trial_id: str) -> Reward:
    """The verifier's reward on the task's own state (no agent change, nothing carried): once per image and task
    in this process; a probe that timed out is not kept (the machine may have been slow)."""
    key = (image, ctx.pack.content_hash, trial.task.instance_id)
    with _OWN_STATE_LOCK:
        if key in _OWN_STATE:
            return _OWN_STATE[key]
    probe, _, _ = _verify(ctx, trial, task, image, workdir, [], f"{trial_id}/own-state", (), ())
    if probe.defect != TIMED_OUT:
        with _OWN_STATE_LOCK:
            _OWN_STATE[key] = probe
    return probe


def removals(paths: tuple[str, ...], limit: int = 64 * 1024) -> list[str]:
    """Pure: ``rm -rf`` commands (the image's rm: toolchain unchanged) removing ``paths``, each under ``limit``
    bytes (one argument of ``bash -c`` holds at most 128 KiB). ``-r``: a path named like bytecode may be a folder
    the agent made; its failure to go would be the agent's doing, charged to the infrastructure."""
    commands, current = [], ""
    for quoted in (shlex.quote(p) for p in paths):
        if current and len(current) + len(quoted) + 1 > limit:
            commands.append(current)
            current = ""
        current = (current or "rm -rf --") + " " + quoted
    return [*commands, current] if current else commands


def _drop_image(client, image: str | None) -> None:
    if image:
        try:
            client.images.remove(image, force=True, noprune=False)
        except Exception:  # noqa: BLE001 - a leftover snapshot costs disk, never the trial; `sandbox gc` finds it
            pass
