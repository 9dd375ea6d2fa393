"""Plain data shared by every layer: tasks, trials, outcomes, agent results, usage.

Vocabulary (one word per concept): a *pack* holds *tasks*; a *harness* drives a *model*;
a *trial* is one task x harness x model x seed; a *run* is a set of trials.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Outcome(str, Enum):
    """Why a trial ended the way it did. Never a bare bool."""

    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    NO_PATCH = "no_patch"  # the harness submitted an empty patch
    PATCH_APPLY_FAILED = "patch_apply_failed"
    TESTS_TIMED_OUT = "tests_timed_out"
    TEST_RUN_ERROR = "test_run_error"  # the test command could not run the tests (collection error, crash)
    BUDGET_EXHAUSTED = "budget_exhausted"
    HARNESS_ERROR = "harness_error"
    PATCH_REJECTED = "patch_rejected"  # the change touches what no fix may touch (.git/, submodules): not resolved
    PATCH_TOO_LARGE = "patch_too_large"  # the change is over the pack's cap: an outcome, never a silent cut
    TAMPERED = "tampered"  # the test run shows signs of forgery (canaries wrong or missing, runner replaced)
    SANDBOX_ERROR = "sandbox_error"  # Docker failed: infrastructure, not the agent
    INFRA_ERROR = "infra_error"  # image build or other infrastructure failure
    MODEL_UNAVAILABLE = "model_unavailable"  # the model endpoint failed for good (unreachable, timeouts, 5xx, 429)
    TASK_ERROR = "task_error"  # the task itself is broken (image cannot be built, gold patch does not apply)
    VERIFIER_ERROR = "verifier_error"  # a Harbor verifier gave no valid reward (missing, malformed, timed out)

    @property
    def is_infra(self) -> bool:
        """Infrastructure failures are retried and reported apart, never counted as agent failures. A model
        endpoint that stopped answering is one (evalharness.models.unavailable decides when it did)."""
        return self in (Outcome.SANDBOX_ERROR, Outcome.INFRA_ERROR, Outcome.MODEL_UNAVAILABLE)

    @property
    def is_task_error(self) -> bool:
        """The task is broken: neither the agent's failure nor infrastructure; named loudly, left out of rates."""
        return self is Outcome.TASK_ERROR

    @property
    def counts_in_rate(self) -> bool:
        """Every outcome the agent is answerable for (tampered and rejected patches included)."""
        return not (self.is_infra or self.is_task_error or self is Outcome.VERIFIER_ERROR)

    @property
    def resolved(self) -> bool:
        return self is Outcome.RESOLVED


def _json_list(value: Any) -> Any:
    """SWE-bench stores test lists as JSON strings; accept both forms."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"expected a list of test ids or a JSON string of one ({e.msg})") from e
    return value


NON_TEST_SUFFIXES = (".json", ".png", ".csv", ".txt", ".md", ".rst", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml",
                     ".toml", ".cfg", ".ini")
"""Files a test patch may touch that are data, not tests to run (SWE-bench leaves out the same kinds)."""


def patch_test_files(test_patch: str) -> list[str]:
    """The files a test patch changes that hold tests (``b/`` side of each ``diff --git``; deleted files skipped)."""
    files = []
    for match in re.finditer(r"^diff --git a/(\S+) b/(\S+)$", test_patch, re.M):
        path = match.group(2)
        if not path.lower().endswith(NON_TEST_SUFFIXES) and path not in files:
            files.append(path)
    deleted = set(re.findall(r"^--- a/(\S+)\n\+\+\+ /dev/null$", test_patch, re.M))
    return sorted(f for f in files if f not in deleted)


class TaskSpec(BaseModel):
    """One task: a superset of the SWE-bench instance schema."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    instance_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    """Unique within the pack; used in paths, so letters, digits, '.', '_' and '-' only."""
    repo: str = ""
    """Where the code comes from (e.g. 'boltons' or 'owner/name'); the environment recipe says how to fetch it."""
    base_commit: str = ""
    """Upstream commit the task starts from; empty when the source has no history (an sdist)."""
    problem_statement: str = Field(min_length=1)
    """What the agent is told: a bug report or feature request, with no solution in it."""
    patch: str = ""
    """Gold patch that solves the task."""
    test_patch: str = ""
    """Diff of test files applied before grading; every file it touches is restored from the task."""
    defect_patch: str = ""
    """Injected defect applied on top of the source before the sandbox's single commit is made."""
    FAIL_TO_PASS: list[str] = Field(min_length=1)
    """Tests that fail before the gold patch and pass after it."""
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    """Tests that pass before and after; they catch regressions."""
    created_at: str = ""
    version: str = ""
    environment_setup_commit: str = ""
    hints_text: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form: difficulty, category, origin, cluster key ('repo') for clustered intervals."""

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _parse_test_lists(cls, value: Any) -> Any:
        return _json_list(value)

    @property
    def test_files(self) -> list[str]:
        """Files holding the FAIL_TO_PASS and PASS_TO_PASS tests: from pytest node ids ('path::name'), else (ids
        without a path, as SymPy's and Django's) the files the test patch touches, as SWE-bench's harness runs."""
        files = {t.split("::", 1)[0] for t in self.FAIL_TO_PASS + self.PASS_TO_PASS if "::" in t}
        return sorted(files) if files else patch_test_files(self.test_patch)


