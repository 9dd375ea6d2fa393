"""``minimal``: a small agent loop on the host that runs its commands in the sandbox.

The model gets the problem statement and acts through ``bash(command)`` and ``submit()``
tools (``tool_mode: tools``) or, for models without tool calling, one fenced ```bash block
per reply and a submit marker (``tool_mode: text``, mini-swe-agent's v1 format). Every command
runs in a fresh shell in the work tree. The patch is ``sandbox.diff()`` at submit; when a
budget ends the loop first, the diff is kept but the outcome is budget_exhausted.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from evalharness.errors import BudgetExhausted, ConfigError, HarnessError
from evalharness.models import BudgetTracker, ModelClient
from evalharness.trajectory import Recorder, tool_calls_of, truncate
from evalharness.types import AgentResult, Budget, ModelEndpoint, SandboxLike, TaskSpec

SUBMIT_MARKER = "SUBMIT_FINAL_ANSWER"
TOOLS = [
    {"type": "function", "function": {
        "name": "bash", "description": "Run a bash command in the repository; returns its exit code and output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "submit", "description": "Submit the changes in the work tree as the final answer.",
        "parameters": {"type": "object", "properties": {}}}},
]
PROMPTS = {
    "default": (
        "You are a careful software engineer fixing an issue in the repository at {workdir}.\n"
        "Read the relevant code, make the smallest change that fixes the issue, and check it.\n"
        "Each command runs in a fresh shell in {workdir}; there is no network access.\n{how}"),
    "terse": "Fix the issue in the repository at {workdir}.\n{how}",
    "audit": (  # evalharness.audit.investigator: the user's message is the investigation prompt
        "You are auditing a benchmark task in the repository at {workdir}; you are not asked to fix it.\n"
        "Follow the instructions in the user's message and check every claim with commands.\n"
        "Each command runs in a fresh shell in {workdir}; there is no network access.\n{how}\n"
        "Here the fix is your verdict: submit once it is written."),
}
HOW = {
    "tools": "Use the bash tool to run commands. When the fix is complete, call the submit tool.",
    "text": (f"Reply with exactly one fenced ```bash block holding one command per message.\n"
             f"When the fix is complete, reply with the line {SUBMIT_MARKER} and no bash block."),
}
_BASH_BLOCK = re.compile(r"```bash[^\n]*\n(.*?)```", re.DOTALL)


class MinimalHarness:
    """A readable reference agent: a loop of model call, command, observation, until submit or a budget."""

    uses_model = True

    def __init__(self, name: str = "minimal", prompt_variant: str = "default",
                 tool_mode: Literal["tools", "text"] = "tools", max_steps: int | None = None,
                 output_limit: int = 10_000, command_timeout_s: float = 60.0, pass_seed: bool = True):
        if prompt_variant not in PROMPTS:
            raise ConfigError(f"prompt_variant {prompt_variant!r} unknown; choose one of {sorted(PROMPTS)}")
        if tool_mode not in HOW:
            raise ConfigError(f"tool_mode {tool_mode!r} unknown; choose 'tools' or 'text'")
        self.name, self.prompt_variant, self.tool_mode = name, prompt_variant, tool_mode
        self.max_steps, self.output_limit, self.command_timeout_s = max_steps, output_limit, command_timeout_s
        self.pass_seed = pass_seed

    def config(self) -> dict[str, Any]:
        return {"kind": "minimal", "prompt_variant": self.prompt_variant, "tool_mode": self.tool_mode,
                "max_steps": self.max_steps, "output_limit": self.output_limit,
                "command_timeout_s": self.command_timeout_s, "pass_seed": self.pass_seed}

    def run(self, task: TaskSpec, sandbox: SandboxLike, model: ModelEndpoint | None, *, seed: int,
            budget: Budget) -> AgentResult:
        if model is None:
            raise HarnessError(f"harness {self.name} needs a model: pass --model")
        if self.max_steps is not None:  # the harness's own cap never loosens the run's budget
            budget = budget.model_copy(update={"max_steps": min(self.max_steps, budget.max_steps or self.max_steps)})
        tracker, recorder = BudgetTracker(budget), Recorder(self.output_limit)
        try:
            return self._loop(task, sandbox, ModelClient(model), self._params(model, seed), tracker, recorder)
        except Exception as e:  # budget, model API, sandbox failure or a bug: keep what was spent and seen
            e.usage, e.trajectory = tracker.usage, recorder.steps  # type: ignore[attr-defined]
            raise

    def _params(self, model: ModelEndpoint, seed: int) -> dict[str, Any]:
        return {"seed": seed} if self.pass_seed and model.seed is None else {}

    def _loop(self, task: TaskSpec, sandbox: SandboxLike, client: ModelClient, params: dict[str, Any],
              tracker: BudgetTracker, recorder: Recorder) -> AgentResult:
        system = PROMPTS[self.prompt_variant].format(workdir=sandbox.workdir, how=HOW[self.tool_mode])
        messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                          {"role": "user", "content": task.problem_statement}]
        tools = TOOLS if self.tool_mode == "tools" else None
        while True:
            reached = tracker.exhausted()
            if reached is not None:
                return self._finish(sandbox, tracker, recorder, budget_reached=reached)
            started = recorder.start()
            message, usage = client.complete(messages, tools, **params)
            tracker.record(usage)
            recorder.model(started, len(messages), message, usage)
            messages.append(message)
            replies, submitted = self._act(message, sandbox, recorder)
            messages.extend(replies)
            if submitted:
                return self._finish(sandbox, tracker, recorder)

    def _act(self, message: dict[str, Any], sandbox: SandboxLike, recorder: Recorder) -> tuple[list[dict], bool]:
        """Run the message's actions; return (messages to send back, whether it submitted)."""
        if self.tool_mode == "text":
            return self._act_text(message.get("content") or "", sandbox, recorder)
        calls = message.get("tool_calls") or []
        if not calls:
            return [{"role": "user", "content": "Call the bash tool to run a command, or submit when done."}], False
        replies = []
        for call, parsed in zip(calls, tool_calls_of(message)):
            name, arguments = parsed["name"], parsed["arguments"]
            if name == "submit":
                return replies, True
            if name == "bash" and isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
                result = self._execute(arguments["command"], sandbox, recorder)
            else:
                result = f"error: unknown tool {name!r} or missing 'command' argument; tools: bash(command), submit()"
            replies.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return replies, False

    def _act_text(self, content: str, sandbox: SandboxLike, recorder: Recorder) -> tuple[list[dict], bool]:
        blocks = _BASH_BLOCK.findall(content)
        if not blocks and SUBMIT_MARKER in content:
            return [], True
        if len(blocks) != 1:
            recorder.note("format error", blocks=len(blocks))
            return [{"role": "user", "content": f"Format error: found {len(blocks)} ```bash blocks; send exactly "
                                                f"one, or the line {SUBMIT_MARKER} alone to submit."}], False
        return [{"role": "user", "content": self._execute(blocks[0].strip(), sandbox, recorder)}], False

    def _execute(self, command: str, sandbox: SandboxLike, recorder: Recorder) -> str:
        started = recorder.start()
        result = sandbox.exec(command, timeout=self.command_timeout_s)
        recorder.command(started, command, result.exit_code, result.output, result.timed_out)
        note = f" (timed out after {self.command_timeout_s:g} s)" if result.timed_out else ""
        return f"exit code {result.exit_code}{note}\n{truncate(result.output, self.output_limit)}"

    def _finish(self, sandbox: SandboxLike, tracker: BudgetTracker, recorder: Recorder,
                budget_reached: BudgetExhausted | None = None) -> AgentResult:
        patch = sandbox.diff()
        if budget_reached is None:
            recorder.note("submitted", patch_lines=len(patch.splitlines()))
            return AgentResult(patch=patch, exit_status="submitted", trajectory=recorder.steps, usage=tracker.usage)
        recorder.note(str(budget_reached), budget=budget_reached.which)
        return AgentResult(patch=patch, exit_status="budget_exhausted", budget_exhausted=budget_reached.which,
                           error=str(budget_reached), trajectory=recorder.steps, usage=tracker.usage)
