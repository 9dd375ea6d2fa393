"""Shared fixtures: a real Docker engine, the real base image, small real packs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import TINYPACK  # noqa: E402


# The marks whose tests share one machine-wide resource: the Docker engine (and its image builds), Chromium, a
# PostgreSQL server, or simply the machine's two cores for a long while.
_ENGINE_MARKS = ("docker", "slow", "browser", "postgres")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup` (scripts/test), the engine-bound tests run one after another on one worker, so
    their containers and builds never race each other for two cores and their timeouts keep their meaning; the
    pure tests run beside them on the other worker. Without xdist the mark does nothing."""
    for item in items:
        if any(item.get_closest_marker(name) for name in _ENGINE_MARKS):
            item.add_marker(pytest.mark.xdist_group("engine"))


@pytest.fixture(scope="session")
def docker_client():
    """The engine must answer: a missing engine is an error with a hint, never a silent skip."""
    from evalharness.sandbox.engine import docker_client as connect

    return connect()


@pytest.fixture(scope="session")
def base_image(docker_client):
    from evalharness.sandbox.bootstrap import bootstrap_base
    from evalharness.sandbox.images import BASE_RECIPES

    recipe = BASE_RECIPES["bookworm"]
    bootstrap_base(docker_client, recipe, log=lambda m: None)
    return recipe.tag


@pytest.fixture(scope="session")
def image_builder(docker_client, base_image):
    from evalharness.sandbox.images import ImageBuilder

    return ImageBuilder(docker_client)


@pytest.fixture(scope="session")
def tinypack():
    from evalharness.packs import load_pack

    return load_pack(TINYPACK)


@pytest.fixture
def tinypack_copy(tmp_path):
    """A writable copy of the tiny pack, for tests that break it on purpose."""
    dest = tmp_path / "tinypack"
    shutil.copytree(TINYPACK, dest)
    return dest


@pytest.fixture
def sandbox_factory(docker_client, image_builder, request):
    """Start sandboxes from task images; every one is removed at the end of the test."""
    from evalharness.sandbox.docker import DockerSandbox

    made = []

    def make(pack, task, role="agent"):
        image = image_builder.task_image(pack, task)
        sandbox = DockerSandbox(docker_client, image, run_id=f"test-{request.node.name}"[:60], trial=task.instance_id,
                                role=role, workdir=pack.spec.environment.workdir).start()
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()


@pytest.fixture(scope="session", autouse=True)
def _session_cache_dir(tmp_path_factory):
    """Task-check verdicts (and any other cache) go to this session's own folder, never the user's
    ~/.cache/evalharness: a verdict a user's runs cached must not decide a test, nor a test's reach their runs.
    Set in the environment, so the CLIs the tests start inherit it (a test may point it elsewhere)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALHARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("evalharness-cache")))
        yield
