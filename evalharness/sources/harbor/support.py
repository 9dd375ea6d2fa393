"""What evalharness can run of a Harbor task, and which of its fields it does not honour (pure)."""

from __future__ import annotations

from typing import Callable

from evalharness.sources.harbor.basemap import copy_from_images, from_images, map_image
from evalharness.sources.harbor.model import HarborTask

Reachable = Callable[[str], bool]
"""Is an image present locally or pullable from its registry (the engine's answer; map-only without one)."""


def _image_problems(dockerfile: str, where: str, mapping: dict[str, str], reachable: Reachable) -> list[str]:
    problems = []
    for image in from_images(dockerfile):
        if map_image(image, mapping) is None and not reachable(image):
            problems.append(f"{where}: base image {image} cannot be pulled and the base map has no entry for it "
                            "(--base-map)")
    for image in copy_from_images(dockerfile):
        problems.append(f"{where}: COPY --from={image} reads a registry image; replace it with an overlay")
    return problems


def unsupported(task: HarborTask, mapping: dict[str, str], reachable: Reachable) -> list[str]:
    """Why ``task`` (overlays applied) cannot run here; empty when it can."""
    cfg, env = task.config, task.config.environment
    problems = []
    if task.compose_file is not None:
        problems.append(f"docker-compose services ({task.compose_file.name}) are not supported")
    if cfg.steps:
        problems.append(f"multi-step tasks ([[steps]], {len(cfg.steps)} steps) are not supported")
    if env.mcp_servers:
        problems.append("MCP servers ([[environment.mcp_servers]]) are not supported")
    if env.os == "windows":
        problems.append("windows tasks are not supported")
    if env.gpus or env.gpu_types:
        problems.append(f"GPUs requested (gpus = {env.gpus}) are not supported")
    if task.test_script is None:
        problems.append("no tests/test.sh")
    if env.docker_image:
        if map_image(env.docker_image, mapping) is None and not reachable(env.docker_image):
            problems.append(f"docker_image {env.docker_image} cannot be pulled and the base map has no entry for it")
        else:
            problems.append(f"docker_image {env.docker_image}: prebuilt task images are not supported yet")
    elif task.dockerfile is None:
        problems.append("no environment/Dockerfile")
    else:
        problems += _image_problems(task.dockerfile.read_text(), "environment/Dockerfile", mapping, reachable)
    if cfg.verifier.separate:
        if task.verifier_dockerfile is None:
            problems.append("a separate verifier without tests/Dockerfile")
        else:
            problems += _image_problems(task.verifier_dockerfile.read_text(), "tests/Dockerfile", mapping, reachable)
    return problems


def ignored_fields(task: HarborTask) -> list[str]:
    """task.toml settings evalharness does not honour, each named with what happens instead."""
    cfg, env = task.config, task.config.environment
    found = [f"{name}: unknown key, ignored" for name in task.unknown_fields()]
    if env.network() != "no-network" or cfg.agent.network_mode or cfg.verifier.network_mode:
        found.append(f"environment.network ({env.network()}): every container runs with no network")
    if env.allowed_hosts or cfg.agent.allowed_hosts or cfg.verifier.allowed_hosts:
        found.append("allowed_hosts: no network at all")
    if env.storage_mb != 10240:
        found.append(f"environment.storage_mb = {env.storage_mb}: not enforced")
    if env.healthcheck is not None:
        found.append("environment.healthcheck: not run")
    if env.skills_dir:
        found.append("environment.skills_dir: not given to the agent")
    if cfg.agent.user is not None or cfg.verifier.user is not None:
        found.append("agent.user / verifier.user: both run as root")
    if cfg.verifier.collect:
        found.append("verifier.collect: not collected")
    if cfg.verifier.environment is not None:
        found.append("verifier.environment: its resources are the agent's (cpus, memory)")
    return found
