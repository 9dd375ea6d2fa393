"""Is a registry image here or pullable (the engine's answer), tried once per image per process."""

from __future__ import annotations

import functools
from typing import Callable

import docker
import requests
from docker.errors import DockerException, ImageNotFound

_ERRORS = (DockerException, requests.exceptions.RequestException, OSError)


def present(client: docker.DockerClient, image: str) -> bool:
    try:
        client.images.get(image)
        return True
    except ImageNotFound:
        return False


_failed: set[str] = set()
"""Images no registry gave in this process: not asked again for every trial."""


def pull(client: docker.DockerClient, image: str) -> bool:
    """Pull ``image``; False when no registry answers or it has no such image (remembered for the process)."""
    if image in _failed:
        return False
    try:
        client.images.pull(image if ":" in image.split("/")[-1] or "@" in image else f"{image}:latest")
        return True
    except _ERRORS:
        _failed.add(image)
        return False


def engine_reachable() -> Callable[[str], bool]:
    """present-or-pullable through the local engine; without an engine, nothing is (the base map decides)."""
    try:
        client = docker.from_env()
        client.ping()
    except _ERRORS:
        return lambda image: False

    @functools.lru_cache(maxsize=None)
    def reachable(image: str) -> bool:
        return present(client, image) or pull(client, image)

    return reachable
