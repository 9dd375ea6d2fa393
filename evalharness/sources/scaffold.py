"""A backlog pack for your own repository: ``packs new`` detects its environment (``docs/backlog.md``).

``detect`` is pure: from the tracked files of the repository at one commit (their paths, and a reader
of a few small configuration files) it decides the Python, how the project installs, where its tests
live and how pytest runs them, each with the reason. ``render_manifest`` writes that as a
``pack.yaml`` whose comments say why each value was chosen, for the user to edit.

Nothing is read but tracked files at the commit (``git ls-tree`` / ``git show``), which is also what
a task image holds: a local repository reaches the engine as a git bundle, and the build removes
the build metadata the install left in the work tree (``CLEAN_STEP``: untracked ``*.egg-info`` and
``build/``), so no file list of another commit (an ``.egg-info``'s ``SOURCES.txt`` naming later files)
reaches a task. What the tests need from the install (a generated ``_version.py``, compiled
extensions) is kept.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from evalharness.errors import UserError

BASES = (("bookworm", "3.11"), ("trixie", "3.13"), ("bullseye", "3.9"))
"""Built-in bases in order of preference: the first whose Python the project accepts is chosen."""
PYTEST_PIN = "pytest==8.3.5"
CLEAN_STEP = "git clean -xdfq -- '*.egg-info' '*.egg-info/' build"
"""Removes untracked build metadata of the environment's commit (never tracked files, version files or extensions)."""
TEST_EXTRAS = ("test", "tests", "testing", "dev")
PLUGINS = {  # distribution -> the module `-p` loads (plugin autoloading is off in graded runs)
    "pytest-asyncio": "pytest_asyncio.plugin", "pytest-mock": "pytest_mock", "pytest-timeout": "pytest_timeout",
    "pytest-xdist": "xdist.plugin", "pytest-cov": "pytest_cov.plugin", "pytest-benchmark": "pytest_benchmark.plugin",
    "pytest-django": "pytest_django.plugin", "hypothesis": "hypothesis.extra.pytestplugin",
    "anyio": "anyio.pytest_plugin", "syrupy": "syrupy", "pytest-subtests": "pytest_subtests",
}
CONFIG_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", "tox.ini", ".python-version")
NOT_PACKAGES = {"tests", "test", "docs", "doc", "examples", "example", "scripts", "benchmarks", "tools", "build",
                "dist", ".github", "ci"}
NOT_MODULES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py", "manage.py", "docs.py"}
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")

Reader = Callable[[str], "str | None"]


@dataclass
class Choice:
    """One detected value and why."""

    value: object
    reason: str


@dataclass
class Detected:
    """What ``packs new`` found in a repository, each value with its reason (``pack.yaml`` comments)."""

    python: Choice
    base: str
    layout: Choice          # "src" | "flat" | "module" | "none"
    tests: Choice           # "tests-folder" | "in-package" | "top-level" | "none"
    runner: Choice          # "pytest"
    install: Choice         # shell commands (setup)
    pip: Choice             # pinned requirements installed first
    plugins: Choice         # modules for -p
    pythonpath: Choice      # "" or "src" (a src layout that is not installed)
    notes: list[str] = field(default_factory=list)

    @property
    def test_command(self) -> str:
        extra = [f"-p {p}" for p in self.plugins.value] + ([f"-o pythonpath={self.pythonpath.value}"]
                                                           if self.pythonpath.value else [])
        return " ".join(["python -m pytest -rfEsxXp -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit_xml}",
                         *extra, "{test_files}"])


def detect(files: list[str], read: Reader) -> Detected:
    """The environment of a repository from its tracked ``files`` at one commit; ``read(path)`` gives a file's
    text (None when absent). Pure: no file system, no network."""
    pyproject = _toml(read("pyproject.toml"))
    setup_cfg = _ini(read("setup.cfg"))
    setup_py = read("setup.py") or ""
    python, base = _python(pyproject, setup_cfg, setup_py, read(".python-version"))
    installable = _installable(files, pyproject, setup_cfg)
    extras = _test_extras(pyproject, setup_cfg)
    requirements = _requirement_files(files)
    test_deps = _test_dependencies(pyproject, setup_cfg, extras, requirements, read)
    layout = _layout(files)
    return Detected(
        python=python, base=base, layout=layout, tests=_tests(files), runner=_runner(files, pyproject, setup_cfg, read),
        install=_install(installable, extras, requirements), pip=_pip(test_deps), plugins=_plugins(test_deps),
        pythonpath=Choice("src", "a src/ layout that is not installed: pytest is told where the package is")
        if layout.value == "src" and not installable.value else Choice("", "not needed"),
        notes=_notes(files))


