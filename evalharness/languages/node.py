"""JavaScript and TypeScript (Node): project detection, the runner table, the pack.yaml ``packs new`` writes.

Pure. The environment is a local Debian base with Debian's ``nodejs`` and ``npm`` installed at image build
(host network), the dependencies installed in the work tree at the environment's commit and again at each
task's base commit when the dependencies its ``package.json`` declares or its lockfile differ (``npm ci``
where a lockfile exists, else ``npm install`` with the runner pinned to its major version; lifecycle scripts
never run). Tests run with no network, through the runner's own binary in ``node_modules/.bin`` with a
reporter writing to the results file (``{junit_xml}``: JSON, or tap's TAP stream), read by a parser of
``grading/nodelogs.py``. Runners without a reporter read here (ava, node:test, tap 18+, jasmine, karma) are
refused by name (``UnsupportedRunner``), never guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from evalharness.languages.base import Choice, Reader, Runner, UnsupportedRunner
from evalharness.languages.semver_range import accepts

BASES = (("bookworm", "18.20.4"), ("trixie", "20.19.2"))
"""Built-in bases and the Node their Debian ``nodejs`` ships, in order of preference."""
APT = ("nodejs", "npm")
NPM_FLAGS = "--ignore-scripts --no-audit --no-fund"
LOCKFILES = ("npm-shrinkwrap.json", "package-lock.json")
FOREIGN_LOCKFILES = {"yarn.lock": "yarn", "pnpm-lock.yaml": "pnpm", "bun.lockb": "bun", "bun.lock": "bun"}
_EXT = r"(?:[cm]?[jt]sx?)"
_TEST_FILE = re.compile(rf"(^|/)[^/]+\.(test|spec)\.{_EXT}$")
_TEST_DIR = re.compile(rf"(^|/)(test|tests|__tests__|spec)/(?:[^/]+/)*[^/]+\.{_EXT}$")
_NOT_TESTS = re.compile(r"(^|/)(node_modules|fixtures?|__fixtures__|__snapshots__|tap-snapshots|helpers?)/")
_BIN = "node_modules/.bin"
TEST_GLOBS = ("**/*.test.{js,jsx,ts,tsx,cjs,mjs,cts,mts}", "**/*.spec.{js,jsx,ts,tsx,cjs,mjs,cts,mts}",
              "test/**", "tests/**", "**/__tests__/**", "spec/**")
"""What ``is_test_file`` accepts, as globs (fixtures, helpers, snapshots and node_modules excepted)."""


def _configs(stem: str, exts: tuple[str, ...] = ("js", "cjs", "mjs", "ts", "cts", "mts")) -> tuple[str, ...]:
    return tuple(f"{stem}.{ext}" for ext in exts)


RUNNERS = {
    "jest": Runner("jest", f"{_BIN}/jest --ci --testTimeout=120000 --coverage=false --json --outputFile={{junit_xml}} --runTestsByPath "
                   "{test_files}", "jest_json", (*_configs("jest.config"), "jest.config.json"), ("jest",)),
    "vitest": Runner("vitest", f"{_BIN}/vitest run --testTimeout=120000 --coverage.enabled=false --reporter=json "
                     "--outputFile={junit_xml} {test_files}", "jest_json",
                     (*_configs("vitest.config"), *_configs("vite.config"), *_configs("vitest.workspace")), ()),
    "mocha": Runner("mocha", f"{_BIN}/mocha --timeout 120000 --reporter json --reporter-option output={{junit_xml}} {{test_files}}",
                    "mocha_json", (*_configs(".mocharc"), ".mocharc.json", ".mocharc.jsonc", ".mocharc.yaml",
                                   ".mocharc.yml"), ("mocha",)),
    "tap": Runner("tap", f"{_BIN}/tap --timeout=300 --no-coverage -R tap {{test_files}} > {{junit_xml}}", "tap",
                  (".taprc",), ("tap",)),
}
"""Each runner's per-test command: its report goes to the results file (JSON; tap's own TAP stream, as its JSON
reporter crashes on some failures), coverage checks off (an injected defect must fail on a test, never on a
coverage threshold). The runners' own limits are raised: tap's per file (30 s) to 300 s (node-semver's CLI tests
passed it on a loaded machine and tap cut them short: an oracle graded unresolved), jest's and vitest's per test
(5 s) and mocha's (2 s) to 120 s; the sandbox's ``timeouts.tests_s`` stays the bound."""
PINS = {"jest": "29", "vitest": "2", "mocha": "10", "tap": "16"}
"""The major version installed when no lockfile fixes it and package.json names none."""
REFUSED = {
    "ava": "ava has no per-test report this harness reads (its TAP output names no file)",
    "node:test": "node --test: its JUnit report (Node 20.13+) names no file for a test, so ids cannot be made",
    "jasmine": "jasmine's JSON reporter is a separate package not read here yet",
    "karma": "karma runs tests in a browser",
}
SHARED_CONFIG = ("package.json", *LOCKFILES, ".npmrc", "tsconfig.json", "babel.config.js", "babel.config.cjs",
                 "babel.config.json", ".babelrc", ".babelrc.js", ".babelrc.json", ".swcrc")
"""Files that change what the tests run or how they compile, whatever the runner."""
_SCRIPT_WORDS = [("vitest", "vitest"), ("jest", "jest"), ("mocha", "mocha"), ("tap", "tap"), ("ava", "ava"),
                 ("node:test", r"node\s+(?:[^&|;]*\s)?--test\b"), ("jasmine", "jasmine"), ("karma", "karma")]


@dataclass
class NodeProject:
    """What ``packs new`` found in a Node repository, each value with its reason."""

    node: Choice               # the Node version of the chosen base
    base: str
    runner: Choice             # a Runner
    install: Choice            # shell commands (setup)
    task_setup: Choice         # shell commands run at each task's base commit
    tests: Choice              # where the tests are
    runner_files: Choice       # configuration files present, restored to base by the grader
    notes: list[str] = field(default_factory=list)

    @property
    def test_command(self) -> str:
        return self.runner.value.command

    @property
    def log_parser(self) -> str:
        return self.runner.value.log_parser


class Node:
    name = "node"

    def claims(self, files: list[str]) -> bool:
        return "package.json" in files

    def is_test_file(self, path: str) -> bool:
        return bool(_TEST_FILE.search(path) or _TEST_DIR.search(path)) and not _NOT_TESTS.search(path)

    def detect(self, files: list[str], read: Reader) -> NodeProject:
        package = _package(read("package.json"))
        node, base = _node(package)
        runner = _runner(package, files)
        lockfile = next((name for name in LOCKFILES if name in files), None)
        install = _install(package, runner.value, lockfile, read(".npmrc") or "")
        return NodeProject(node=node, base=base, runner=runner, install=install,
                           task_setup=_task_setup(install.value, lockfile), tests=self._tests(files),
                           runner_files=_runner_files(runner.value, files),
                           notes=_notes(package, files, lockfile) + _ignored(read(".gitignore")))

    def _tests(self, files: list[str]) -> Choice:
        tests = [p for p in files if self.is_test_file(p)]
        tops = sorted({p.split("/")[0] + "/" for p in tests if "/" in p})
        if not tests:
            return Choice([], "no test file by the usual names: hidden tests come with each task's test patch")
        return Choice(tops, f"{len(tests)} test file{'s' if len(tests) != 1 else ''}"
                      + (f" under {', '.join(tops[:4])}" if tops else " at the top level"))

    def render_manifest(self, name: str, found: NodeProject, *, url: str, ref: str, where: str) -> str:
        return render_manifest(name, found, url=url, ref=ref, where=where)

    def summary(self, found: NodeProject) -> list[str]:
        return [f"Node {found.node.value} ({found.base}); runner {found.runner.value.name} "
                f"({found.runner.reason}); tests: {found.tests.reason}",
                f"  install: {'; '.join(found.install.value)}",
                f"  test command: {found.test_command}",
                *[f"  note: {note}" for note in found.notes]]


NODE = Node()


def _package(text: str | None) -> dict:
    if text is None:
        raise UnsupportedRunner("package.json is missing or too large to read", "packs new reads it at --ref")
    try:
        package = json.loads(text)
    except json.JSONDecodeError as e:
        raise UnsupportedRunner(f"package.json is not valid JSON: {e}") from e
    if not isinstance(package, dict):
        raise UnsupportedRunner("package.json is not a JSON object")
    return package


def _node(package: dict) -> tuple[Choice, str]:
    engines = package.get("engines") if isinstance(package.get("engines"), dict) else {}
    spec = engines.get("node")
    bases = ", ".join(f"{v} ({b})" for b, v in BASES)
    if not isinstance(spec, str) or not spec.strip():
        return Choice(BASES[0][1], f"no engines.node in package.json: the default base's Node (built-in: {bases})"), \
            BASES[0][0]
    for base, version in BASES:
        verdict = accepts(spec, version)
        if verdict is None:
            return Choice(BASES[0][1], f"engines.node {spec!r} cannot be read: the default base's Node"), BASES[0][0]
        if verdict:
            return Choice(version, f"engines.node {spec!r} accepts it (built-in: {bases})"), base
    return Choice(BASES[0][1], f"engines.node {spec!r} accepts no built-in base's Node ({bases}): add a base "
                               "under 'bases:' in pack.yaml"), BASES[0][0]


def _dependencies(package: dict) -> dict[str, str]:
    deps: dict[str, str] = {}
    for key in ("dependencies", "devDependencies"):
        if isinstance(package.get(key), dict):
            deps.update({k: str(v) for k, v in package[key].items()})
    return deps


def _runner(package: dict, files: list[str]) -> Choice:
    found = _runner_named(package, files)
    if found is None:
        raise UnsupportedRunner("no test runner found in package.json (scripts.test, dependencies) or its "
                                "configuration files", "supported: " + ", ".join(RUNNERS) + "; or write "
                                "test_command and log_parser in pack.yaml by hand (docs/languages.md)")
    name, where = found
    if name in REFUSED:
        raise UnsupportedRunner(f"test runner {name} ({where}) is not supported: {REFUSED[name]}",
                                "supported: " + ", ".join(RUNNERS) + " (docs/languages.md)")
    major = _major(_dependencies(package).get(name, ""))
    if name == "tap" and major is not None and major >= 18:
        raise UnsupportedRunner(f"tap {major} ({where}) is not supported: tap 18+ has no mocha-style JSON "
                                "reporter read here", "supported: tap up to 16 (docs/languages.md)")
    return Choice(RUNNERS[name], where)


def _runner_named(package: dict, files: list[str]) -> tuple[str, str] | None:
    scripts = package.get("scripts") if isinstance(package.get("scripts"), dict) else {}
    script = str(scripts.get("test", ""))
    hits = [(m.start(), name) for name, word in _SCRIPT_WORDS
            for m in [re.search(rf"(?<![\w@/.-]){word}(?![\w-])", script)] if m]
    if hits:
        return min(hits)[1], f"scripts.test runs it: {script!r}"
    deps = _dependencies(package)
    for name in ("jest", "vitest", "mocha", "tap", "ava", "jasmine", "karma"):
        if name in deps or (name == "jest" and "ts-jest" in deps):
            return name, f"package.json depends on {name if name in deps else 'ts-jest'}"
    for name, runner in RUNNERS.items():
        present = [f for f in runner.config_files if f in files] + [k for k in runner.package_keys if k in package]
        if present:
            return name, f"its configuration: {present[0]}"
    return None


def _major(spec: str) -> int | None:
    match = re.search(r"\d+", spec)
    return int(match.group()) if match and not spec.startswith(("file:", "git", "http", "link:")) else None


def _install(package: dict, runner: Runner, lockfile: str | None, npmrc: str) -> Choice:
    if lockfile:
        return Choice([f"npm ci {NPM_FLAGS}"], f"{lockfile} fixes every version: npm ci, lifecycle scripts off")
    declared = _dependencies(package).get(runner.name, "")
    major = _major(declared)
    pin = f"{runner.name}@{major if major is not None else PINS[runner.name]}"
    why = (f"package.json wants {runner.name} {declared!r}" if declared else
           f"package.json names no {runner.name}: the version the parser was checked with")
    no_lock = "package-lock=false in .npmrc" if re.search(r"^\s*package-lock\s*=\s*false", npmrc, re.M) \
        else "no lockfile"
    return Choice([f"npm install {NPM_FLAGS} --no-save --no-package-lock {pin}"],
                  f"{no_lock}: npm install resolves the versions at image build, the runner pinned to its major "
                  f"({why}); lifecycle scripts off")


DEPENDENCY_KEYS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies", "overrides",
                   "bundleDependencies", "bundledDependencies", "workspaces")
"""The keys of package.json that change what npm installs (a version bump or a new script does not)."""


def _task_setup(steps: list[str], lockfile: str | None) -> Choice:
    return Choice((lockfile, steps), "the dependencies again at each task's base commit when what its package.json "
                                     "declares (" + ", ".join(DEPENDENCY_KEYS[:2]) + ", ...)"
                  + (f" or its {lockfile}" if lockfile else "") + " differs from the environment's (npm's cache of "
                  "the first install is reused)")


def same_dependencies(ref: str, lockfile: str | None) -> str:
    """A shell test, true when the work tree's package.json declares the dependencies of ``ref``'s (and its
    lockfile is ``ref``'s): run by ``task_setup`` at a task's base commit, git history present."""
    keys = json.dumps(list(DEPENDENCY_KEYS)).replace('"', "'")
    script = (f"const k={keys},f=s=>JSON.stringify(k.map(x=>JSON.parse(s)[x]||null));"
              f"process.exit(f(require('child_process').execSync('git show {ref}:package.json'))"
              "===f(require('fs').readFileSync('package.json'))?0:1)")
    check = f'node -e "{script}"'
    return f"git diff --quiet {ref} HEAD -- {lockfile} && {check}" if lockfile else check


def _runner_files(runner: Runner, files: list[str]) -> Choice:
    present = [f for f in (*runner.config_files, *SHARED_CONFIG) if f in files and f != "package.json"
               and f not in LOCKFILES and f != ".npmrc"]
    return Choice(present, "configuration of the runner and the compilers present at the commit: the grader "
                           "restores them to each task's base before the tests run")


def _notes(package: dict, files: list[str], lockfile: str | None) -> list[str]:
    notes = [f"{name} found: {tool}'s lockfile is not used; npm resolves the versions afresh"
             for name, tool in FOREIGN_LOCKFILES.items() if name in files and not lockfile]
    if "tsconfig.json" in files:
        notes.append("TypeScript: a type error fails its whole test file (an error for each of its tests)")
    if package.get("workspaces"):
        notes.append("npm workspaces: only the root package's tests are run by this command")
    scripts = package.get("scripts") if isinstance(package.get("scripts"), dict) else {}
    for hook in ("pretest", "prepare", "build"):
        if hook in scripts:
            notes.append(f"scripts.{hook} ({scripts[hook]!r}) is not run: add it to setup if the tests need it")
    return notes


def _ignored(gitignore: str | None) -> list[str]:
    """A note when .gitignore may not ignore node_modules: a task image commits what git does not ignore."""
    lines = {line.strip() for line in (gitignore or "").splitlines()}
    if lines & {"node_modules", "node_modules/", "/node_modules", "/node_modules/", "/*", "*", "**/node_modules"}:
        return []
    return ["node_modules is not in .gitignore: each task's base commit would hold the installed packages; "
            "add it to .gitignore at the commits you use"]


# --- pack.yaml ---------------------------------------------------------------------------------

def render_manifest(name: str, found: NodeProject, *, url: str, ref: str, where: str) -> str:
    """``pack.yaml`` for a Node project, a comment over each value saying why (valid YAML: strings are JSON)."""
    q = json.dumps

    def items(values) -> str:
        return "[" + ", ".join(q(v) for v in values) + "]"

    lockfile, steps = found.task_setup.value
    again = f"{same_dependencies(ref, lockfile)} || {{ {'; '.join(steps)}; }}"
    runner = found.runner.value
    lines = [
        f"# Written by `evalharness packs new` from {where} (Node). Edit freely; `evalharness packs validate` "
        "checks it.",
        "# Tasks: `evalharness packs add-task` (see docs/backlog.md), or lines in tasks.jsonl (docs/task-format.md).",
        f"name: {q(name)}",
        "version: 1",
        f"description: {q('Tasks from ' + where)}",
        "environment:",
        f"  # Node {found.node.value} (Debian's nodejs in {found.base}): {found.node.reason}",
        f"  base: {found.base}",
        "  # Debian's Node.js and npm, installed at image build (host network; tests run with none)",
        f"  apt: {items(APT)}",
        "  source:",
        "    # The repository, read from git: only committed files at each task's base commit reach a task image.",
        "    kind: git",
        f"    url: {q(url)}",
        f"    ref: {q(ref)}   # the environment is installed at this commit; tasks check out their own base",
        f"  # {found.install.reason}",
        f"  setup: {items(found.install.value)}",
        f"  # {found.task_setup.reason}",
        f"  task_setup: {items([again])}",
        "  workdir: /testbed",
        "tasks: tasks.jsonl",
        f"# Tests: {found.tests.reason}. Runner: {runner.name} ({found.runner.reason}).",
        f"# Test files are named {', '.join(TEST_GLOBS)} (JavaScript and TypeScript; not fixtures, helpers or "
        "snapshots).",
        f"# Configuration files of {runner.name}: {', '.join(runner.config_files)}"
        + (f"; package.json keys: {', '.join(runner.package_keys)}" if runner.package_keys else "") + ".",
        f"# {runner.name} writes its JSON report to the results file {{junit_xml}}, read by the {runner.log_parser} "
        "parser; {test_files} becomes each task's test files.",
        f"test_command: {q(found.test_command)}",
        f"log_parser: {runner.log_parser}",
        f"# {found.runner_files.reason}",
        f"runner_files: {items(found.runner_files.value)}",
        "timeouts: {agent_s: 1800, tests_s: 600, build_s: 1800, exec_s: 120}",
        *[f"# note: {note}" for note in found.notes],
    ]
    return "\n".join(lines) + "\n"
