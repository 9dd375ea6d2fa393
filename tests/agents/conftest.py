"""Fixtures for CLI agents: sandboxes with the command kind's shared folder (helpers: agent_support.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def agent_sandbox(docker_client, image_builder, request):
    """Start an agent sandbox (with the command kind's shared folder) for a task; removed at the end."""
    from evalharness.harness.command import SHARED_DIR
    from evalharness.sandbox.docker import DockerSandbox

    made = []

    def make(pack, task, install: list[str] | None = None, wall_s: float = 300):
        image = image_builder.harness_image(pack, task, install) if install else image_builder.task_image(pack, task)
        sandbox = DockerSandbox(docker_client, image, run_id=f"test-{request.node.name}"[:60], trial=task.instance_id,
                                workdir=pack.spec.environment.workdir, shared_dirs=[SHARED_DIR]).start()
        sandbox.set_wall_budget(wall_s)
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()
