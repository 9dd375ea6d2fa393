"""Make the base image: pull an official image where a registry answers, else debootstrap locally."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import docker
import requests
from docker.errors import DockerException

from evalharness.errors import ImageBuildError, PrerequisiteError
from evalharness.sandbox.images import BaseRecipe, BuildContext, Log, build_image, image_exists

DEFAULT_MIRROR = "http://deb.debian.org/debian"
_IMPORT_CHANGES = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 'CMD ["/bin/bash"]']


def host_debian_mirror(sources_dir: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this host's apt uses (deb822 .sources first, then sources.list)."""
    for path in sorted((sources_dir / "sources.list.d").glob("*.sources")):
        for block in path.read_text().split("\n\n"):
            uris = re.search(r"^URIs:\s*(\S+)", block, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", block, re.M)
            if uris and suites and "security" not in suites.group(1) and "updates" not in suites.group(1).split()[0]:
                return uris.group(1).rstrip("/")
    legacy = sources_dir / "sources.list"
    if legacy.is_file():
        for line in legacy.read_text().splitlines():
            m = re.match(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+", line.strip())
            if m and "security" not in m.group(1):
                return m.group(1).rstrip("/")
    return DEFAULT_MIRROR


def bootstrap_base(client: docker.DockerClient, recipe: BaseRecipe, *, method: str = "auto",
                   mirror: str | None = None, log: Log = print, rebuild: bool = False) -> str:
    """Ensure ``recipe.tag`` exists. Returns how: 'present', 'pulled', or 'debootstrap'."""
    if image_exists(client, recipe.tag) and not rebuild:
        return "present"
    if method in ("auto", "pull"):
        try:
            _from_official(client, recipe, log)
            return "pulled"
        except (DockerException, requests.exceptions.RequestException, ImageBuildError) as e:
            if method == "pull":
                raise PrerequisiteError(f"could not pull {recipe.official_image}: {e}",
                                        "use --method debootstrap where no registry is reachable") from e
            log(f"pulling {recipe.official_image} failed ({str(e).splitlines()[0][:160]}); using debootstrap")
    _from_debootstrap(client, recipe, mirror or host_debian_mirror(), log)
    return "debootstrap"


def _from_official(client: docker.DockerClient, recipe: BaseRecipe, log: Log) -> None:
    log(f"pulling {recipe.official_image}")
    client.images.pull(recipe.official_image)
    packages = " ".join(recipe.packages)
    dockerfile = (f"FROM {recipe.official_image}\n"
                  "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                  f"{packages} && rm -rf /var/lib/apt/lists/*\n")
    build_image(client, recipe.tag, BuildContext(dockerfile=dockerfile), timeout=1800)


def _from_debootstrap(client: docker.DockerClient, recipe: BaseRecipe, mirror: str, log: Log) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise PrerequisiteError("debootstrap is not installed and no registry answered",
                                "install it (apt-get install -y debootstrap) or give the engine registry access")
    if os.geteuid() != 0:
        raise PrerequisiteError("debootstrap needs root", "run `evalharness sandbox bootstrap` as root once")
    with tempfile.TemporaryDirectory(prefix="evalharness-rootfs-") as tmp:
        rootfs, archive = Path(tmp) / "rootfs", Path(tmp) / "rootfs.tar"
        cmd = [debootstrap, "--variant=minbase", f"--include={','.join(recipe.packages)}", recipe.suite,
               str(rootfs), mirror]
        log(f"debootstrap {recipe.suite} from {mirror} (about a minute)")
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise ImageBuildError(f"debootstrap failed (exit {done.returncode})", (done.stdout + done.stderr)[-3000:])
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True)
        repository, tag = recipe.tag.rsplit(":", 1)
        log(f"importing {recipe.tag}")
        try:
            client.api.import_image(src=str(archive), repository=repository, tag=tag, changes=_IMPORT_CHANGES)
        except (DockerException, requests.exceptions.RequestException) as e:
            raise ImageBuildError(f"docker import of {recipe.tag} failed: {e}") from e
    if not image_exists(client, recipe.tag):
        raise ImageBuildError(f"docker import did not produce {recipe.tag}")