# --- Python ------------------------------------------------------------------------------------

def _python(pyproject: dict, setup_cfg: configparser.ConfigParser, setup_py: str,
            pinned: str | None) -> tuple[Choice, str]:
    spec, where = _requires_python(pyproject, setup_cfg, setup_py)
    if pinned and pinned.strip():
        want = ".".join(pinned.strip().split(".")[:2])
        for base, version in BASES:
            if version == want:
                return Choice(version, f".python-version says {pinned.strip()}"), base
    if spec is None:
        return Choice("3.11", "no requires-python found: the default base's Python"), "bookworm"
    try:
        accepted = SpecifierSet(spec)
    except InvalidSpecifier:
        return Choice("3.11", f"requires-python {spec!r} in {where} cannot be read: the default"), "bookworm"
    for base, version in BASES:
        if accepted.contains(f"{version}.0", prereleases=True) or accepted.contains(f"{version}.99"):
            return Choice(version, f"requires-python {spec!r} in {where} accepts it (built-in bases: "
                                   + ", ".join(f"{v} ({b})" for b, v in BASES) + ")"), base
    return (Choice("3.11", f"requires-python {spec!r} in {where} accepts no built-in base's Python "
                           "(3.9, 3.11, 3.13): add a base under 'bases:' in pack.yaml"), "bookworm")


def _requires_python(pyproject: dict, setup_cfg: configparser.ConfigParser,
                     setup_py: str) -> tuple[str | None, str]:
    if pyproject.get("project", {}).get("requires-python"):
        return str(pyproject["project"]["requires-python"]), "pyproject.toml"
    if setup_cfg.has_option("options", "python_requires"):
        return setup_cfg.get("options", "python_requires").strip(), "setup.cfg"
    match = re.search(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]", setup_py)
    return (match.group(1), "setup.py") if match else (None, "")


# --- install -----------------------------------------------------------------------------------

def _installable(files: list[str], pyproject: dict, setup_cfg: configparser.ConfigParser) -> Choice:
    if "build-system" in pyproject or "project" in pyproject:
        return Choice(True, "pyproject.toml declares " + ("a build system" if "build-system" in pyproject
                                                          else "a [project]"))
    if "setup.py" in files:
        return Choice(True, "setup.py")
    if setup_cfg.has_section("metadata") or setup_cfg.has_section("options"):
        return Choice(True, "setup.cfg has [metadata]/[options]")
    return Choice(False, "no pyproject.toml build metadata, setup.py or setup.cfg")


def _test_extras(pyproject: dict, setup_cfg: configparser.ConfigParser) -> list[str]:
    declared = set(pyproject.get("project", {}).get("optional-dependencies", {}))
    if setup_cfg.has_section("options.extras_require"):
        declared |= set(setup_cfg.options("options.extras_require"))
    return [name for name in TEST_EXTRAS if name in declared][:1]


def _requirement_files(files: list[str]) -> list[str]:
    """Requirements files for tests: test ones first (requirements-test.txt, requirements/tests.txt,
    test-requirements.txt), else dev or CI ones, else requirements.txt."""
    candidates = []
    for path in files:
        name = PurePosixPath(path)
        if name.suffix != ".txt" or len(name.parts) > 2 or (len(name.parts) == 2 and name.parts[0] != "requirements"):
            continue
        if len(name.parts) == 2 or "requirements" in name.stem.lower():
            candidates.append(path)
    for words in (("test",), ("dev", "ci")):
        found = sorted(p for p in candidates if any(w in PurePosixPath(p).stem.lower() for w in words))
        if found:
            return found
    return ["requirements.txt"] if "requirements.txt" in files else []


