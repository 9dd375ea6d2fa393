"""Static checks of the network a task's scripts need: ``allow-internet`` and ``trial-network-fetch`` (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from evalharness.sources.harbor.checks.findings import StaticFinding, evidence
from evalharness.sources.harbor.checks.scripts import Fetch, fetches, task_scripts
from evalharness.sources.harbor.model import HarborTask


@dataclass
class Phase:
    name: str
    mode: str
    """public, no-network or allowlist (FORMAT.md section 6)."""
    hosts: tuple[str, ...]
    source: str
    """The task.toml setting that decided it, for the reason."""


def agent_phase(task: HarborTask) -> Phase:
    agent, env = task.config.agent, task.config.environment
    if agent.network_mode or agent.allowed_hosts:
        return Phase("agent", agent.network_mode or "allowlist", tuple(agent.allowed_hosts), "[agent]")
    return Phase("agent", env.network(), tuple(env.allowed_hosts), _env_source("[environment]", env))


def verifier_phase(task: HarborTask) -> Phase:
    verifier, env = task.config.verifier, task.config.environment
    if verifier.network_mode or verifier.allowed_hosts:
        return Phase("verifier", verifier.network_mode or "allowlist", tuple(verifier.allowed_hosts), "[verifier]")
    if verifier.separate and verifier.environment is not None:
        own = verifier.environment
        return Phase("verifier", own.network(), tuple(own.allowed_hosts), _env_source("[verifier.environment]", own))
    return Phase("verifier", env.network(), tuple(env.allowed_hosts), _env_source("[environment]", env))


def _env_source(table: str, env) -> str:
    if env.network_mode:
        return f'{table} network_mode = "{env.network_mode}"'
    if env.allowed_hosts:
        return f"{table} allowed_hosts"
    return f"{table} allow_internet = {str(env.allow_internet).lower()}"


def blocked(fetch: Fetch, phase: Phase) -> bool:
    """Whether the phase's network stops this fetch."""
    if phase.mode == "public":
        return False
    if phase.mode == "no-network":
        return True
    if not fetch.hosts:  # apt: some Debian or Ubuntu mirror
        return not any("debian" in h or "ubuntu" in h for h in phase.hosts)
    return not set(fetch.hosts) <= set(phase.hosts)


def allow_internet(task: HarborTask) -> list[StaticFinding]:
    """test.sh (verify time) and solve.sh (the oracle, agent time) need nothing their phase's network policy
    forbids: a verifier that cannot download what it installs fails whatever the agent did."""
    found = []
    phases = {"test": verifier_phase(task), "solve": agent_phase(task)}
    for script in task_scripts(task):
        phase = phases.get(script.kind)
        if phase is None:
            continue
        stopped = [f for f in filter(None, map(fetches, script.commands)) if blocked(f, phase)]
        if not stopped:
            continue
        needs = sorted({h for f in stopped for h in f.hosts} or {"a package mirror"})
        who = "the verifier fails whatever the agent did" if script.kind == "test" else \
            "the oracle cannot run, so the task cannot be validated"
        found.append(StaticFinding("allow-internet", 3 if script.kind == "test" else 2,
            f"{script.path.name} reaches the network ({', '.join(needs)}) but the {phase.name} phase is "
            f"{phase.mode} ({phase.source}): {who}",
            _lines(task, script.path, [f.command.line for f in stopped])))
    return found


def trial_network_fetch(task: HarborTask) -> list[StaticFinding]:
    """With a separate verifier, test.sh downloads nothing at verify time: what it needs belongs in
    tests/Dockerfile (built once, pinned). A verify-time download is a flaky dependency and, through a
    tool the agent could have replaced, a way to forge the result. Shared-mode tasks are left out, as in the
    template: their test.sh must install into the agent's container (``separate-verifier`` flags that mode)."""
    if not task.config.verifier.separate:
        return []
    found = []
    for script in task_scripts(task):
        if script.kind != "test":
            continue
        hits = [f for f in filter(None, map(fetches, script.commands))]
        if hits:
            kinds = sorted({f.what for f in hits})
            found.append(StaticFinding("trial-network-fetch", 2,
                f"{script.path.name} fetches at verify time ({', '.join(kinds)}) although the verifier has its "
                "own image: bake these into tests/Dockerfile", _lines(task, script.path, [f.command.line for f in hits])))
    return found


def _lines(task: HarborTask, path, lines: list[int]) -> tuple:
    """Evidence at each distinct line (two commands on one line are one quote)."""
    return tuple(evidence(task, path, n) for n in dict.fromkeys(lines))
