"""Task packs: a manifest (pack.yaml) plus tasks, one JSON object per line.

Loading validates everything up front; a malformed pack raises one TaskPackError that names
the file, the line or task, the field and the problem, and nothing runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalharness.errors import TaskError, TaskPackError
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
    base: str | None = None
    """Name of the base image recipe (see `evalharness sandbox bootstrap`); default: the base whose Python is
    ``python``, else bookworm."""
    python: str | None = None
    """The Python version the environment needs ("3.9"); picks the base that ships it."""
    source: Source
    apt: list[str] = Field(default_factory=list)
    """Debian packages installed from the base's mirror before anything else (compilers, libraries)."""
    pip: list[str] = Field(default_factory=list)
    """Requirements installed into the image's virtualenv (/opt/venv), pinned."""
    setup: list[str] = Field(default_factory=list)
    """Shell commands run in the work tree at build time (network available), e.g. 'pip install -e .'."""
    task_setup: list[str] = Field(default_factory=list)
    """Shell commands run as root in each task image's work tree at the task's base commit (its git history still
    there, network available at build time), before the commit is packed: e.g. the project installed again from
    the base's own files, so its metadata (``__version__``) is the base's, not that of the environment's ``ref``."""
    workdir: str = "/testbed"


class BaseSpec(BaseModel):
    """A base image a pack adds to the built-in ones: a Debian suite with a Python, bootstrapped or pulled."""

    model_config = ConfigDict(extra="forbid")
    suite: str = Field(min_length=1)
    python: str = Field(min_length=1)
    """The ``python3`` version the suite ships, e.g. "3.12"."""
    packages: list[str] = Field(default_factory=list)
    """Extra Debian packages beyond the built-in minimum (python3, python3-venv, git, ca-certificates, patch)."""
    official_image: str = ""
    """Image pulled where a registry answers (default debian:<suite>-slim)."""


class HarborSpec(BaseModel):
    """Where a Harbor pack keeps its task directories, overlays and base map (``packs import harbor``)."""

    model_config = ConfigDict(extra="forbid")
    tasks_dir: str = "harbor-tasks"
    """Folder of the task directories, one per task (named by the task's instance_id)."""
    overlays: str | None = None
    """Folder of ``<task>/*.patch`` unified diffs applied to a copy of each task at build time."""
    base_map: str | None = None
    """YAML file of image pattern -> local image that extends the built-in base map."""