def _install(installable: Choice, extras: list[str], requirements: list[str]) -> Choice:
    steps = [f"python -m pip install -r {r}" for r in requirements]
    reasons = [f"{', '.join(requirements)} found"] if requirements else []
    if installable.value:
        target = f".[{extras[0]}]" if extras else "."
        steps.append(f"python -m pip install -e '{target}'")
        reasons.append(f"installable ({installable.reason})" + (f" with its '{extras[0]}' extra" if extras else ""))
    if steps:
        steps.append(CLEAN_STEP)
        reasons.append("then the build metadata it left in the work tree (an .egg-info listing this commit's files) "
                       "is removed, so no task sees the file list of a later commit")
    return Choice(steps, "; ".join(reasons) or "nothing to install: the tests import the work tree")


def _test_dependencies(pyproject: dict, setup_cfg: configparser.ConfigParser, extras: list[str],
                       requirements: list[str], read: Reader) -> list[str]:
    deps = list(pyproject.get("project", {}).get("dependencies", []))
    for extra in extras:
        deps += pyproject.get("project", {}).get("optional-dependencies", {}).get(extra, [])
        if setup_cfg.has_option("options.extras_require", extra):
            deps += setup_cfg.get("options.extras_require", extra).split("\n")
    for group in TEST_EXTRAS:
        deps += [d for d in pyproject.get("dependency-groups", {}).get(group, []) if isinstance(d, str)]
    for path in requirements:
        deps += (read(path) or "").splitlines()
    return [d.strip() for d in deps if d.strip() and not d.strip().startswith(("#", "-"))]


def _names(deps: list[str]) -> set[str]:
    return {m.group(1).lower().replace("_", "-") for m in map(_REQ_NAME.match, deps) if m}


def _pip(deps: list[str]) -> Choice:
    named = [d for d in deps if _names([d]) == {"pytest"}]
    pinned = PYTEST_PIN.split("==")[1]
    for dep in named:
        try:
            accepts = Requirement(dep).specifier.contains(pinned)
        except InvalidRequirement:
            accepts = True
        if not accepts:
            return Choice([], f"the project's test requirements want {dep}, which excludes {PYTEST_PIN}: theirs is used")
    why = f"the project's test requirements accept it ({named[0]})" if named else "the project names no pytest"
    return Choice([PYTEST_PIN], f"pytest pinned to a version the grader is tested with: {why}")


def _plugins(deps: list[str]) -> Choice:
    names = _names(deps)
    found = [module for dist, module in PLUGINS.items() if dist in names]
    if not found:
        return Choice([], "no known pytest plugin among the test requirements")
    return Choice(found, "plugins the test requirements name (graded runs load only plugins given with -p): "
                  + ", ".join(d for d in PLUGINS if d in names))


# --- layout and tests ----------------------------------------------------------------------------

def _layout(files: list[str]) -> Choice:
    src = sorted({p.split("/")[1] for p in files if re.fullmatch(r"src/[^/]+/__init__\.py", p)})
    if src:
        return Choice("src", f"src/ layout: package {', '.join(src)} under src/")
    flat = sorted({p.split("/")[0] for p in files if re.fullmatch(r"[^/]+/__init__\.py", p)} - NOT_PACKAGES)
    if flat:
        return Choice("flat", f"flat layout: package {', '.join(flat)} at the top level")
    modules = sorted(p for p in files if "/" not in p and p.endswith(".py") and p not in NOT_MODULES
                     and not _TEST_FILE.search(p))
    if modules:
        return Choice("module", f"single-module layout: {', '.join(modules)}")
    return Choice("none", "no Python package or module found at the top level or under src/")


BENCHMARK_DIRS = {"bench", "benchmark", "benchmarks", "asv_bench"}
"""Folders of benchmarks: a ``test_*.py`` in them (pytest-benchmark's convention) times code, it tests nothing."""


def _tests(files: list[str]) -> Choice:
    named = [p for p in files if _TEST_FILE.search(p)]
    tests = [p for p in named if not BENCHMARK_DIRS & set(PurePosixPath(p).parts[:-1])]
    choice = _where(tests)
    if len(tests) < len(named):
        choice.reason += f" ({len(named) - len(tests)} file(s) under a benchmark folder not counted)"
    return choice


