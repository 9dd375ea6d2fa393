"""``command``: run a CLI agent installed in the trial image, sealed, its model reached through a relay.

The install steps become an image tier (environment -> harness -> task, built once per content
hash). At run time the harness writes the problem statement, the in-container forwarder and
two scripts into the trial's shared folder (mounted read-only at ``/run/evalharness``), starts a
:class:`~evalharness.relay.ModelRelay` on a unix socket there, and runs the command template as
the non-root user in the work tree. The agent holds a placeholder key; the relay adds the real
one on the host. The patch is ``sandbox.diff()`` afterwards; the trajectory is the relayed model
calls, the command's output and the agent's own log files, truncated and redacted.
Placeholders and knobs: docs/harnesses.md, "CLI agents (command kind)".
"""

from __future__ import annotations

import os
import re
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalharness.errors import BudgetExhausted, ConfigError, EvalHarnessError, HarnessError
from evalharness.models.client import configured_key
from evalharness.models.unavailable import MODEL_UNAVAILABLE, from_relay_calls
from evalharness.redact import redact, secrets_of
from evalharness.relay import Ledger, ModelRelay, forwarder_source, upstream_of
from evalharness.templating import fill as render
from evalharness.trajectory import Recorder, truncate
from evalharness.types import AgentResult, Budget, ModelEndpoint, SandboxLike, TaskSpec

SHARED_DIR = "/run/evalharness"
"""Container path of the trial's shared folder: problem statement, forwarder, relay socket."""
PLACEHOLDER_KEY = "sk-evalharness-placeholder-key"
"""The only key an agent ever sees; the relay replaces it with the real one on the host."""
READY_FILE = "/tmp/.evalharness-relay-ready"
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.:/@+=,\-]*$")


class CommandConfig(BaseModel):
    """Knobs of a ``kind: command`` harness file (every one is recorded in the run snapshot)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    command: str = Field(min_length=1)
    """Shell command run in the work tree as the non-root user; ``{placeholders}`` are filled in."""
    install: list[str] = Field(default_factory=list)
    """Image build steps (shell commands, or ``ENV ...`` lines), run as root with network at build time only."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment of the agent; values may use placeholders."""
    after: list[str] = Field(default_factory=list)
    """Commands run in the work tree after the agent, before the diff (e.g. remove the agent's cache files)."""
    logs: list[str] = Field(default_factory=list)
    """Files (globs, placeholders allowed) the agent writes; kept in the trajectory as notes."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Limit of the agent's run; None: the trial's wall budget."""
    port: int = Field(default=4000, gt=1023, lt=65536)
    """Port of the forwarder on the container's loopback."""
    key_header: str = "auto"
    """Header the relay adds when the agent sends no key: authorization | x-api-key | auto (by provider)."""
    output_limit: int = Field(default=20_000, gt=0)
    """Characters of the command output and of each log file kept (head + tail)."""
    version: str = ""
    """The agent's version, for the record (the install steps pin it)."""
    model: bool = True
    """False: the command calls no model and runs without --model (a scripted agent, e.g. an adversarial test);
    run on Harbor packs only so far (sources/harbor/run/agent.py), elsewhere a harness error."""
    description: str = ""


