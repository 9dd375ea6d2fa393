"""Base images per Python version: a recipe names the Python it needs and gets the base that ships it.

Pins: the only base was Debian with Python 3.11, while most SWE-bench task versions were written for 3.9.
"""

from __future__ import annotations

import pytest

from evalharness.errors import PrerequisiteError, TaskError
from evalharness.packs import BaseSpec, EnvironmentSpec, GitSource
from evalharness.sandbox.images import BASE_RECIPES, base_for, base_recipe, pack_bases


def env(**fields) -> EnvironmentSpec:
    return EnvironmentSpec(source=GitSource(kind="git", url="https://example.invalid/x.git"), **fields)


class FakePack:
    class spec:  # noqa: N801 - the attribute a Pack has
        bases = {"noble": BaseSpec(suite="noble", python="3.12", official_image="ubuntu:noble", packages=["make"])}


@pytest.mark.parametrize(("python", "base"), [("3.9", "bullseye"), ("3.11", "bookworm"), ("3.13", "trixie")])
def test_a_python_version_picks_the_base_that_ships_it(python, base):
    assert base_for(env(python=python)).name == base


def test_a_named_base_wins_and_no_name_means_bookworm():
    assert base_for(env(base="trixie", python="3.9")).name == "trixie"
    assert base_for(env()).name == "bookworm"


def test_a_python_no_base_ships_is_a_task_error_naming_the_bases():
    with pytest.raises(TaskError) as err:
        base_for(env(python="3.10"))
    assert "3.10" in err.value.message and "bullseye (3.9)" in (err.value.hint or "")
    with pytest.raises(PrerequisiteError, match="unknown base image recipe 'jessie'"):
        base_for(env(base="jessie"))


def test_a_pack_adds_a_base_with_its_python():
    assert base_for(env(python="3.12"), FakePack).name == "noble"
    added = pack_bases(FakePack)["noble"]
    assert added.official_image == "ubuntu:noble" and "make" in added.packages and "git" in added.packages
    assert base_recipe("noble", FakePack).tag.startswith("evalharness/base:noble-")
    assert "noble" not in BASE_RECIPES


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BASE_RECIPES))
def test_each_built_in_base_ships_the_python_it_claims(docker_client, name):
    from evalharness.sandbox.bootstrap import bootstrap_base

    recipe = BASE_RECIPES[name]
    bootstrap_base(docker_client, recipe, log=lambda line: None)  # scripts/setup has built it; else about a minute
    out = docker_client.containers.run(
        recipe.tag, ["sh", "-c", "python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'; "
                                 "python3 -m venv /tmp/v && /tmp/v/bin/pip --version >/dev/null && git --version"],
        remove=True, network_mode="none").decode().split()
    assert out[0] == recipe.python and out[1] == "git"
