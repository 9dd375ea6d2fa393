"""A mined task's environment at its own base commit, without Docker: the decision (``mine_env.task_setup``),
the pack.yaml the miner writes with it, and the task image's recipe that runs it.

Pins: a miner whose task images keep the tip's install (its version, its generated version file), so a test
reading the installed version fails at base only because the environment was installed at the tip.
The Docker side (a version test that must not become FAIL_TO_PASS): tests/test_mine_env_docker.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalharness.sandbox.images import task_context
from evalharness.sources import mine as m
from evalharness.sources.mine_env import CLEAN_GENERATED, project_installs, task_setup
from evalharness.sources.scaffold import CLEAN_STEP
from evalharness.types import TaskSpec


@pytest.mark.parametrize("step, installs", [
    ("python -m pip install -e '.[tests]'", [(".[tests]", True)]),
    ("pip install --editable .", [(".", True)]),
    ("python3 -m pip install .", [(".", False)]),
    ("pip install -e ./", [("./", True)]),
    ("python -m pip install -r requirements-test.txt", []),
    ("pip install -r . -e ../other", []),  # '.' is the value of -r here; '../other' is not the project
    ("pip install -c constraints.txt -e . pytest", [(".", True)]),
    ("cd sub && pip install -e .", [(".", True)]),
    ("git clean -xdfq -- '*.egg-info' '*.egg-info/' build", []),
])
def test_project_installs_finds_the_repository_itself(step, installs):
    assert project_installs(step) == installs


def test_an_editable_install_of_the_project_is_done_again_at_each_base():
    chosen = task_setup(["python -m pip install -r requirements.txt", "python -m pip install -e '.[tests]'", CLEAN_STEP])
    assert chosen.steps == [CLEAN_GENERATED, "python -m pip install --no-deps -e .", CLEAN_STEP]
    assert "version" in chosen.reason and "base" in chosen.reason


def test_a_plain_install_is_done_again_as_a_plain_one():
    assert task_setup(["pip install ."]).steps[1] == "python -m pip install --no-deps ."


def test_nothing_installed_from_the_repository_needs_nothing_at_base():
    chosen = task_setup(["pip install -r requirements.txt", "pip install pytest==8.3.5"])
    assert chosen.steps == [] and "nothing" in chosen.reason


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "lib"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    return repo


def _mined_pack(tmp_path: Path, repo: Path, **kwargs):
    out = tmp_path / "pack"
    out.mkdir()
    history = m.History(str(repo))
    m.write_manifest(out, "pack", history, history.tip("main"), m.source_url(str(repo), out), **kwargs)
    return m.load_mining_pack(out)


INSTALLABLE = {"pyproject.toml": "[build-system]\nrequires = ['setuptools>=61']\nbuild-backend = 'setuptools.build_meta'\n"
                                 "[project]\nname = 'lib'\nversion = '1.0'\n",
               "lib/__init__.py": "", "tests/test_lib.py": "def test_x():\n    pass\n"}


def test_the_mined_pack_reinstalls_the_project_in_each_task_image(tmp_path):
    pack = _mined_pack(tmp_path, _repo(tmp_path, INSTALLABLE))
    env = pack.spec.environment
    assert any("pip install -e" in step for step in env.setup)
    assert env.task_setup == task_setup(env.setup).steps and env.task_setup
    text = (pack.root / "pack.yaml").read_text()
    assert "# the environment's install of the project is the tip's" in text  # the reason, for the reader
    task = TaskSpec(instance_id="lib-1", repo="lib", base_commit="a" * 40, problem_statement="x", patch="",
                    FAIL_TO_PASS=["tests/test_lib.py::test_x"])
    ctx = task_context(pack, task, "env:tag")
    assert ctx.files["task_setup.sh"].decode() == "set -e\n" + "\n".join(env.task_setup) + "\n"
    copy = ctx.dockerfile.index("COPY task_setup.sh /tmp/evalharness-task/task_setup.sh")
    assert copy < ctx.dockerfile.index("evalharness-prepare-task")
    assert "ARG PIP_INDEX_URL" in ctx.dockerfile  # a task image's install reaches the same index as the environment's


def test_a_setup_given_on_the_command_line_decides_it_too(tmp_path):
    pack = _mined_pack(tmp_path, _repo(tmp_path, INSTALLABLE), setup=["pip install -r requirements.txt"])
    assert pack.spec.environment.task_setup == []
    task = TaskSpec(instance_id="lib-1", repo="lib", base_commit="a" * 40, problem_statement="x", patch="",
                    FAIL_TO_PASS=["tests/test_lib.py::test_x"])
    ctx = task_context(pack, task, "env:tag")
    assert "task_setup.sh" not in ctx.files and "task_setup" not in ctx.dockerfile and "ARG" not in ctx.dockerfile


def test_prepare_task_runs_the_task_setup_after_the_checkout_and_before_the_defect():
    from importlib import resources

    script = resources.files("evalharness.data").joinpath("prepare_task.sh").read_text()
    checkout, setup = script.index("checkout -q --force"), script.index("task_setup.sh ]")
    assert checkout < setup < script.index("git apply --whitespace=nowarn") < script.index("rm -rf .git")


NODE_PROJECT = {"package.json": '{"name": "lib", "scripts": {"test": "jest"}, "devDependencies": {"jest": "^29.7.0"}}',
                "package-lock.json": "{}", "index.js": "module.exports = 1\n", "test/index.test.js": "test('x', () => {})\n"}


def test_a_node_project_is_mined_with_its_language_modules_pack(tmp_path):
    from evalharness.errors import UserError

    repo = _repo(tmp_path, NODE_PROJECT)
    pack = _mined_pack(tmp_path, repo, language="node")
    env, text = pack.spec.environment, (pack.root / "pack.yaml").read_text()
    assert env.apt == ["nodejs", "npm"] and env.setup == ["npm ci --ignore-scripts --no-audit --no-fund"]
    assert env.task_setup[0].endswith("|| { npm ci --ignore-scripts --no-audit --no-fund; }")
    assert pack.spec.log_parser == "jest_json" and text.startswith("# Written by `evalharness packs mine`")
    (tmp_path / "given").mkdir()
    (tmp_path / "python").mkdir()
    given = _mined_pack(tmp_path / "given", repo, language="node", setup=["npm install --ignore-scripts"],
                        test_command="node_modules/.bin/jest --json --outputFile={junit_xml} {test_files}")
    assert given.spec.environment.setup == ["npm install --ignore-scripts"]
    assert given.spec.environment.task_setup[0].endswith("|| { npm install --ignore-scripts; }")
    assert given.spec.test_command == "node_modules/.bin/jest --json --outputFile={junit_xml} {test_files}"
    with pytest.raises(UserError, match="--python and --pip are for Python projects"):
        _mined_pack(tmp_path / "python", repo, language="node", python="3.11")