def _where(tests: list[str]) -> Choice:
    top = sorted({p.split("/")[0] for p in tests if "/" in p and p.split("/")[0] in ("tests", "test", "testing")})
    if top:
        return Choice("tests-folder", f"{_count(tests)}, under {', '.join(t + '/' for t in top)}")
    inside = sorted({str(PurePosixPath(p).parent) for p in tests if "/" in p})
    if inside:
        return Choice("in-package", f"{_count(tests)} inside the package ({', '.join(inside[:3])})")
    if tests:
        return Choice("top-level", f"{_count(tests)} at the top level")
    return Choice("none", "no test_*.py or *_test.py file: hidden tests come with each task's test patch")


def _count(tests: list[str]) -> str:
    return f"{len(tests)} test file" + ("" if len(tests) == 1 else "s")


def _runner(files: list[str], pyproject: dict, setup_cfg: configparser.ConfigParser, read: Reader) -> Choice:
    if "pytest" in pyproject.get("tool", {}):
        return Choice("pytest", "[tool.pytest.ini_options] in pyproject.toml (kept: graded runs use the base's config)")
    if "pytest.ini" in files:
        return Choice("pytest", "pytest.ini")
    if setup_cfg.has_section("tool:pytest"):
        return Choice("pytest", "[tool:pytest] in setup.cfg")
    if _ini(read("tox.ini")).has_section("pytest"):
        return Choice("pytest", "[pytest] in tox.ini")
    if any(PurePosixPath(p).name == "conftest.py" for p in files):
        return Choice("pytest", "conftest.py")
    return Choice("pytest", "no runner configuration: pytest (it also runs unittest test cases)")


def _notes(files: list[str]) -> list[str]:
    notes = []
    if "manage.py" in files:
        notes.append("manage.py found: a Django project's tests may need its own runner (test_command, log_parser)")
    if any(p.endswith((".pyx", ".c")) for p in files):
        notes.append("C or Cython sources found: the base may need compilers (environment.apt: [build-essential])")
    if "noxfile.py" in files or "tox.ini" in files:
        notes.append("tox/nox found: their environments are not used; the pack installs into /opt/venv")
    return notes


def _toml(text: str | None) -> dict:
    try:
        return tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def _ini(text: str | None) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text or "")
    except configparser.Error:
        pass
    return parser


# --- pack.yaml ---------------------------------------------------------------------------------

def render_manifest(name: str, found: Detected, *, url: str, ref: str, where: str) -> str:
    """``pack.yaml`` with a comment over each detected value saying why (valid YAML: strings are JSON)."""
    q = json.dumps

    def items(values) -> str:
        return "[" + ", ".join(q(v) for v in values) + "]"

    lines = [
        f"# Written by `evalharness packs new` from {where}. Edit freely; `evalharness packs validate` checks it.",
        "# Tasks: `evalharness packs add-task` (see docs/backlog.md), or lines in tasks.jsonl (docs/task-format.md).",
        f"name: {q(name)}",
        "version: 1",
        f"description: {q('Tasks from ' + where)}",
        "environment:",
        f"  # Python {found.python.value}: {found.python.reason}",
        f"  base: {found.base}",
        "  source:",
        "    # The repository, read from git: only committed files at each task's base commit reach a task image.",
        "    # A local repository travels into the local engine's build as a git bundle (nothing leaves the machine).",
        "    kind: git",
        f"    url: {q(url)}",
        f"    ref: {q(ref)}   # the environment is installed at this commit; tasks check out their own base",
        f"  # {found.pip.reason}",
        f"  pip: {items(found.pip.value)}",
        f"  # {found.install.reason}",
        f"  setup: {items(found.install.value)}",
        "  workdir: /testbed",
        "tasks: tasks.jsonl",
        f"# Layout: {found.layout.reason}. Tests: {found.tests.reason}.",
        f"# Runner: {found.runner.reason}. Plugins: {found.plugins.reason}.",
        *([f"# pythonpath: {found.pythonpath.reason}."] if found.pythonpath.value else []),
        "# A plain pytest command runs under the guarded launcher; {test_files} becomes each task's test files.",
        f"test_command: {q(found.test_command)}",
        "log_parser: junit",
        "timeouts: {agent_s: 1800, tests_s: 300, build_s: 1800, exec_s: 120}",
        *[f"# note: {note}" for note in found.notes],
    ]
    return "\n".join(lines) + "\n"


