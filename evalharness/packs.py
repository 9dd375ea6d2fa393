"""Task packs: a manifest (pack.yaml) plus tasks, one JSON object per line.

Loading validates everything up front; a malformed pack raises one TaskPackError that names
the file, the line or task, the field and the problem, and nothing runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalharness.errors import TaskPackError
from evalharness.grading.parsers import PARSERS
from evalharness.types import TaskSpec, Timeouts

MANIFEST_NAMES = ("pack.yaml", "pack.yml")


class PypiSdistSource(BaseModel):
    """The repository is a PyPI source distribution, fetched by name and pinned version at build time."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["pypi_sdist"]
    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    sha256: str | None = None
    """Expected sha256 of the sdist archive; the build fails if it differs."""


class GitSource(BaseModel):
    """The repository is cloned at build time (host network) and checked out at ``ref``."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["git"]
    url: str = Field(min_length=1)
    ref: str = "HEAD"


class PathSource(BaseModel):
    """A local directory (or git work tree), relative to the pack folder, copied into the image."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["path"]
    path: str = Field(min_length=1)


Source = Annotated[Union[PypiSdistSource, GitSource, PathSource], Field(discriminator="kind")]


class EnvironmentSpec(BaseModel):
    """How to build the environment image: base + repository + dependencies."""

    model_config = ConfigDict(extra="forbid")
    base: str = "bookworm"
    """Name of the base image recipe (see `evalharness sandbox bootstrap`)."""
    source: Source
    pip: list[str] = Field(default_factory=list)
    """Requirements installed into the image's virtualenv (/opt/venv), pinned."""
    setup: list[str] = Field(default_factory=list)
    """Shell commands run in the work tree at build time (network available), e.g. 'pip install -e .'."""
    workdir: str = "/testbed"


class PackSpec(BaseModel):
    """The manifest of a task pack (pack.yaml)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    version: str | int
    description: str = ""
    environment: EnvironmentSpec
    tasks: str = "tasks.jsonl"
    """Path of the JSONL task file, relative to the pack folder."""
    test_command: str = Field(min_length=1)
    """Shell command run in the work tree; placeholders {test_files} and {junit_xml}."""
    log_parser: str = "junit"
    """Name of a parser in evalharness.grading.parsers."""
    timeouts: Timeouts = Field(default_factory=Timeouts)

    @field_validator("log_parser")
    @classmethod
    def _known_parser(cls, value: str) -> str:
        if value not in PARSERS:
            raise ValueError(f"unknown log parser {value!r}; known: {', '.join(sorted(PARSERS))}")
        return value


class Pack(BaseModel):
    """A loaded, validated pack."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    spec: PackSpec
    tasks: list[TaskSpec]
    root: Path
    content_hash: str

    @property
    def name(self) -> str:
        return self.spec.name

    def task(self, instance_id: str) -> TaskSpec:
        for t in self.tasks:
            if t.instance_id == instance_id:
                return t
        raise KeyError(instance_id)


def _format_errors(err: ValidationError, data: Any = None) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        got = ""
        if "input" in e and e["type"] not in ("missing",) and not isinstance(e["input"], (dict, list)):
            got = f" (got {e['input']!r})"
        lines.append(f"{loc}: {e['msg']}{got}")
    return "\n  ".join(lines)


def find_manifest(path: Path) -> Path:
    """Accept a pack folder or its manifest file."""
    path = Path(path)
    if path.is_file():
        return path
    for name in MANIFEST_NAMES:
        if (path / name).is_file():
            return path / name
    if path.with_suffix(".yaml").is_file():
        return path.with_suffix(".yaml")
    raise TaskPackError(f"no task pack at {path}", f"expected {path}/pack.yaml (a folder with a manifest and tasks.jsonl)")


def load_spec(manifest: Path) -> PackSpec:
    try:
        raw = yaml.safe_load(manifest.read_text())
    except yaml.YAMLError as e:
        raise TaskPackError(f"task pack {manifest} is not valid YAML", str(e).replace("\n", " ")) from e
    if not isinstance(raw, dict):
        raise TaskPackError(f"task pack {manifest} is invalid", "expected a mapping of manifest fields")
    try:
        return PackSpec.model_validate(raw)
    except ValidationError as e:
        raise TaskPackError(f"task pack {manifest} is invalid", _format_errors(e)) from e


def load_tasks(path: Path) -> list[TaskSpec]:
    if not path.is_file():
        raise TaskPackError(f"task file {path} does not exist", "the manifest's 'tasks' field names it")
    tasks: list[TaskSpec] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskPackError(f"{path} line {lineno}: not valid JSON", f"{e.msg} at column {e.colno}") from e
        if not isinstance(raw, dict):
            raise TaskPackError(f"{path} line {lineno}: expected a JSON object, got {type(raw).__name__}")
        where = f"{path} line {lineno} (task {raw.get('instance_id', '?')})"
        try:
            task = TaskSpec.model_validate(raw)
        except ValidationError as e:
            raise TaskPackError(f"{where} is invalid", _format_errors(e)) from e
        if task.instance_id in seen:
            raise TaskPackError(f"{where}: instance_id: duplicate of line {seen[task.instance_id]}")
        seen[task.instance_id] = lineno
        tasks.append(task)
    if not tasks:
        raise TaskPackError(f"{path} holds no tasks")
    return tasks


def load_pack(path: str | Path) -> Pack:
    """Load and validate a pack from its folder or manifest path."""
    manifest = find_manifest(Path(path))
    spec = load_spec(manifest)
    tasks_path = (manifest.parent / spec.tasks).resolve()
    tasks = load_tasks(tasks_path)
    digest = hashlib.sha256(manifest.read_bytes() + b"\0" + tasks_path.read_bytes()).hexdigest()
    return Pack(spec=spec, tasks=tasks, root=manifest.parent.resolve(), content_hash=digest)
