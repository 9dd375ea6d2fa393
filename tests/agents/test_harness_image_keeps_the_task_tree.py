"""A harness's install steps become an image tier that leaves the task's starting tree exactly as graded.

Pins: installing an agent with the work tree as the current folder (npm, pip) left files in the
repository, so the agent's base commit differed from the grader's and its diff carried them.
"""

from __future__ import annotations

import pytest

from evalharness.sandbox.images import harness_context

pytestmark = pytest.mark.docker

STEPS = ["echo agent > /opt/agent-marker && touch stray-file-if-run-in-the-work-tree"]


def test_install_steps_run_outside_the_work_tree_and_the_tree_matches_the_task(tinypack, image_builder,
                                                                             agent_sandbox, sandbox_factory):
    task = tinypack.tasks[0]
    agent = agent_sandbox(tinypack, task, install=STEPS)
    plain = sandbox_factory(tinypack, task)
    assert agent.exec("cat /opt/agent-marker").output == "agent\n"
    assert agent.exec("git status --porcelain").output == ""
    tree = "git rev-parse HEAD^{tree}"
    assert agent.exec(tree).output == plain.exec(tree).output
    assert agent.exec("id -u").output.strip() == "1000"


def test_the_tier_is_content_hashed(tinypack, image_builder):
    task = tinypack.tasks[0]
    first = image_builder.harness_image(tinypack, task, STEPS)
    assert image_builder.harness_image(tinypack, task, STEPS) == first
    other = harness_context(tinypack, "evalharness/env.x:1", [*STEPS, "true"]).digest()
    assert other != harness_context(tinypack, "evalharness/env.x:1", STEPS).digest()
    assert harness_context(tinypack, "evalharness/env.x:1", ["ENV A=1"]).dockerfile.count("\nENV A=1\n") == 1