class PackSpec(BaseModel):
    """The manifest of a task pack (pack.yaml)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    version: str | int
    description: str = ""
    kind: Literal["tasks", "harbor"] = "tasks"
    """``harbor``: every task is a Harbor task directory (docs/task-format.md, "Harbor tasks")."""
    harbor: HarborSpec | None = None
    environment: EnvironmentSpec | None = None
    """The one environment of every task; a pack of many repositories gives ``recipes`` instead."""
    recipes: str | None = None
    """Folder (relative to the pack) of environment recipe tables, one YAML file per repository; each task
    takes the recipe of its (repo, version). See docs/task-format.md."""
    repo_mirror: str | None = None
    """Folder of bare repositories named owner__name.git that git sources are cloned from instead of the network
    (the environment variable EVALHARNESS_REPO_MIRROR overrides it)."""
    bases: dict[str, BaseSpec] = Field(default_factory=dict)
    """Base images this pack adds to the built-in ones (bullseye, bookworm, trixie)."""
    tasks: str = "tasks.jsonl"
    """Path of the JSONL task file, relative to the pack folder."""
    test_command: str | None = Field(default=None, min_length=1)
    """Shell command run in the work tree; placeholders {test_files} and {junit_xml}."""
    log_parser: str = "junit"
    """Name of a parser in evalharness.grading.parsers (checked by the grader, `grading.parsers.check_names`)."""
    runner_files: list[str] = Field(default_factory=list)
    """Files of the test runner in the work tree (e.g. SymPy's bin/test and runtests.py) that the grader
    restores to the base commit before the tests run, as it does test files: an agent cannot rewrite the
    program that reports its results. Matters for unguarded test commands."""
    timeouts: Timeouts = Field(default_factory=Timeouts)

    @model_validator(mode="after")
    def _one_way_to_environments(self) -> "PackSpec":
        if self.kind == "harbor":
            if self.environment is not None or self.recipes is not None or self.harbor is None:
                raise ValueError("a harbor pack gives 'harbor' (its task directories), not environment or recipes")
            return self
        if self.harbor is not None:
            raise ValueError("'harbor' needs kind: harbor")
        if self.recipes is None:
            if self.environment is None:
                raise ValueError("give either environment (one for every task) or recipes (a folder of tables)")
            if self.test_command is None:
                raise ValueError("test_command is required with environment")
        elif self.environment is not None:
            raise ValueError("give environment or recipes, not both")
        return self


class Recipe(BaseModel):
    """One environment of a recipe table: what its image holds and how its tests run."""

    model_config = ConfigDict(extra="forbid")
    python: str | None = None
    base: str | None = None
    apt: list[str] = Field(default_factory=list)
    pip: list[str] = Field(default_factory=list)
    """Pinned requirements installed before the repository's own install."""
    pre_install: list[str] = Field(default_factory=list)
    """Shell commands run in the work tree before ``install`` (e.g. loosening a pin in setup.py)."""
    install: list[str] = Field(default_factory=list)
    """Shell commands that install the repository at its environment commit (e.g. 'python -m pip install -e .')."""
    test_command: str | None = None
    log_parser: str | None = None
    runner_files: list[str] = Field(default_factory=list)
    """Files of the test runner the grader restores to base before the tests run (see PackSpec.runner_files)."""
    timeouts: dict[str, float] = Field(default_factory=dict)
    """Overrides of the pack's timeouts for this environment (agent_s, tests_s, build_s, exec_s)."""


class RecipeTable(BaseModel):
    """The recipes of one repository, keyed by the task's ``version`` (one YAML file)."""

    model_config = ConfigDict(extra="forbid")
    repo: str = Field(min_length=1)
    """owner/name, as the tasks' ``repo`` field spells it."""
    url: str = Field(min_length=1)
    """Where the repository is cloned from when no mirror holds it."""
    source: str = ""
    """Where the facts come from (attribution)."""
    defaults: Recipe = Field(default_factory=Recipe)
    versions: dict[str, Recipe] = Field(default_factory=dict)
    """Each version's recipe: its fields replace the defaults' (a list replaces the list)."""
    unsupported: dict[str, str] = Field(default_factory=dict)
    """Versions with no recipe, each with the reason."""

    @field_validator("versions", "unsupported", mode="before")
    @classmethod
    def _string_keys(cls, value: Any) -> Any:
        return {str(k): v for k, v in value.items()} if isinstance(value, dict) else value

    def recipe(self, version: str) -> Recipe | str:
        """The merged recipe of ``version``, or the reason there is none."""
        if version in self.unsupported:
            return self.unsupported[version]
        if version not in self.versions:
            known = ", ".join(sorted(self.versions)) or "none"
            return f"no recipe for {self.repo} version {version!r} (recipes exist for: {known})"
        merged = {**self.defaults.model_dump(exclude_unset=True), **self.versions[version].model_dump(exclude_unset=True)}
        recipe = Recipe.model_validate(merged)
        if recipe.test_command is None:
            return f"recipe {self.repo} {version} has no test_command"
        return recipe


MIRROR_ENV = "EVALHARNESS_REPO_MIRROR"


def mirror_name(repo: str) -> str:
    """``owner/name`` -> ``owner__name`` (SWE-bench's spelling, and the mirror's folder name without .git)."""
    return repo.strip().replace("/", "__")


class Pack(BaseModel):
    """A loaded, validated pack."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    spec: PackSpec
    tasks: list[TaskSpec]
    root: Path
    content_hash: str
    tables: dict[str, RecipeTable] = Field(default_factory=dict)
    """Recipe tables by repository (packs with ``recipes``)."""

    @property
    def name(self) -> str:
        return self.spec.name

    def task(self, instance_id: str) -> TaskSpec:
        for t in self.tasks:
            if t.instance_id == instance_id:
                return t
        raise KeyError(instance_id)

    def environment_key(self, task: TaskSpec) -> str:
        """Which environment ``task`` runs in: "default", or "owner__name-version" for a recipe pack."""
        return "default" if self.spec.recipes is None else f"{mirror_name(task.repo)}-{task.version}".lower()

    def recipe_problem(self, task: TaskSpec) -> str | None:
        """Why ``task`` has no environment, or None when it has one."""
        if self.spec.recipes is None:
            return None
        table = self.tables.get(task.repo)
        if table is None:
            return f"no recipe table for repository {task.repo!r} in {self.spec.recipes}/"
        found = table.recipe(task.version)
        return found if isinstance(found, str) else None

    def mirror(self) -> Path | None:
        where = os.environ.get(MIRROR_ENV) or self.spec.repo_mirror
        return (self.root / where).resolve() if where else None

    def spec_for(self, task: TaskSpec) -> PackSpec:
        """The manifest as ``task`` sees it: one environment, its test command and parser (TaskError if none)."""
        if self.spec.recipes is None:
            return self.spec
        key = (task.repo, task.version, task.environment_setup_commit or task.base_commit)
        cache = self.__dict__.setdefault("_specs", {})
        if key not in cache:
            problem = self.recipe_problem(task)
            if problem is not None:
                raise TaskError(f"task {task.instance_id}: {problem}",
                                f"add the version to {self.spec.recipes}/{mirror_name(task.repo)}.yaml", reason=problem)
            table = self.tables[task.repo]
            recipe = table.recipe(task.version)
            assert isinstance(recipe, Recipe)
            url = table.url
            mirror = self.mirror()
            if mirror is not None and (mirror / f"{mirror_name(task.repo)}.git").exists():
                url = str(mirror / f"{mirror_name(task.repo)}.git")
            ref = task.environment_setup_commit or task.base_commit or "HEAD"
            env = EnvironmentSpec(base=recipe.base, python=recipe.python, apt=recipe.apt,
                                  source=GitSource(kind="git", url=url, ref=ref),
                                  pip=recipe.pip, setup=[*recipe.pre_install, *recipe.install])
            timeouts = self.spec.timeouts.model_copy(update=recipe.timeouts)
            cache[key] = self.spec.model_copy(update={
                "environment": env, "recipes": None, "test_command": recipe.test_command,
                "log_parser": recipe.log_parser or self.spec.log_parser, "timeouts": timeouts,
                "runner_files": [*self.spec.runner_files, *recipe.runner_files]})
        return cache[key]

    def log_parsers(self) -> set[str]:
        """Every parser name the pack uses (the grader checks them: grading.parsers.check_names)."""
        names = {self.spec.log_parser}
        for table in self.tables.values():
            for recipe in [table.defaults, *table.versions.values()]:
                if recipe.log_parser:
                    names.add(recipe.log_parser)
        return names


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
        raise TaskPackError(f"{path} holds no tasks",
                            "add tasks: evalharness packs add-task PACK ..., packs mine, packs inject, or by hand "
                            "(docs/task-format.md)")
    return tasks


def load_tables(folder: Path) -> dict[str, RecipeTable]:
    """Every recipe table of a pack's ``recipes`` folder, by repository (one YAML file per repository)."""
    if not folder.is_dir():
        raise TaskPackError(f"recipe folder {folder} does not exist", "the manifest's 'recipes' field names it")
    tables: dict[str, RecipeTable] = {}
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            raw = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            raise TaskPackError(f"recipe table {path} is not valid YAML", str(e).replace("\n", " ")) from e
        if not isinstance(raw, dict):
            raise TaskPackError(f"recipe table {path} is invalid", "expected a mapping with repo, url and versions")
        try:
            table = RecipeTable.model_validate(raw)
        except ValidationError as e:
            raise TaskPackError(f"recipe table {path} is invalid", _format_errors(e)) from e
        if table.repo in tables:
            raise TaskPackError(f"recipe table {path}: repository {table.repo} already has a table in {folder}")
        tables[table.repo] = table
    return tables


def load_pack(path: str | Path) -> Pack:
    """Load and validate a pack from its folder or manifest path."""
    manifest = find_manifest(Path(path))
    spec = load_spec(manifest)
    tasks_path = (manifest.parent / spec.tasks).resolve()
    tasks = load_tasks(tasks_path)
    parts = [manifest.read_bytes(), tasks_path.read_bytes()]
    tables: dict[str, RecipeTable] = {}
    if spec.recipes is not None:
        folder = (manifest.parent / spec.recipes).resolve()
        tables = load_tables(folder)
        parts += [p.name.encode() + b"\0" + p.read_bytes() for p in sorted(folder.glob("*.y*ml"))]
    if spec.harbor is not None:
        parts += harbor_parts(manifest.parent, spec.harbor, tasks)
    digest = hashlib.sha256(b"\0".join(parts)).hexdigest()
    return Pack(spec=spec, tasks=tasks, root=manifest.parent.resolve(), content_hash=digest, tables=tables)


def tree_parts(folder: Path) -> list[bytes]:
    """Every file under ``folder`` as name, mode and bytes (sorted): a task directory's share of a hash."""
    parts = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix().encode()
        parts.append(rel + b"\0" + oct(path.stat().st_mode & 0o777).encode() + b"\0" + path.read_bytes())
    return parts


def harbor_parts(root: Path, harbor: HarborSpec, tasks: list[TaskSpec]) -> list[bytes]:
    """What a Harbor pack's hash covers beyond its manifest and task file: task directories, overlays, base map."""
    parts = []
    for task in tasks:
        folder = root / harbor.tasks_dir / task.instance_id
        if not folder.is_dir():
            raise TaskPackError(f"task {task.instance_id}: no task directory {folder}",
                                f"pack.yaml harbor.tasks_dir names the folder holding one directory per task")
        parts += [b"task\0" + task.instance_id.encode(), *tree_parts(folder)]
    if harbor.overlays and (root / harbor.overlays).is_dir():
        parts += [b"overlays", *tree_parts(root / harbor.overlays)]
    if harbor.base_map:
        path = root / harbor.base_map
        if not path.is_file():
            raise TaskPackError(f"pack.yaml harbor.base_map: {path} does not exist")
        parts += [b"base-map\0" + path.read_bytes()]
    return parts
