"""``mini-swe-agent``: the real mini-swe-agent package (``DefaultAgent`` + ``LitellmModel``) on the host,
its commands executed in evalharness's sandbox, so our limits and network policy apply.

mini-swe-agent's environments are duck-typed (``execute``, ``get_template_vars``, ``serialize``):
``SandboxEnvironment`` runs each action through ``sandbox.exec`` instead of its own container.
The agent's config is the one its ``mini`` command uses (``mini.yaml``, or ``mini_textbased.yaml``
in text mode), read from the installed package, with the run's step and cost limits. Model calls
go through its ``LitellmModel``, with evalharness's retry rule (transient errors retried with
backoff, the rest abort: evalharness.models.failures), usage and cost accounting, and budgets.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import shutil
import tempfile
import threading
import time
from typing import Any, Literal

import yaml

from evalharness.errors import ConfigError, EvalHarnessError, HarnessError
from evalharness.models import BudgetTracker, ModelClient
from evalharness.models._litellm import load_litellm
from evalharness.trajectory import Recorder, from_mini_swe_messages
from evalharness.types import AgentResult, Budget, ModelEndpoint, SandboxLike, TaskSpec, Usage

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_CONFIG_BY_MODE = {"tools": "mini.yaml", "text": "mini_textbased.yaml"}


_import_lock = threading.Lock()
_imported: dict[str, Any] = {}


def _mini() -> Any:
    """Import mini-swe-agent quietly, its global config (and .env) in a fresh temp dir, its retries off.

    Returns its ``agents.default`` module. The settings are process-wide: mini-swe-agent reads
    them at import (config dir, banner) and at each model call (retries).
    """
    with _import_lock:
        if "default" not in _imported:
            config_dir = tempfile.mkdtemp(prefix="evalharness-mswea-")
            atexit.register(shutil.rmtree, config_dir, ignore_errors=True)
            os.environ.update(MSWEA_SILENT_STARTUP="1", MSWEA_GLOBAL_CONFIG_DIR=config_dir,
                              MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT="1")  # we retry, not its tenacity loop
            load_litellm()
            from minisweagent.agents import default

            logging.getLogger("minisweagent").setLevel(logging.WARNING)
            _imported["default"] = default
        return _imported["default"]


class SandboxEnvironment:
    """A mini-swe-agent environment whose commands run in an evalharness sandbox (fresh shell each)."""

    def __init__(self, sandbox: SandboxLike, *, env: dict[str, str], timeout: float):
        self.sandbox, self.env, self.timeout = sandbox, dict(env), timeout
        self.config = {"cwd": sandbox.workdir, "env": self.env, "timeout": timeout}
        uname = sandbox.exec("uname -s; uname -r; uname -v; uname -m", timeout=30).output.splitlines()
        self._uname = dict(zip(("system", "release", "version", "machine"), uname + [""] * 4))

    def execute(self, action: dict, cwd: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        from minisweagent.exceptions import Submitted

        command, (t_start, t0) = action.get("command", ""), Recorder.start()
        result = self.sandbox.exec(command, timeout=timeout or self.timeout, env=self.env, workdir=cwd or None)
        info = {"command": command, "t_start": t_start, "duration_s": round(time.monotonic() - t0, 3),
                "timed_out": result.timed_out}
        lines = result.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT_MARKER and result.exit_code == 0:
            submission = "".join(lines[1:])
            raise Submitted({"role": "exit", "content": submission, "extra": {
                "exit_status": "Submitted", "submission": submission, "raw_output": result.output, "returncode": 0,
                **info}})
        exception = f"the command timed out after {timeout or self.timeout:g} s" if result.timed_out else ""
        return {"output": result.output, "returncode": result.exit_code, "exception_info": exception, "extra": info}

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {**self.config, **self._uname, **kwargs}

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"environment": self.config,
                                    "environment_type": f"{__name__}.{type(self).__name__}"}}}


class _Calls:
    """One trial's model accounting: retries, usage and cost per call (ModelClient), budget."""

    def __init__(self, endpoint: ModelEndpoint, tracker: BudgetTracker):
        self.endpoint, self.tracker = endpoint, tracker
        self.client = ModelClient(endpoint)
        self.last: Usage | None = None

    def key(self) -> str | None:
        return self.client.api_key()

    def call(self, query: Any) -> Any:
        """``query()`` with transient failures retried; its usage is recorded against the budget."""
        response, usage = self.client.call(query)
        self.tracker.record(usage)
        self.last = usage
        return response


@functools.cache
def _model_class(text: bool) -> type:
    """LitellmModel (or its text-based variant) with evalharness's retries, accounting and budget check."""
    from minisweagent.exceptions import FormatError, LimitsExceeded
    from minisweagent.models.litellm_model import LitellmModel
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    class EvalModel(LitellmTextbasedModel if text else LitellmModel):  # type: ignore[misc,valid-type]
        def __init__(self, *, calls: _Calls, **kwargs: Any):
            super().__init__(**kwargs)
            self.calls = calls

        def _query(self, messages: list[dict], **kwargs: Any) -> Any:
            return self.calls.call(lambda: super(EvalModel, self)._query(messages, **kwargs))

        def query(self, messages: list[dict], **kwargs: Any) -> dict:
            reached = self.calls.tracker.exhausted()
            if reached is not None:
                raise LimitsExceeded({"role": "exit", "content": "LimitsExceeded", "extra": {
                    "exit_status": "LimitsExceeded", "submission": "", "budget": reached.which}})
            started, self.calls.last = Recorder.start(), None
            try:
                message = super().query(messages, **kwargs)
            except FormatError as e:
                self._annotate(e.messages[0], started, len(messages))
                raise
            return self._annotate(message, started, len(messages))

        def _annotate(self, message: dict, started: tuple[str, float], messages_in: int) -> dict:
            usage = self.calls.last or Usage(cost_usd=None)
            extra = message.setdefault("extra", {})
            extra["cost"] = usage.cost_usd or 0.0  # what DefaultAgent adds up for its own cost_limit
            extra["evalharness"] = {"t_start": started[0], "duration_s": round(time.monotonic() - started[1], 3),
                                    "messages_in": messages_in, "usage": usage.model_dump()}
            return message

    return EvalModel


