"""Offline bases for Harbor tasks (pure): a registry image name -> a local image, and the FROM line rewritten.

Pulling stays the normal path: ``choose_base`` maps an image only when it is not present locally and could not
be pulled. The shipped map is small on purpose (images whose Debian and Python a bootstrapped evalharness base
matches); a user map file extends it. A mapped base is Debian with ``python3`` only, so ``prelude`` adds what a
Harbor Dockerfile expects of an official image: pip, a ``python`` alias, the host CA bundle at its own path.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from evalharness.errors import UserError

DEFAULT_MAP: dict[str, str] = {
    "python:3.13*": "evalharness-base:trixie",
    "python:3.11*": "evalharness-base:bookworm",
    "python:3.9*": "evalharness-base:bullseye",
    "debian:bookworm*": "evalharness-base:bookworm",
    "debian:trixie*": "evalharness-base:trixie",
    "debian:bullseye*": "evalharness-base:bullseye",
}
"""Pattern (fnmatch over the image name as written, ``docker.io/`` and ``library/`` dropped) -> local image.
``evalharness-base:<name>`` is the bootstrapped base of that name (``evalharness sandbox bootstrap``); any other
value is an image name used as is. Only exact Python versions are mapped (there is no 3.12 base), and ``ubuntu:*``
is not: a Debian base is not Ubuntu, a user map may choose it knowingly (tasks/harbor-overlays/base-map.yaml)."""
LOCAL_BASE = "evalharness-base:"
CA_PATH = "/etc/ssl/evalharness-host-ca.crt"
_FROM = re.compile(r"^(?P<lead>\s*FROM\s+)(?P<flags>(?:--\S+\s+)*)(?P<image>\S+)(?P<rest>.*)$", re.IGNORECASE)
_COPY_FROM = re.compile(r"^\s*(?:COPY|ADD)\s+(?:--\S+\s+)*?--from=(?P<src>\S+)", re.IGNORECASE)


def normalise(image: str) -> str:
    """``docker.io/library/python:3.13`` -> ``python:3.13`` (how the map's patterns are written)."""
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if image.startswith(prefix):
            image = image[len(prefix):]
    return image[len("library/"):] if image.startswith("library/") else image


def load_map(path: Path | None) -> dict[str, str]:
    """The default map extended (and overridden, pattern by pattern) by a YAML mapping file."""
    mapping = dict(DEFAULT_MAP)
    if path is None:
        return mapping
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise UserError(f"base map {path}: cannot be read: {e}") from e
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in raw.items()):
        raise UserError(f"base map {path}: expected a mapping of image pattern -> local image (strings)",
                        'e.g.  "ubuntu:24.04": evalharness-base:bookworm')
    mapping.update(raw)
    return mapping


def map_image(image: str, mapping: dict[str, str]) -> str | None:
    """The local image ``image`` maps to (the longest matching pattern wins), or None."""
    name = normalise(image)
    matches = [p for p in mapping if fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(image, p)]
    return mapping[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class BaseChoice:
    image: str | None
    """What the FROM line uses, or None when nothing can be used (``reason`` says why)."""
    mapped: bool
    reason: str


def choose_base(image: str, *, present: bool, pulled: bool, mapping: dict[str, str]) -> BaseChoice:
    """Pure: an image present locally is used; else one that was pulled; else the map's; else nothing."""
    if present:
        return BaseChoice(image, False, "present locally")
    if pulled:
        return BaseChoice(image, False, "pulled")
    local = map_image(image, mapping)
    if local is None:
        return BaseChoice(None, False, f"base image {image} cannot be pulled and the base map has no entry for it")
    return BaseChoice(local, True, f"{image} cannot be pulled: mapped to {local}")


def from_images(dockerfile: str) -> list[str]:
    """The images the FROM lines name, stage names left out."""
    stages, images = set(), []
    for line in dockerfile.splitlines():
        match = _FROM.match(line)
        if match:
            image = match.group("image")
            if image.lower() not in stages:
                images.append(image)
            alias = re.search(r"\bAS\s+(\S+)", match.group("rest"), re.IGNORECASE)
            if alias:
                stages.add(alias.group(1).lower())
    return images


def copy_from_images(dockerfile: str) -> list[str]:
    """Images ``COPY --from=`` reads that are not stages of this Dockerfile (a registry image)."""
    stages = {m.lower() for m in re.findall(r"^\s*FROM\s+.*?\bAS\s+(\S+)", dockerfile, re.I | re.M)}
    found = []
    for line in dockerfile.splitlines():
        match = _COPY_FROM.match(line)
        if match and match.group("src").lower() not in stages and not match.group("src").isdigit():
            found.append(match.group("src"))
    return found


def prelude(has_ca: bool) -> list[str]:
    """What a mapped Debian base lacks that Harbor Dockerfiles assume (the hand runs' recipe)."""
    lines = []
    if has_ca:  # a separate path: the ca-certificates package regenerates the system bundle
        lines += [f"COPY evalharness-host-ca.crt {CA_PATH}",
                  f"ENV SSL_CERT_FILE={CA_PATH} PIP_CERT={CA_PATH} REQUESTS_CA_BUNDLE={CA_PATH} UV_NATIVE_TLS=1"]
    lines += ["ENV DEBIAN_FRONTEND=noninteractive PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "
              "PIP_ROOT_USER_ACTION=ignore",
              "RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-pip python3-venv "
              "ca-certificates >/dev/null && rm -rf /var/lib/apt/lists/* "
              "&& ln -sf /usr/bin/python3 /usr/local/bin/python"]
    return lines


def rewrite_from(dockerfile: str, replace: dict[str, str], extra: list[str]) -> str:
    """Pure: every FROM naming a key of ``replace`` names its value instead (``--platform=`` dropped: the local
    image is this machine's), followed by ``extra`` lines; stage names (``AS x``) kept."""
    out = []
    for line in dockerfile.splitlines():
        match = _FROM.match(line)
        if match and match.group("image") in replace:
            out.append(f"{match.group('lead')}{replace[match.group('image')]}{match.group('rest')}")
            out += extra
        else:
            out.append(line)
    return "\n".join(out) + "\n"
