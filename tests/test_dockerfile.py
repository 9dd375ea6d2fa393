"""The repository's Dockerfile builds (from the local base image, behind the TLS proxy, with the
host's CA bundle) and the image drives the host's Docker engine through the mounted socket.

Pins: a cron image that built on a laptop with registry access and nowhere else.
"""

from __future__ import annotations

import io
import subprocess
import tarfile

import pytest
from support import REPO

from evalharness.sandbox.images import HOST_CA_BUNDLE, BuildContext, build_image

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _context() -> BuildContext:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    ctx = BuildContext(dockerfile=(REPO / "Dockerfile").read_text())
    for name in files:
        path = REPO / name
        if path.is_file() and name != "Dockerfile":
            ctx.files[name] = path.read_bytes()
    if HOST_CA_BUNDLE.is_file():
        ctx.unhashed[".ca-bundle.crt"] = HOST_CA_BUNDLE.read_bytes()
    return ctx


def test_dockerfile_builds_and_reaches_the_engine(docker_client, base_image):
    tag = "evalharness/self-test:latest"
    ctx = _context()
    buf = ctx.tar()
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        assert "pyproject.toml" in tar.getnames() and ".venv" not in {n.split("/")[0] for n in tar.getnames()}
    original = ctx.dockerfile
    assert original.startswith("#") and "ARG BASE=" in original
    # point the Dockerfile's default base at the local image (no registry here)
    ctx.dockerfile = original.replace("ARG BASE=python:3.11-slim-bookworm", f"ARG BASE={base_image}")
    build_image(docker_client, tag, ctx, timeout=1800)
    out = docker_client.containers.run(tag, ["sandbox", "gc", "--run-id", "no-such-run"], remove=True,
                                       network_mode="none",
                                       volumes={"/var/run/docker.sock": {"bind": "/var/run/docker.sock", "mode": "rw"}})
    assert out.decode().strip() == "removed 0 container(s)"
    version = docker_client.containers.run(tag, ["--version"], remove=True, network_mode="none").decode()
    assert "version" in version