class CommandHarness:
    """A CLI agent run inside the sandbox; its model calls go through a relay that only reaches the endpoint."""

    uses_model = True

    def __init__(self, **knobs: Any):
        try:
            self.settings = CommandConfig(**knobs)
        except ValueError as e:
            raise ConfigError(f"command harness {knobs.get('name', '?')}: {e}") from e
        self.name = self.settings.name
        self.uses_model = self.settings.model

    def config(self) -> dict[str, Any]:
        return {"kind": "command", **self.settings.model_dump()}

    def image_layer(self) -> list[str]:
        return list(self.settings.install)

    def sandbox_options(self) -> dict[str, Any]:
        return {"shared_dirs": [SHARED_DIR]}

    def run(self, task: TaskSpec, sandbox: SandboxLike, model: ModelEndpoint | None, *, seed: int,
            budget: Budget) -> AgentResult:
        if model is None:
            raise HarnessError(f"harness {self.name} needs a model: pass --model")
        host_dir = _shared_dir(sandbox, self.name)
        key = configured_key(model)
        secrets = sorted({*secrets_of(model), *([key] if key else [])}, key=len, reverse=True)
        ledger, recorder = Ledger(model, budget), Recorder(self.settings.output_limit)
        upstream = upstream_of(model.name, model.api_base)
        values = self._values(task, sandbox.workdir, model, seed, budget, upstream)
        self._write_scripts(host_dir, task, values)
        relay = ModelRelay(upstream, host_dir / "model.sock", ledger, api_key=key,
                           key_header=self._key_header(model), timeout_s=model.timeout_s)
        try:
            with relay:
                result = self._run_agent(sandbox, values, ledger, recorder)
            return self._finish(sandbox, result, values, ledger, recorder, relay.refused, secrets)
        except EvalHarnessError as e:  # keep what was spent and seen
            e.usage = ledger.usage  # type: ignore[attr-defined]
            e.trajectory = redact(_steps(recorder, ledger), secrets)  # type: ignore[attr-defined]
            raise

    # setting up ------------------------------------------------------------------------------
    def _values(self, task: TaskSpec, workdir: str, model: ModelEndpoint, seed: int, budget: Budget,
                upstream: str) -> dict[str, str]:
        provider, _, bare = model.name.rpartition("/")
        relay_url = f"http://127.0.0.1:{self.settings.port}"
        prefix = re.sub(r"^[a-z]+://[^/]+", "", upstream).rstrip("/")
        values = {"problem_file": f"{SHARED_DIR}/problem.md", "workdir": workdir,
                  "model": model.name, "model_name": bare, "provider": provider, "base_url": relay_url + prefix,
                  "relay_url": relay_url, "api_key": PLACEHOLDER_KEY, "port": str(self.settings.port),
                  "log_dir": "/tmp/agent-logs", "step_limit": str(budget.max_steps or 0),
                  "cost_limit": f"{budget.max_cost_usd or 0:g}", "seed": str(seed), "instance_id": task.instance_id}
        unsafe = {k: v for k, v in values.items() if not _SAFE_VALUE.match(v)}
        if unsafe:
            raise ConfigError(f"harness {self.name}: values unsafe to put in a shell command: {unsafe}")
        return values

    def _key_header(self, model: ModelEndpoint) -> str:
        if self.settings.key_header != "auto":
            return self.settings.key_header
        return "x-api-key" if model.name.startswith("anthropic/") else "authorization"

    def _write_scripts(self, host_dir: Path, task: TaskSpec, values: dict[str, str]) -> None:
        wrapper = "\n".join([
            "#!/bin/bash", "# written by evalharness: start the model forwarder, run the agent, stop the forwarder",
            f"mkdir -p {values['log_dir']}; rm -f {READY_FILE}",
            f"python3 {SHARED_DIR}/forward.py {values['port']} {SHARED_DIR}/model.sock {READY_FILE} &",
            "forwarder=$!",
            f"for _ in $(seq 200); do [ -e {READY_FILE} ] && break; sleep 0.05; done",
            f"cd {values['workdir']}", f"bash {SHARED_DIR}/agent.sh", "status=$?",
            "kill $forwarder 2>/dev/null", "exit $status", ""])
        files = {"problem.md": task.problem_statement, "forward.py": forwarder_source().decode(),
                 "run.sh": wrapper, "agent.sh": render(self.settings.command, values) + "\n"}
        for name, text in files.items():
            (host_dir / name).write_text(text)
            os.chmod(host_dir / name, 0o644)

    # running ---------------------------------------------------------------------------------
    def _run_agent(self, sandbox: SandboxLike, values: dict[str, str], ledger: Ledger, recorder: Recorder) -> Any:
        env = {"HOME": "/home/agent", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
               **{k: render(v, values) for k, v in self.settings.env.items()}}
        timeout = self.settings.timeout_s or _remaining(sandbox)
        done = threading.Event()
        watcher = threading.Thread(target=_stop_when_refused, args=(sandbox, ledger, done), daemon=True)
        watcher.start()
        started = recorder.start()
        try:
            result = sandbox.exec(f"bash {SHARED_DIR}/run.sh", timeout=timeout, env=env)
        finally:
            done.set()
            watcher.join(timeout=15)
        recorder.command(started, render(self.settings.command, values), result.exit_code, result.output,
                         result.timed_out)
        return result

    def _finish(self, sandbox: SandboxLike, result: Any, values: dict[str, str], ledger: Ledger,
                recorder: Recorder, refused: list[str], secrets: list[str]) -> AgentResult:
        if ledger.error is not None:
            raise ledger.error
        unavailable = None if ledger.exhausted else from_relay_calls(  # a budget that ended it wins
            ledger.calls, upstream_of(ledger.endpoint.name, ledger.endpoint.api_base),
            ended_well=result.exit_code == 0 and not result.timed_out)
        past_deadline = _remaining(sandbox) <= 0
        if result.timed_out and past_deadline and unavailable is None:
            raise BudgetExhausted("wall_s", getattr(sandbox, "wall_budget", 0.0), getattr(sandbox, "wall_budget", 0.0))
        for command in self.settings.after:
            sandbox.exec(render(command, values), timeout=60)
        self._collect_logs(sandbox, values, recorder)
        if refused:
            recorder.note("the relay refused requests that aimed elsewhere than the model endpoint", refused=refused)
        if ledger.refused:
            recorder.note(f"budget reached: {ledger.exhausted}", refused_calls=ledger.refused)
        if unavailable is not None:
            recorder.note(unavailable.reason, attempts=unavailable.attempts)
        patch = sandbox.diff()
        usage = ledger.usage
        steps = redact(_steps(recorder, ledger), secrets)
        if unavailable is not None:  # infrastructure: not graded, retried by run --resume
            return AgentResult(patch=patch, exit_status=MODEL_UNAVAILABLE, trajectory=steps, usage=usage,
                               error=redact(unavailable.reason, secrets))
        which = ledger.exhausted.which if ledger.exhausted else ("timeout_s" if result.timed_out else None)
        if which is None and result.exit_code != 0 and not _answered(ledger):
            raise HarnessError(f"harness {self.name}: the agent exited {result.exit_code} without a successful "
                               f"model call\n  output (tail): {redact(result.output[-600:], secrets)}")
        status = "budget_exhausted" if which else ("submitted" if result.exit_code == 0 else f"exit_{result.exit_code}")
        return AgentResult(patch=patch, exit_status=status, trajectory=steps, usage=usage, budget_exhausted=which,
                           error=None if result.exit_code == 0 else f"agent exited {result.exit_code}")

    def _collect_logs(self, sandbox: SandboxLike, values: dict[str, str], recorder: Recorder) -> None:
        limit = self.settings.output_limit
        for pattern in self.settings.logs:
            listing = sandbox.exec(f"for f in {render(pattern, values)}; do [ -f \"$f\" ] && echo \"$f\"; done",
                                   timeout=30)
            for path in listing.output.split():
                text = sandbox.exec(f"head -c {4 * limit} {shlex.quote(path)}", timeout=30).output
                recorder.note(f"agent log {path}", path=path, content=truncate(text, limit))


