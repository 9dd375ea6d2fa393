"""Several Docker engines without a cluster: ``--docker-host URL[#WORKERS]`` (repeatable), each with its own
threads in this process (threads.py), its own image builds (content-hashed tags: once per engine) and task checks.

Before the first trial, every engine must answer and hold the base images the pack's tasks need; a missing
base is copied from the local engine when it has it (``docker save`` into ``docker load``), else named with
the command that makes it. A harness that mounts a host folder into its sandbox (the command kind's model
relay) can run only on an engine of this machine (``unix://``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import docker
import requests
from docker.errors import DockerException

from evalharness.errors import PrerequisiteError, UserError
from evalharness.executors.threads import Slot, ThreadedExecutor
from evalharness.executors.work import open_node
from evalharness.packs import Pack
from evalharness.runconfig import RunConfig, matrix
from evalharness.sandbox.docker import remove_labelled
from evalharness.sandbox.engine import EngineHost, docker_client, parse_host
from evalharness.sandbox.images import base_for, image_exists, registry_ref

__all__ = ["open_hosts", "needed_bases", "check_mounts"]


def needed_bases(pack: Pack) -> dict[str, str]:
    """Base name -> tag, for every task of ``pack`` whose recipe resolves (a broken one is the task check's)."""
    bases = {}
    for task in pack.tasks:
        try:
            recipe = base_for(pack.spec_for(task).environment, pack)
        except Exception:  # noqa: BLE001 - the task's own check names it as a task error
            continue
        bases[recipe.name] = recipe.tag
    return bases


def check_mounts(hosts: list[EngineHost], harnesses: dict[str, dict]) -> None:
    """Refuse a remote engine for a harness that shares a host folder with its sandbox (pure).

    ``harnesses``: name -> its sandbox_options().
    """
    mounting = sorted(name for name, options in harnesses.items() if options.get("shared_dirs"))
    remote = [h.label for h in hosts if not h.local]
    if mounting and remote:
        raise UserError(f"harness {', '.join(mounting)} shares a folder of this machine with its sandbox (its model "
                        f"relay), which an engine elsewhere cannot mount: {', '.join(remote)}",
                        "run it on an engine of this machine (unix://), or with --executor ray, whose workers run on "
                        "their engine's machine")


def _seed_base(local: docker.DockerClient | None, client: docker.DockerClient, tag: str, name: str, host: EngineHost,
               log: Callable[[str], None], *, registry: str | None = None) -> None:
    if image_exists(client, tag):
        return
    if registry is not None:  # the registry first: that is how a cluster shares images
        try:
            client.images.pull(*registry_ref(registry, tag).rsplit(":", 1)).tag(*tag.rsplit(":", 1))
            log(f"pulled base image {tag} from {registry} to {host.label}")
            return
        except (DockerException, requests.exceptions.RequestException):
            pass
    if local is None or not image_exists(local, tag):
        raise PrerequisiteError(f"base image {tag} is missing on {host.label}",
                                f"make it there with: evalharness sandbox bootstrap --base {name} "
                                f"--docker-host {host.label}")
    log(f"copying base image {tag} to {host.label}")
    client.images.load(local.images.get(tag).save(named=tag))
    if not image_exists(client, tag):
        raise PrerequisiteError(f"copying {tag} to {host.label} did not produce it",
                                f"make it there with: evalharness sandbox bootstrap --base {name} "
                                f"--docker-host {host.label}")


def open_hosts(spec, *, run_id: str, pack: Pack, config: RunConfig, resume: bool, ca_bundle: Path | None,
               log: Callable[[str], None]) -> ThreadedExecutor:
    hosts = [parse_host(text) for text in spec.hosts]
    labels = [h.label for h in hosts]
    if len(set(labels)) != len(labels):
        raise UserError(f"an engine is given twice: {', '.join(labels)}", "give each --docker-host once; #N sets "
                        "how many trials it runs at once")
    trials = matrix(pack, config)
    options = {t.harness.name: dict(getattr(t.harness, "sandbox_options", lambda: {})()) for t in trials}
    check_mounts(hosts, options)
    try:
        local = docker_client(timeout=60)
    except PrerequisiteError:
        local = None  # no engine here: bases must already be on each host
    slots = []
    for host in hosts:
        client = docker_client(host=host)
        for name, tag in sorted(needed_bases(pack).items()):
            _seed_base(local, client, tag, name, host, log, registry=spec.registry)
        if resume:
            remove_labelled(client, run_id)
        node = open_node(run_id, pack, config, client, ca_bundle=ca_bundle, log=log, node=host.label,
                         engine=host.url, registry=spec.registry)
        slots.append(Slot(node, host.workers or config.workers))
    executor = ThreadedExecutor(slots, run_id, config, pack.name, log)
    executor.name = "hosts"
    return executor
