"""The language layer decides without Docker: which language a repository is, which Node runner, base and
install, and the refusals of runners it cannot read (never a silent wrong command).

Pins: `packs new` on a Node repository wrote a pytest pack.yaml for a project with no Python in it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from evalharness.errors import UserError
from evalharness.grading.parsers import PARSERS
from evalharness.languages import node as node_module
from evalharness.languages.base import UnsupportedRunner
from evalharness.languages.node import NODE, RUNNERS
from evalharness.languages.python import PYTHON
from evalharness.languages.registry import LANGUAGES, choose
from evalharness.languages.semver_range import accepts
from evalharness.sources import scaffold


def reader(files: dict[str, str]):
    return files.get


def detect(package: dict, extra: dict[str, str] | None = None):
    files = {"package.json": json.dumps(package), **(extra or {})}
    return NODE.detect(sorted(files), reader(files))


def test_every_runner_names_a_registered_parser_and_writes_to_the_results_file():
    from evalharness.languages.node_surface import is_node_command

    for runner in RUNNERS.values():
        assert runner.log_parser in PARSERS, runner.name
        assert "{junit_xml}" in runner.command and "{test_files}" in runner.command, runner.name
        assert is_node_command(runner.command), runner.name   # the grader's Node surface policy applies to it


@pytest.mark.parametrize("package, runner, why", [
    ({"scripts": {"test": "tap"}, "devDependencies": {"tap": "^16.0.0"}}, "tap", "scripts.test"),
    ({"scripts": {"test": "npm run lint && jest --coverage"}}, "jest", "scripts.test"),
    ({"scripts": {"test": "c8 mocha 'test/**/*.spec.js'"}}, "mocha", "scripts.test"),
    ({"scripts": {"test": "vitest run"}, "devDependencies": {"jest": "29"}}, "vitest", "scripts.test"),
    ({"scripts": {"test": "node scripts/test.js"}, "devDependencies": {"ts-jest": "29", "typescript": "5"}},
     "jest", "ts-jest"),
    ({"devDependencies": {"mocha": "^10.0.0"}}, "mocha", "depends on mocha"),
    ({"jest": {"testEnvironment": "node"}}, "jest", "configuration: jest"),
])
def test_the_runner_is_read_from_the_test_script_then_dependencies_then_configuration(package, runner, why):
    found = detect(package)
    assert found.runner.value.name == runner and why in found.runner.reason
    assert found.log_parser == RUNNERS[runner].log_parser


@pytest.mark.parametrize("package, named", [
    ({"scripts": {"test": "ava"}}, "ava"),
    ({"scripts": {"test": "node --test test/"}}, "node:test"),
    ({"devDependencies": {"jasmine": "5"}}, "jasmine"),
    ({"scripts": {"test": "tap"}, "devDependencies": {"tap": "^18.7.0"}}, "tap 18"),
    ({"scripts": {"test": "echo no tests"}}, "no test runner found"),
])
def test_a_runner_without_a_reporter_here_is_refused_by_name(package, named):
    with pytest.raises(UnsupportedRunner, match=named):
        detect(package)


def test_a_config_file_names_the_runner_and_is_restored_by_the_grader():
    found = detect({"name": "x"}, {"vitest.config.ts": "", "tsconfig.json": "{}", "src/a.ts": ""})
    assert found.runner.value.name == "vitest"
    assert found.runner_files.value == ["vitest.config.ts", "tsconfig.json"]


@pytest.mark.parametrize("engines, base", [
    (None, "bookworm"), (">=10", "bookworm"), ("^20 || ^22", "trixie"), (">= 19", "trixie"), ("16.x", "bookworm"),
])
def test_engines_choose_the_base_whose_debian_node_it_accepts(engines, base):
    found = detect({"scripts": {"test": "jest"}, **({"engines": {"node": engines}} if engines else {})})
    assert found.base == base
    if engines == "16.x":
        assert "accepts no built-in base" in found.node.reason


@pytest.mark.parametrize("spec, version, want", [
    (">=10", "18.20.4", True), ("^18.14.0 || ^20 || >=22", "18.20.4", True), ("^20", "18.20.4", False),
    ("18 - 19", "20.19.2", False), ("16 - 20", "20.19.2", True), ("~18.20", "18.20.4", True),
    ("~18.19", "18.20.4", False), ("<20", "20.19.2", False), ("<=20", "20.19.2", True), (">18", "18.20.4", False),
    ("*", "20.19.2", True), ("18.x || 20.x", "20.19.2", True), ("lts/*", "20.19.2", None),
])
def test_engines_ranges(spec, version, want):
    assert accepts(spec, version) is want


def test_a_lockfile_is_installed_with_npm_ci_else_npm_install_pins_the_runner_major():
    locked = detect({"scripts": {"test": "jest"}}, {"package-lock.json": "{}"})
    assert locked.install.value == ["npm ci --ignore-scripts --no-audit --no-fund"]
    assert locked.task_setup.value == ("package-lock.json", locked.install.value)
    loose = detect({"scripts": {"test": "tap"}, "devDependencies": {"tap": "^16.0.0"}}, {".npmrc": "package-lock=false\n"})
    assert loose.install.value == ["npm install --ignore-scripts --no-audit --no-fund --no-save --no-package-lock tap@16"]
    assert "package-lock=false" in loose.install.reason
    unnamed = detect({"scripts": {"test": "mocha"}})
    assert unnamed.install.value[0].endswith(" mocha@10")


def test_the_manifest_is_a_valid_pack_with_the_install_repeated_only_when_dependencies_differ():
    from evalharness.packs import PackSpec

    found = detect({"scripts": {"test": "jest"}}, {"package-lock.json": "{}", "jest.config.js": ""})
    text = NODE.render_manifest("demo", found, url="../repo", ref="abc123", where="repo at abc123")
    spec = PackSpec.model_validate(yaml.safe_load(text))
    assert spec.environment.apt == ["nodejs", "npm"] and spec.environment.base == "bookworm"
    assert spec.environment.task_setup == [
        f"{node_module.same_dependencies('abc123', 'package-lock.json')} || "
        "{ npm ci --ignore-scripts --no-audit --no-fund; }"]
    assert spec.log_parser == "jest_json" and spec.runner_files == ["jest.config.js"]
    assert spec.test_command.startswith("node_modules/.bin/jest ") and "--outputFile={junit_xml}" in spec.test_command


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node on the host to run the check's script")
def test_a_task_reinstalls_only_when_its_declared_dependencies_or_lockfile_differ(tmp_path):
    """Every release bumps package.json's version: that alone must not cost a task image a reinstall."""
    def commit(package: dict, lock: str) -> str:
        (tmp_path / "package.json").write_text(json.dumps(package, indent=2))
        (tmp_path / "package-lock.json").write_text(lock)
        for args in (["add", "-A"], ["commit", "-qm", "x", "--allow-empty"]):
            subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)
        return subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], check=True, capture_output=True,
                              text=True).stdout.strip()

    def same(ref: str, lockfile: str | None) -> bool:
        done = subprocess.run(["bash", "-c", node_module.same_dependencies(ref, lockfile)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        return done.returncode == 0

    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    ref = commit({"version": "1.0.0", "devDependencies": {"tap": "^16.0.0"}}, "{}")
    commit({"version": "1.1.0", "scripts": {"x": "y"}, "devDependencies": {"tap": "^16.0.0"}}, "{}")
    assert same(ref, "package-lock.json") and same(ref, None)
    commit({"version": "1.1.0", "devDependencies": {"tap": "^16.3.0"}}, "{}")
    assert not same(ref, None)
    commit({"version": "1.0.0", "devDependencies": {"tap": "^16.0.0"}}, '{"lockfileVersion": 3}')
    assert same(ref, None) and not same(ref, "package-lock.json")
    assert not same("0" * 40, None)                     # a ref git does not know: reinstall


def test_notes_name_what_the_scaffold_cannot_do():
    found = detect({"scripts": {"test": "jest", "pretest": "tsc"}, "workspaces": ["a"]},
                   {"yarn.lock": "", "tsconfig.json": "{}", ".gitignore": "dist\n"})
    text = "\n".join(found.notes)
    for words in ("yarn.lock", "TypeScript", "workspaces", "scripts.pretest", "node_modules is not in .gitignore"):
        assert words in text
    assert not any("gitignore" in n for n in detect({"scripts": {"test": "jest"}}, {".gitignore": "/*\n"}).notes)


@pytest.mark.parametrize("path, test", [
    ("test/functions/diff.js", True), ("tests/a.test.ts", True), ("src/__tests__/x.tsx", True),
    ("src/a.spec.mjs", True), ("lib/util_test.js", False), ("src/index.ts", False), ("test/fixtures/range.js", False),
    ("node_modules/x/test/a.js", False), ("test/README.md", False),
])
def test_node_test_file_names(path, test):
    assert NODE.is_test_file(path) is test


def test_the_registry_chooses_by_files_and_asks_on_a_tie():
    assert choose(["package.json", "index.js", "test/a.js"]) is NODE
    assert choose(["pyproject.toml", "src/a/__init__.py", "tests/test_a.py"]) is PYTHON
    assert choose(["README.md"]) is PYTHON                           # what packs new always did
    assert choose(["package.json", "setup.py", "tests/test_a.py", "tests/test_b.py", "test/a.js"]) is PYTHON
    assert choose(["package.json", "setup.py"], "node") is NODE
    with pytest.raises(UserError, match="--language"):
        choose(["package.json", "setup.py", "tests/test_a.py", "test/a.js"])
    with pytest.raises(UserError, match="unknown language"):
        choose([], "cobol")
    assert set(LANGUAGES) == {"python", "node"}


def test_the_python_module_is_todays_detection_unchanged():
    files = {"pyproject.toml": '[project]\nname = "a"\nrequires-python = ">=3.12"\n', "src/a/__init__.py": "",
             "tests/test_a.py": ""}
    ours, theirs = PYTHON.detect(sorted(files), files.get), scaffold.detect(sorted(files), files.get)
    assert ours == theirs
    args = dict(url="u", ref="r", where="w")
    assert PYTHON.render_manifest("n", ours, **args) == scaffold.render_manifest("n", theirs, **args)


def test_the_language_layer_loads_no_sandbox_runner_or_grader():
    code = ("import sys, evalharness.languages.registry; "
            "print(sorted(m for m in sys.modules if m.startswith(('docker', 'evalharness.sandbox', "
            "'evalharness.runner', 'evalharness.grading', 'evalharness.store', 'pandas'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert node_module.__doc__ and "UnsupportedRunner" in node_module.__doc__


def _repo(path, files: dict[str, str]):
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)
    return path


def test_packs_new_on_a_node_repository_through_the_cli(tmp_path):
    from support import run_cli

    package = {"name": "lib", "engines": {"node": ">=20"}, "scripts": {"test": "vitest run"},
               "devDependencies": {"vitest": "^2.1.0"}}
    _repo(tmp_path / "lib", {"package.json": json.dumps(package), "package-lock.json": "{}", ".gitignore": "node_modules\n",
                             "src/index.ts": "", "src/index.test.ts": "", "vitest.config.ts": ""})
    made = run_cli("packs", "new", "--repo", "lib", "--out", "pack", cwd=tmp_path)
    assert "Node 20.19.2 (trixie); runner vitest" in made.stdout and "npm ci" in made.stdout
    from evalharness.packs import PackSpec

    spec = PackSpec.model_validate(yaml.safe_load((tmp_path / "pack" / "pack.yaml").read_text()))
    assert spec.log_parser == "jest_json" and spec.runner_files == ["vitest.config.ts"]
    assert spec.environment.base == "trixie" and spec.environment.source.url == "../lib"
    forced = run_cli("packs", "new", "--repo", "lib", "--out", "py", "--language", "python", cwd=tmp_path)
    assert "Python 3.11" in forced.stdout


def test_an_unsupported_runner_is_a_clear_error_and_writes_nothing(tmp_path):
    from support import run_cli

    _repo(tmp_path / "lib", {"package.json": json.dumps({"scripts": {"test": "ava --verbose"}}), "test.js": ""})
    refused = run_cli("packs", "new", "--repo", "lib", "--out", "pack", cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "test runner ava (scripts.test runs it: 'ava --verbose') is not supported" \
        in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "pack").exists()