def pack_name(folder: str) -> str:
    """A valid pack name from a folder name (letters, digits, '.', '_', '-')."""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", folder).strip("-.") or "backlog"


def detection_files() -> tuple[str, ...]:
    """The configuration files ``detect`` reads besides requirements files (for callers that fetch them)."""
    return CONFIG_FILES


# --- the repository (git, read-only) ------------------------------------------------------------

class Repository:
    """A git repository read with plain git, tracked files only: a local path (work tree or bare), or a URL
    cloned once into a temporary folder (``close`` removes it)."""

    def __init__(self, repo: str):
        self.given = repo
        self._tmp: tempfile.TemporaryDirectory | None = None
        path = Path(repo).expanduser()
        if "://" not in repo and not re.match(r"^[^/]+@[^/]+:", repo):
            if not path.exists():
                raise UserError(f"repository {repo} does not exist", "give a local git repository or a git URL")
            self.path, self.local = path.resolve(), True
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="evalharness-new-")
            self.path, self.local = Path(self._tmp.name) / "repo.git", False
            done = subprocess.run(["git", "clone", "-q", "--bare", repo, str(self.path)], capture_output=True,
                                  text=True, timeout=GIT_TIMEOUT_S)
            if done.returncode != 0:
                raise UserError(f"cannot clone {repo}: {_first(done.stderr)}",
                                "for a private repository, clone it and give the local path")
        if self.git("rev-parse", "--git-dir", check=False) is None:
            raise UserError(f"{repo} is not a git repository", "packs new reads committed files with git: "
                            "`git init` and commit the code first")

    def git(self, *args: str, check: bool = True) -> str | None:
        done = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S)
        if done.returncode != 0:
            if check:
                raise UserError(f"git {' '.join(args[:2])} failed in {self.given}: {_first(done.stderr)}")
            return None
        return done.stdout

    def commit(self, ref: str) -> str:
        sha = self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if not sha:
            raise UserError(f"{ref!r} is not a commit of {self.given}", "give a branch, tag or commit")
        return sha.strip()

    def files(self, commit: str) -> list[str]:
        return (self.git("ls-tree", "-r", "-z", "--name-only", commit) or "").split("\0")[:-1]

    def read(self, commit: str, path: str, limit: int = 1 << 20) -> str | None:
        size = self.git("cat-file", "-s", f"{commit}:{path}", check=False)
        if size is None or int(size) > limit:
            return None
        return self.git("show", f"{commit}:{path}", check=False)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


GIT_TIMEOUT_S = 600


def _first(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(no output)"


def source_url(repository: Repository, out: Path) -> str:
    """How pack.yaml names the repository: relative to the pack when both share a folder below the root, else
    absolute; a URL as given."""
    if not repository.local:
        return repository.given
    pack = out.resolve()
    if os.path.commonpath([repository.path, pack]) == os.path.sep:
        return str(repository.path)
    return os.path.relpath(repository.path, pack)


def new_pack(repo: str, out: Path, *, name: str | None = None, ref: str = "HEAD", force: bool = False,
             language: str = "auto"):
    """Write ``out/pack.yaml`` (detected, commented) and an empty ``out/tasks.jsonl`` for ``repo`` at ``ref``;
    the project's language is ``language``, or the one its files show (``evalharness.languages``). Returns
    (the language module, what it detected)."""
    from evalharness.languages.registry import choose

    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} is not empty", "give a new folder, or --force to replace its pack.yaml")
    repository = Repository(repo)
    try:
        commit = repository.commit(ref)
        files = repository.files(commit)
        chosen = choose(files, language)
        found = chosen.detect(files, lambda path: repository.read(commit, path) if path in files else None)
        out.mkdir(parents=True, exist_ok=True)
        where = f"{repo} at {commit[:12]}" + (f" ({ref})" if ref != "HEAD" else "")
        manifest = chosen.render_manifest(name or pack_name(out.resolve().name), found,
                                          url=source_url(repository, out), ref=commit, where=where)
        (out / "pack.yaml").write_text(manifest)
        tasks = out / "tasks.jsonl"
        if not tasks.exists():
            tasks.write_text("")
        return chosen, found
    finally:
        repository.close()
