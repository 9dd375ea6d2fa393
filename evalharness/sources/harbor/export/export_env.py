"""environment/ of an exported task: one Dockerfile reproducing the task image evalharness builds.

The environment tier (``sandbox.images.environment_context``) and the task tier (``task_context``) are
written one after the other, with the files they copy, and then the work tree the task tier packed is
rebuilt in place (a Harbor environment has no start-up step that would do it), owned by ``agent``.
The FROM line is the evalharness base the tiers start from (``--base local``), or the official Debian
image the base recipe names with the same packages installed (``--base official``).
"""

from __future__ import annotations

from typing import Literal

from evalharness.packs import Pack
from evalharness.sandbox.images import base_for, environment_context, task_context
from evalharness.types import TaskSpec

BaseKind = Literal["local", "official"]
_PLACEHOLDER = "evalharness-export-environment"


def environment_files(pack: Pack, task: TaskSpec, *, base: BaseKind = "local",
                      ca_bundle: bytes | None = None) -> dict[str, bytes]:
    """``Dockerfile`` and every file it copies, by name inside environment/."""
    spec = pack.spec_for(task)
    assert spec.environment is not None
    recipe = base_for(spec.environment, pack)
    env = environment_context(pack, recipe.tag, ca_bundle, spec)
    tier = task_context(pack, task, _PLACEHOLDER)
    env_lines = env.dockerfile.splitlines()
    if base == "official":
        env_lines[0:1] = [f"FROM {recipe.official_image}",
                          "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                          f"--no-install-recommends {' '.join(recipe.packages)} >/dev/null && rm -rf /var/lib/apt/lists/*"]
    task_lines = tier.dockerfile.splitlines()
    assert task_lines[0] == f"FROM {_PLACEHOLDER}"
    workdir = spec.environment.workdir
    header = [f"# evalharness task {pack.name}/{task.instance_id}: the environment and task tiers evalharness builds,",
              f"# then the work tree rebuilt in {workdir} (evalharness rebuilds it when a sandbox starts)."]
    if base == "local":
        header.append(f"# FROM is the evalharness base image: make it with `evalharness sandbox bootstrap --base "
                      f"{recipe.name}`, or export with --base official ({recipe.official_image}).")
    lines = [*header, *env_lines, *task_lines[1:],
             f"RUN evalharness-rebuild-tree {workdir} agent:agent", f"WORKDIR {workdir}"]
    files = {**env.files, **env.unhashed, **tier.files}
    return {"Dockerfile": ("\n".join(lines) + "\n").encode(), **files}