def _shared_dir(sandbox: SandboxLike, name: str) -> Path:
    getter = getattr(sandbox, "shared_dir", None)
    if getter is None:
        raise HarnessError(f"harness {name} needs a Docker sandbox with a shared folder at {SHARED_DIR} "
                           "(started with the harness's sandbox_options())")
    return getter(SHARED_DIR)


def _remaining(sandbox: SandboxLike) -> float:
    deadline = getattr(sandbox, "deadline", None)
    return 3600.0 if deadline is None else deadline - time.monotonic()


def _stop_when_refused(sandbox: SandboxLike, ledger: Ledger, done: threading.Event) -> None:
    """Once the relay refuses a call (budget), end every process of the agent's user in the sandbox."""
    while not done.wait(0.5):
        if ledger.exhausted is not None or ledger.error is not None:
            try:
                sandbox.exec("kill -KILL -1", timeout=10)
            except EvalHarnessError:
                pass
            return


def _answered(ledger: Ledger) -> bool:
    return any(call["status"] < 400 for call in ledger.calls)


def _steps(recorder: Recorder, ledger: Ledger) -> list[dict[str, Any]]:
    """Command and note steps plus the relayed model calls, in time order, indexed."""
    steps = sorted([*recorder.steps, *ledger.calls], key=lambda s: s["t_start"])
    return [{**step, "index": i} for i, step in enumerate(steps)]


__all__ = ["CommandHarness", "CommandConfig", "PLACEHOLDER_KEY", "SHARED_DIR", "render"]