class Timeouts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_s: float = Field(default=1800, gt=0)
    """Wall-clock limit for the harness on one trial."""
    tests_s: float = Field(default=600, gt=0)
    """Wall-clock limit for one run of the test command during grading."""
    build_s: float = Field(default=1800, gt=0)
    """Wall-clock limit for building one image."""
    exec_s: float = Field(default=120, gt=0)
    """Default limit for one command the agent runs in the sandbox."""


class Usage(BaseModel):
    """Model usage of one call or summed over a trial. cost_usd None means unknown, never 0."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0
    latency_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: "Usage") -> "Usage":
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=cost,
            calls=self.calls + other.calls,
            latency_s=self.latency_s + other.latency_s,
        )


class Budget(BaseModel):
    """Per-trial limits a harness must respect. None means no limit."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_wall_s: float | None = Field(default=None, gt=0)


class ModelEndpoint(BaseModel):
    """A model as a harness sees it: a litellm model string plus where and how to call it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """litellm model string, e.g. 'openai/gpt-4o' or 'anthropic/claude-sonnet-4-5'."""
    api_base: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the key (the value is never stored)."""
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0
    num_retries: int = 3
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    training_cutoff: str | None = None
    """The last date (YYYY-MM-DD, or an ISO 8601 time) of the model's training data, as its maker states it;
    reports split this model's score into tasks created on or before it and after it (stats/cutoff.py)."""
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("training_cutoff", mode="before")
    @classmethod
    def _a_date(cls, value: Any) -> str | None:
        if isinstance(value, (date, datetime)):  # YAML reads 2024-04-30 as a date
            return value.isoformat()
        if value is not None:
            text = str(value).strip()
            try:
                datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
            except ValueError:
                raise ValueError(f"not a date (got {value!r}; give YYYY-MM-DD or an ISO 8601 time)") from None
            return text
        return value

    @property
    def label(self) -> str:
        return self.name


class Flag(str, Enum):
    """Evidence a trial carries next to its outcome; counted per configuration in every report."""

    TAMPERED = "tampered"  # canaries wrong or missing, runner replaced, run did not reach its end
    TOUCHED_TESTS = "touched_tests"  # the patch changed a test file of the task (restored before grading)
    TOUCHED_CONFIG = "touched_config"  # the patch changed test-runner configuration or extensions (neutralised)
    RESTORE_FAILED = "restore_failed"  # the graded tree could not be built (grading/restore.py decides whose failure)
    PATCH_REJECTED = "patch_rejected"  # the patch touched .git/, a submodule entry, or a path outside the tree
    PATCH_TOO_LARGE = "patch_too_large"
    OUTCOME_CHOSEN_BY_CODE = "outcome_chosen_by_code"  # a required test was skipped/xfailed from code under test
    SUSPICIOUS_CODE = "suspicious_code"  # the patch adds code that reaches for the runner, frames, gc or /proc
    COMPILED_ARTEFACT = "compiled_artefact"  # bytecode or a binary module the patch adds: removed before the run
    CHANGED_OUTSIDE_WORKDIR = "changed_outside_workdir"  # a Harbor agent changed files outside its work directory
    CHANGED_TOOLCHAIN = "changed_toolchain"  # ... among them what a verifier runs (PATH, interpreters, shell start-up)


OUTCOME_FLAGS = frozenset({Flag.TAMPERED.value, Flag.PATCH_REJECTED.value, Flag.PATCH_TOO_LARGE.value})
"""Outcomes that are flags by themselves: a trial with such an outcome counts under that flag."""


NO_MODEL = "none"
"""Model label of harnesses that call no model (oracle, null)."""


class AgentResult(BaseModel):
    """What a harness returns for one trial."""

    model_config = ConfigDict(extra="forbid")

    patch: str = ""
    exit_status: str = "submitted"
    """Harness's own word: submitted, budget_exhausted, error, ..."""
    error: str | None = None
    trajectory: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    budget_exhausted: str | None = None
    """Which budget ended the trial, if one did."""


@runtime_checkable
class Harness(Protocol):
    """A harness drives a model in a live sandbox to produce a patch.

    ``run`` may raise HarnessError (ends the trial as HARNESS_ERROR) or SandboxError
    (infrastructure: retried). ``config`` returns the knobs recorded in the run snapshot.
    """

    name: str

    def config(self) -> dict[str, Any]: ...

    def run(
        self,
        task: TaskSpec,
        sandbox: "SandboxLike",
        model: ModelEndpoint | None,
        *,
        seed: int,
        budget: Budget,
    ) -> AgentResult: ...


class ExecResult(BaseModel):
    exit_code: int
    output: str
    timed_out: bool = False
    duration_s: float = 0.0


class SandboxLike(Protocol):
    """What a harness may do with a sandbox (see evalharness.sandbox.base.Sandbox)."""

    workdir: str

    def exec(self, command: str, *, timeout: float | None = None, env: dict[str, str] | None = None,
             user: str | None = None, workdir: str | None = None) -> ExecResult: ...

    def write_file(self, path: str, content: str | bytes) -> None: ...

    def read_file(self, path: str) -> bytes: ...

    def diff(self) -> str: ...


TRIAL_COLUMNS = [
    "run_id", "pack", "task_id", "model", "harness", "config", "seed", "outcome", "resolved",
    "infra", "cost_usd", "input_tokens", "output_tokens", "total_tokens", "duration_s",
    "started_at", "repo", "flags",
]
"""Columns of the tidy trials DataFrame the statistics layer consumes (one row per trial).

``flags`` holds a tuple (or list) of Flag values per trial (an absent column means no trial is flagged)."""