class MiniSweAgentHarness:
    """mini-swe-agent's DefaultAgent, its config as shipped, commands in the evalharness sandbox."""

    uses_model = True

    def __init__(self, name: str = "mini-swe-agent", tool_mode: Literal["tools", "text"] = "tools",
                 config_file: str | None = None, command_timeout_s: float = 60.0, output_limit: int = 10_000,
                 pass_seed: bool = True):
        if tool_mode not in _CONFIG_BY_MODE:
            raise ConfigError(f"tool_mode {tool_mode!r} unknown; choose 'tools' or 'text'")
        self.name, self.tool_mode, self.config_file = name, tool_mode, config_file or _CONFIG_BY_MODE[tool_mode]
        self.command_timeout_s, self.output_limit, self.pass_seed = command_timeout_s, output_limit, pass_seed

    def config(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {"kind": "mini-swe-agent", "tool_mode": self.tool_mode, "config_file": self.config_file,
                "command_timeout_s": self.command_timeout_s, "output_limit": self.output_limit,
                "pass_seed": self.pass_seed, "mini_swe_agent_version": version("mini-swe-agent")}

    def _mini_config(self) -> dict[str, Any]:
        from minisweagent.config import get_config_path

        return yaml.safe_load(get_config_path(self.config_file).read_text())

    def run(self, task: TaskSpec, sandbox: SandboxLike, model: ModelEndpoint | None, *, seed: int,
            budget: Budget) -> AgentResult:
        if model is None:
            raise HarnessError(f"harness {self.name} needs a model: pass --model")
        default = _mini()
        config, tracker = self._mini_config(), BudgetTracker(budget)
        calls = _Calls(model, tracker)
        agent_config = {k: v for k, v in config.get("agent", {}).items() if k in default.AgentConfig.model_fields}
        agent_config.update(step_limit=budget.max_steps or 0, cost_limit=budget.max_cost_usd or 0.0, output_path=None)
        agent = None
        try:
            env = SandboxEnvironment(sandbox, env=config.get("environment", {}).get("env", {}),
                                     timeout=self.command_timeout_s)
            agent_model = _model_class(self.tool_mode == "text")(calls=calls, **self._model_config(config, calls, seed))
            agent = default.DefaultAgent(agent_model, env, **agent_config)
            return self._result(agent.run(task.problem_statement), agent, sandbox, tracker)
        except Exception as e:
            error = e if isinstance(e, EvalHarnessError) else HarnessError(
                f"mini-swe-agent stopped with {type(e).__name__}: {e}")
            error.usage = tracker.usage  # type: ignore[attr-defined]
            error.trajectory = self._trajectory(agent)  # type: ignore[attr-defined]
            if error is e:
                raise
            raise error from e

    def _model_config(self, config: dict[str, Any], calls: _Calls, seed: int) -> dict[str, Any]:
        ep = calls.endpoint
        kwargs = {**config.get("model", {}).get("model_kwargs", {}), "timeout": ep.timeout_s, "num_retries": 0,
                  "max_retries": 0, "drop_params": True}
        optional = {"api_base": ep.api_base, "api_key": calls.key(), "temperature": ep.temperature,
                    "seed": ep.seed if ep.seed is not None else (seed if self.pass_seed else None),
                    "max_tokens": ep.max_tokens}
        kwargs.update({k: v for k, v in optional.items() if v is not None}, **ep.extra.get("completion_kwargs", {}))
        model_config = {k: v for k, v in config.get("model", {}).items() if k != "model_kwargs"}
        return {**model_config, "model_name": ep.name, "model_kwargs": kwargs, "cost_tracking": "ignore_errors",
                "litellm_model_registry": None}

    def _trajectory(self, agent: Any) -> list[dict[str, Any]]:
        return from_mini_swe_messages(agent.messages if agent else [], self.output_limit)

    def _result(self, info: dict, agent: Any, sandbox: SandboxLike, tracker: BudgetTracker) -> AgentResult:
        status = info.get("exit_status", "")
        base = {"patch": sandbox.diff(), "trajectory": self._trajectory(agent), "usage": tracker.usage}
        if status == "Submitted":
            return AgentResult(exit_status="submitted", **base)
        if status in ("LimitsExceeded", "TimeExceeded"):
            reached = tracker.exhausted()
            which = info.get("budget") or (reached.which if reached else "max_steps")
            return AgentResult(exit_status="budget_exhausted", budget_exhausted=which,
                               error=f"mini-swe-agent: {status} ({which})", **base)
        if status == "RepeatedFormatError":  # the model's failure, graded like any other submission
            return AgentResult(exit_status="format_error", error="mini-swe-agent: repeated format errors", **base)
        return AgentResult(exit_status="error", error=f"mini-swe-agent ended with exit status {status!r}", **base)
