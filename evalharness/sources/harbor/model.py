"""A Harbor task directory read as data (pure: files in, models out; no Docker).

The layout and every task.toml field follow Harbor's published format up to schema 1.4 (the shared
research material's FORMAT.md names a source for each). Harbor itself needs Python 3.12 or newer, so its own
models cannot be imported here; these mirror them field by field. Nothing is dropped silently: a key this
model does not know is kept and reported by ``HarborTask.unknown_fields``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalharness.errors import UserError

SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*$", re.IGNORECASE)
_MB = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


class _Table(BaseModel):
    """A task.toml table: known fields typed, unknown keys kept (``model_extra``) so they can be named."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def unknown(self, prefix: str) -> list[str]:
        """Dotted names of the keys this table does not know, its sub-tables' included."""
        names = [f"{prefix}{key}" for key in (self.model_extra or {})]
        for name, value in self:
            items = value if isinstance(value, list) else [value]
            for i, item in enumerate(items):
                if isinstance(item, _Table):
                    where = f"{name}[{i}]" if isinstance(value, list) else name
                    names += item.unknown(f"{prefix}{where}.")
        return names


class Author(_Table):
    name: str = ""
    email: str = ""


class TaskIdentity(_Table):
    """``[task]``: the package identity (2026-03 on; older tasks have none)."""

    name: str | None = None
    description: str = ""
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    version: str | None = None


class Healthcheck(_Table):
    command: str
    interval_sec: float = 5.0
    timeout_sec: float = 30.0
    start_period_sec: float = 0.0
    start_interval_sec: float = 5.0
    retries: int = 3


class McpServer(_Table):
    name: str
    transport: Literal["sse", "streamable-http", "stdio"] = "stdio"
    url: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)


NetworkMode = Literal["public", "no-network", "allowlist"]


class Environment(_Table):
    """``[environment]`` (also the shape of ``[verifier.environment]``)."""

    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    cpus: int = 1
    memory_mb: int = 2048
    storage_mb: int = 10240
    gpus: int = 0
    gpu_types: list[str] | None = None
    allow_internet: bool = True
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    mcp_servers: list[McpServer] = Field(default_factory=list)
    skills_dir: str | None = None
    healthcheck: Healthcheck | None = None
    os: Literal["linux", "windows"] = "linux"
    workdir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _deprecated_sizes(cls, data: Any) -> Any:
        """``memory = "2G"`` / ``storage = "10G"`` (deprecated) become ``memory_mb`` / ``storage_mb``."""
        if isinstance(data, dict):
            data = dict(data)
            for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
                if old in data and new not in data:
                    data[new] = _megabytes(data.pop(old), old)
        return data

    def network(self) -> NetworkMode:
        """The phase's network: ``network_mode``, else ``allowlist`` when hosts are given, else from
        ``allow_internet``."""
        if self.network_mode:
            return self.network_mode
        if self.allowed_hosts:
            return "allowlist"
        return "public" if self.allow_internet else "no-network"


class Verifier(_Table):
    timeout_sec: float = 600.0
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    environment_mode: Literal["shared", "separate"] | None = None
    environment: Environment | None = None
    collect: list[Any] = Field(default_factory=list)

    @model_validator(mode="after")
    def _mode(self) -> Verifier:
        if self.environment_mode == "shared" and self.environment is not None:
            raise ValueError('environment_mode = "shared" cannot have a [verifier.environment] table')
        return self

    @property
    def separate(self) -> bool:
        """A fresh verifier sandbox (``separate``, or implied by a ``[verifier.environment]`` table)."""
        return self.environment_mode == "separate" or (self.environment_mode is None and self.environment is not None)


class Agent(_Table):
    timeout_sec: float | None = None
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)


class Solution(_Table):
    env: dict[str, str] = Field(default_factory=dict)


class StepAgent(_Table):
    timeout_sec: float | None = None


class StepVerifier(_Table):
    timeout_sec: float | None = None
    env: dict[str, str] = Field(default_factory=dict)
    environment_mode: Literal["shared", "separate"] | None = None
    environment: Environment | None = None


