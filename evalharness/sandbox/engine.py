"""Connecting to the Docker engine, with errors that say what to do."""

from __future__ import annotations

import shutil
import subprocess

import docker
from docker.errors import DockerException

from evalharness.errors import PrerequisiteError

LABEL_RUN = "evalharness.run_id"
LABEL_TRIAL = "evalharness.trial"
LABEL_ROLE = "evalharness.role"

_START_HINT = "Start the engine (as root: dockerd --bridge=none --iptables=false &) or run scripts/setup, then retry"


def docker_client(timeout: float = 900) -> docker.DockerClient:
    """A client whose engine answered a ping; PrerequisiteError otherwise (never a silent skip)."""
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except DockerException as e:
        client_version = _client_version()
        raise PrerequisiteError(
            f"Docker engine not reachable ({client_version}; {type(e).__name__}: {_first_line(e)})", _START_HINT
        ) from e
    return client


def _client_version() -> str:
    docker_cli = shutil.which("docker")
    if not docker_cli:
        return "no docker CLI found"
    try:
        out = subprocess.run([docker_cli, "--version"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "docker CLI present"
    return f"client found: {out}"


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else ""
