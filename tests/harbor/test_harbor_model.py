"""The Harbor task model (pure): every shared task directory reads; legacy and deprecated spellings are
converted as Harbor's loader does; what the model does not know is named, never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalharness.errors import UserError
from evalharness.sources.harbor.model import HarborTask
from support import SHARED

TASKS = SHARED / "research-data" / "harbor" / "tasks"
needs_tasks = pytest.mark.skipif(not TASKS.is_dir(), reason=f"{TASKS} absent (shared research data)")


def _task(tmp_path: Path, toml: str, instruction: str = "Do it.\n") -> Path:
    (tmp_path / "task.toml").write_text(toml)
    if instruction:
        (tmp_path / "instruction.md").write_text(instruction)
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    return tmp_path


@needs_tasks
def test_every_shared_task_directory_reads_with_nothing_unknown():
    loaded = {d.name: HarborTask.load(d) for d in sorted(TASKS.iterdir()) if d.is_dir()}
    assert len(loaded) == 21
    assert {name: t.unknown_fields() for name, t in loaded.items() if t.unknown_fields()} == {}
    maasai = loaded["mathmodel-mcm-2023-b-maasai-mara"]
    assert (maasai.name, maasai.config.schema_version) == ("wxj630/mcm-2023-b-maasai-mara", "1.3")
    assert maasai.config.verifier.separate and maasai.verifier_dockerfile is not None
    assert maasai.config.environment.network() == "no-network"
    assert loaded["cookbook-simple-task"].config.schema_version == "1.0"  # `version = "1.0"`, renamed
    assert not loaded["cookbook-simple-task"].config.verifier.separate
    pro = loaded["swebenchpro-v2-PARTIAL-vuls-457a3a96"]
    assert pro.config.agent.network_mode == "allowlist" and pro.config.environment.docker_image.startswith("ghcr.io/")
    assert loaded["cookbook-multi-step"].config.steps[1].min_reward == 0.5
    assert loaded["cookbook-mcp-tools"].compose_file is not None


def test_deprecated_sizes_and_network_policy_as_harbor_reads_them(tmp_path):
    task = HarborTask.load(_task(tmp_path, '[environment]\nmemory = "4G"\nstorage = "512M"\nallowed_hosts = ["pypi.org"]\n'))
    env = task.config.environment
    assert (env.memory_mb, env.storage_mb, env.network()) == (4096, 512, "allowlist")
    assert HarborTask.load(_task(tmp_path, "[environment]\nallow_internet = false\n")).config.environment.network() \
        == "no-network"
    assert HarborTask.load(_task(tmp_path, "[verifier.environment]\ncpus = 2\n")).config.verifier.separate


def test_unknown_keys_are_named_with_their_table(tmp_path):
    task = HarborTask.load(_task(tmp_path, 'frobnicate = 1\n[environment]\nteleport = true\n[metadata]\nanything = 1\n'
                                          '[[steps]]\nname = "a"\nwobble = 2\n'))
    assert sorted(task.unknown_fields()) == ["environment.teleport", "frobnicate", "steps[0].wobble"]


@pytest.mark.parametrize(("toml", "says"), [
    ('[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n', "cannot have a [verifier.environment]"),
    ("[environment]\ncpus = 'many'\n", "environment.cpus"),
    ('[environment]\nmemory = "lots"\n', "not a size"),
    ("[environment\n", "not valid TOML"),
])
def test_a_broken_task_toml_is_a_user_error_naming_the_field(tmp_path, toml, says):
    with pytest.raises(UserError) as e:
        HarborTask.load(_task(tmp_path, toml))
    assert says in e.value.message and "task.toml" in e.value.message


def test_a_directory_without_task_toml_or_instruction_is_refused(tmp_path):
    with pytest.raises(UserError, match="no task.toml"):
        HarborTask.load(tmp_path)
    with pytest.raises(UserError, match="no instruction.md"):
        HarborTask.load(_task(tmp_path, "", instruction=""))