class Step(_Table):
    name: str
    min_reward: float | None = None
    agent: StepAgent = Field(default_factory=StepAgent)
    verifier: StepVerifier = Field(default_factory=StepVerifier)
    healthcheck: Healthcheck | None = None
    artifacts: list[str] = Field(default_factory=list)


class TaskConfig(_Table):
    """task.toml."""

    schema_version: str = "1.1"
    source: str | None = None
    artifacts: list[str] = Field(default_factory=list)
    task: TaskIdentity | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: Verifier = Field(default_factory=Verifier)
    agent: Agent = Field(default_factory=Agent)
    solution: Solution = Field(default_factory=Solution)
    environment: Environment = Field(default_factory=Environment)
    steps: list[Step] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _legacy_version(cls, data: Any) -> Any:
        """Older tasks write ``version = "1.0"``: Harbor's loader reads it as ``schema_version``."""
        if isinstance(data, dict) and "version" in data and "schema_version" not in data:
            data = dict(data)
            data["schema_version"] = str(data.pop("version"))
        return data

    @field_validator("schema_version", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return str(value)


class HarborTask(BaseModel):
    """One task directory: its config and where its parts are (paths inside ``root``)."""

    model_config = ConfigDict(frozen=True)

    root: Path
    config: TaskConfig
    instruction: str

    @property
    def name(self) -> str:
        """``[task].name`` when given (``org/name``), else the directory's name."""
        return (self.config.task.name if self.config.task and self.config.task.name else self.root.name)

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def dockerfile(self) -> Path | None:
        path = self.environment_dir / "Dockerfile"
        return path if path.is_file() else None

    @property
    def compose_file(self) -> Path | None:
        for name in ("docker-compose.yaml", "docker-compose.yml"):
            if (self.environment_dir / name).is_file():
                return self.environment_dir / name
        return None

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def test_script(self) -> Path | None:
        path = self.tests_dir / ("test.bat" if self.config.environment.os == "windows" else "test.sh")
        return path if path.is_file() else None

    @property
    def verifier_dockerfile(self) -> Path | None:
        """``tests/Dockerfile``: the verifier image's recipe in separate mode."""
        path = self.tests_dir / "Dockerfile"
        return path if self.config.verifier.separate and path.is_file() else None

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def solve_script(self) -> Path | None:
        path = self.solution_dir / ("solve.bat" if self.config.environment.os == "windows" else "solve.sh")
        return path if path.is_file() else None

    def unknown_fields(self) -> list[str]:
        """task.toml keys this model does not know (``[metadata]`` is free-form and never counts)."""
        return self.config.unknown("")

    @classmethod
    def load(cls, root: Path) -> HarborTask:
        """Read the task directory at ``root``; UserError naming the file and the field when it is not a task."""
        root = Path(root)
        toml_path, instruction_path = root / "task.toml", root / "instruction.md"
        if not toml_path.is_file():
            raise UserError(f"{root}: not a Harbor task directory (no task.toml)",
                            "a task directory holds task.toml, instruction.md, environment/ and tests/")
        try:
            data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"{toml_path}: not valid TOML: {e}") from e
        try:
            config = TaskConfig.model_validate(data)
        except ValidationError as e:
            raise UserError(f"{toml_path}: {_first_error(e)}") from e
        instruction = instruction_path.read_text(encoding="utf-8") if instruction_path.is_file() else ""
        if not instruction and not config.steps:
            raise UserError(f"{root}: no instruction.md", "the agent's prompt is instruction.md in the task directory")
        return cls(root=root, config=config, instruction=instruction)


def is_task_dir(path: Path) -> bool:
    return (Path(path) / "task.toml").is_file()


def _megabytes(value: Any, field: str) -> int:
    if isinstance(value, (int, float)):
        return int(value)
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"{field} = {value!r} is not a size such as \"2G\"")
    return max(1, round(float(match.group(1)) * _MB[match.group(2).upper()]))


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "task.toml"
    return f"{where}: {err['msg']} (and {e.error_count() - 1} more)" if e.error_count() > 1 else f"{where}: {err['msg']}"
