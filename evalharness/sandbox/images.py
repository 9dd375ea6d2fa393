"""Image tiers: base -> environment (repository + dependencies) -> task (one-commit work tree).

A harness that installs an agent adds a tier: environment -> harness (the install steps) ->
task, so the install runs once per pack and the task's one commit is made last, as usual.

Every tag is a content hash of its recipe, so an unchanged recipe is never rebuilt and a
changed one always is. Builds use host networking and can inject a CA bundle so pip works
behind TLS-intercepting proxies.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import tarfile
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import docker
import requests
from docker.errors import DockerException, ImageNotFound

from evalharness.errors import ImageBuildError, PrerequisiteError, TaskError
from evalharness.packs import EnvironmentSpec, GitSource, Pack, PackSpec, PathSource, PypiSdistSource
from evalharness.sandbox.build_failures import BuildFailure, diagnose, engine_failure, is_task_defect
from evalharness.sandbox.sources import git_bundle, is_bundle, local_git_repository, path_source_tar
from evalharness.types import TaskSpec

HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
FORWARDED_BUILD_ENV = ("PIP_INDEX_URL", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                       "no_proxy")
Log = Callable[[str], None]
MAX_BUILD_ATTEMPTS = 2
"""Builds of one tag per ImageBuilder (one run): a transient failure gets a second chance, a broken recipe no more."""


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _data(name: str) -> bytes:
    return resources.files("evalharness.data").joinpath(name).read_bytes()


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


@dataclass(frozen=True)
class BaseRecipe:
    """A minimal Debian with Python, git and CA certificates."""

    name: str
    suite: str
    packages: tuple[str, ...]
    official_image: str
    python: str = ""
    """The version of the suite's ``python3`` ("3.9"); recipes that name a Python get this base."""

    @property
    def tag(self) -> str:
        return f"evalharness/base:{self.name}-{_hash(self.suite, self.packages)}"


BASE_PACKAGES = ("python3", "python3-venv", "git", "ca-certificates", "patch")
BASE_RECIPES = {
    "bullseye": BaseRecipe("bullseye", "bullseye", BASE_PACKAGES, "debian:bullseye-slim", "3.9"),
    "bookworm": BaseRecipe("bookworm", "bookworm", BASE_PACKAGES, "debian:bookworm-slim", "3.11"),
    "trixie": BaseRecipe("trixie", "trixie", BASE_PACKAGES, "debian:trixie-slim", "3.13"),
}
DEFAULT_BASE = "bookworm"


def pack_bases(pack: Pack | None) -> dict[str, BaseRecipe]:
    """The built-in bases plus those the pack adds (``bases:`` in pack.yaml)."""
    bases = dict(BASE_RECIPES)
    for name, spec in (pack.spec.bases.items() if pack is not None else ()):
        bases[name] = BaseRecipe(name, spec.suite, tuple(dict.fromkeys([*BASE_PACKAGES, *spec.packages])),
                                 spec.official_image or f"debian:{spec.suite}-slim", spec.python)
    return bases


def base_recipe(name: str, pack: Pack | None = None) -> BaseRecipe:
    bases = pack_bases(pack)
    try:
        return bases[name]
    except KeyError:
        raise PrerequisiteError(f"unknown base image recipe {name!r}", f"known: {', '.join(bases)}") from None


def base_for(env: EnvironmentSpec, pack: Pack | None = None) -> BaseRecipe:
    """The base an environment builds on: the one it names, else the one whose Python it names, else bookworm."""
    if env.base is not None:
        return base_recipe(env.base, pack)
    if env.python is None:
        return base_recipe(DEFAULT_BASE, pack)
    matching = [b for b in pack_bases(pack).values() if b.python == env.python]
    if not matching:
        known = ", ".join(f"{b.name} ({b.python})" for b in pack_bases(pack).values())
        raise TaskError(f"no base image ships Python {env.python}",
                        f"known bases: {known}; name another Python in the recipe, or add a base under "
                        "'bases:' in pack.yaml", reason=f"no base with Python {env.python}")
    return matching[0]


def require_base(client: docker.DockerClient, name: str, pack: Pack | None = None) -> str:
    tag = base_recipe(name, pack).tag
    if not image_exists(client, tag):
        raise PrerequisiteError(f"base image {tag} is missing",
                                f"build it with: evalharness sandbox bootstrap --base {name}")
    return tag


@dataclass
class BuildContext:
    """A Dockerfile plus the files it copies, hashed without the CA bundle (host-specific)."""

    dockerfile: str
    files: dict[str, bytes] = field(default_factory=dict)
    unhashed: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """Lines printed when the image is built (e.g. how a path source was copied)."""

    def digest(self, *extra: object) -> str:
        files = {k: hashlib.sha256(v).hexdigest() for k, v in sorted(self.files.items())}
        return _hash(self.dockerfile, files, *extra)

    def tar(self) -> io.BytesIO:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in {"Dockerfile": self.dockerfile.encode(), **self.files, **self.unhashed}.items():
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o755 if name.endswith((".sh", ".py")) else 0o644
                tar.addfile(info, io.BytesIO(data))
        buf.seek(0)
        return buf


def _source_steps(pack: Pack, env: EnvironmentSpec, ctx: BuildContext) -> list[str]:
    src, workdir = env.source, env.workdir
    if isinstance(src, PypiSdistSource):
        ctx.files["unpack_sdist.py"] = _data("unpack_sdist.py")
        return ["COPY unpack_sdist.py /usr/local/lib/evalharness/unpack_sdist.py",
                f"RUN pip download --no-deps --no-binary :all: -d /tmp/sdist {shlex.quote(f'{src.name}=={src.version}')}"
                f" && python3 /usr/local/lib/evalharness/unpack_sdist.py /tmp/sdist {workdir} {src.sha256 or ''}"
                " && rm -rf /tmp/sdist"]
    if isinstance(src, GitSource):
        local = local_git_repository(src.url, pack.root)
        if local is None:
            return [f"RUN git clone -q {shlex.quote(src.url)} {workdir} && git -C {workdir} checkout -q {shlex.quote(src.ref)}"]
        # the engine cannot see host paths: the repository travels in the build context, hashed by its commit
        data, commit = git_bundle(local, src.ref, src.url)
        if not is_bundle(data):  # a shallow mirror: its git directory, cloned inside the build
            ctx.unhashed["source.git.tar"] = data
            return ["ADD source.git.tar /tmp/evalharness-source/",
                    f"RUN git clone -q --no-checkout file:///tmp/evalharness-source/repo.git {workdir}"
                    f" && git -C {workdir} -c advice.detachedHead=false checkout -q {commit}"
                    f" && git -C {workdir} remote remove origin && rm -rf /tmp/evalharness-source"]
        ctx.unhashed["source.bundle"] = data
        bundle = "/tmp/evalharness-source.bundle"
        return [f"COPY source.bundle {bundle}",
                f"RUN git clone -q {bundle} {workdir} && git -C {workdir} checkout -q {commit}"
                f" && git -C {workdir} remote remove origin && rm -f {bundle}"]
    assert isinstance(src, PathSource)
    try:
        ctx.files["source.tar"], notes = path_source_tar((pack.root / src.path).resolve())
    except TaskError as e:
        raise TaskError(f"pack {pack.name}: environment.source: {e.message}", e.hint) from e
    ctx.notes += notes
    return [f"ADD source.tar {workdir}/"]


def environment_context(pack: Pack, base_tag: str, ca_bundle: bytes | None, spec: PackSpec | None = None) -> BuildContext:
    env = (spec or pack.spec).environment
    assert env is not None, "a recipe pack's environment comes from pack.spec_for(task)"
    ctx = BuildContext(dockerfile="")
    ctx.files["prepare_task.sh"] = _data("prepare_task.sh")
    ctx.files["rebuild_tree.sh"] = _data("rebuild_tree.sh")
    lines = [f"FROM {base_tag}",
             *[f"ARG {name}" for name in FORWARDED_BUILD_ENV],
             "ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 "
             "PIP_ROOT_USER_ACTION=ignore PYTHONDONTWRITEBYTECODE=1"]
    if ca_bundle is not None:
        ctx.unhashed["ca-bundle.crt"] = ca_bundle
        ca = "/etc/evalharness/ca-bundle.crt"
        lines += [f"COPY ca-bundle.crt {ca}",
                  f"ENV PIP_CERT={ca} SSL_CERT_FILE={ca} REQUESTS_CA_BUNDLE={ca} GIT_SSL_CAINFO={ca}"]
    if env.apt:
        lines.append("RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends "
                     + " ".join(shlex.quote(p) for p in env.apt) + " >/dev/null && rm -rf /var/lib/apt/lists/*")
    lines += ["RUN (id -u agent >/dev/null 2>&1 || useradd -m -u 1000 -s /bin/bash agent) && python3 -m venv /opt/venv",
              "ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin VIRTUAL_ENV=/opt/venv",
              *_source_steps(pack, env, ctx),
              f"WORKDIR {env.workdir}"]
    if env.pip:
        lines.append("RUN pip install " + " ".join(shlex.quote(r) for r in env.pip))
    lines += [f"RUN {cmd}" for cmd in env.setup]
    lines.append("COPY prepare_task.sh /usr/local/bin/evalharness-prepare-task")
    lines.append("COPY rebuild_tree.sh /usr/local/bin/evalharness-rebuild-tree")
    ctx.dockerfile = "\n".join(lines) + "\n"
    return ctx


def task_context(pack: Pack, task: TaskSpec, env_tag: str) -> BuildContext:
    workdir = pack.spec_for(task).environment.workdir
    ctx = BuildContext(dockerfile="")
    lines = [f"FROM {env_tag}"]
    task_setup = pack.spec_for(task).environment.task_setup
    if task_setup:  # the environment at the task's own commit (prepare_task.sh runs it after the checkout)
        ctx.files["task_setup.sh"] = ("set -e\n" + "\n".join(task_setup) + "\n").encode()
        lines += [*[f"ARG {name}" for name in FORWARDED_BUILD_ENV],
                  "COPY task_setup.sh /tmp/evalharness-task/task_setup.sh"]
    if task.defect_patch:
        ctx.files["defect.diff"] = task.defect_patch.encode()
        lines.append("COPY defect.diff /tmp/evalharness-task/defect.diff")
    upstream = shlex.quote(task.base_commit) if task.base_commit else ""
    lines.append(f"RUN EVALHARNESS_WORKDIR={workdir} evalharness-prepare-task {upstream}")
    ctx.dockerfile = "\n".join(lines) + "\n"
    return ctx


def harness_context(pack: Pack, env_tag: str, steps: list[str], workdir: str = "/testbed") -> BuildContext:
    """The environment plus a harness's install steps, run as root from ``/`` (the work tree stays as it was).

    Each step is a shell command (a ``RUN`` line) or, when it starts with ``ENV ``, an ENV line.
    """
    lines = [f"FROM {env_tag}", *[f"ARG {name}" for name in FORWARDED_BUILD_ENV], "WORKDIR /"]
    lines += [step if step.startswith("ENV ") else f"RUN {step}" for step in steps]
    lines.append(f"WORKDIR {workdir}")
    return BuildContext(dockerfile="\n".join(lines) + "\n")


class ImageBuilder:
    """Builds the image tiers of packs, each tag at most once, and says which it built."""

    def __init__(self, client: docker.DockerClient, *, ca_bundle: Path | bytes | None = None, log: Log | None = None,
                 registry: str | None = None):
        """``ca_bundle``: a file, or its bytes (a driver ships them to a node that may not have the file).
        ``registry`` (``HOST[:PORT][/PREFIX]``): an image missing here is pulled from it before it is built, and
        an image built here is pushed to it, so a cluster builds each image once."""
        self.client = client
        self.registry = registry.rstrip("/") if registry else None
        self.pulled: list[str] = []
        self._shared_bases: set[str] = set()
        self._shared: set[str] = set()
        """Tags this builder has pushed or pulled (once each)."""
        if isinstance(ca_bundle, bytes):
            self.ca_bundle: bytes | None = ca_bundle
        else:
            path = ca_bundle if ca_bundle is not None else (HOST_CA_BUNDLE if HOST_CA_BUNDLE.is_file() else None)
            self.ca_bundle = path.read_bytes() if path else None
        self.log = log or (lambda line: None)
        self.built: list[str] = []
        self.durations: dict[str, float] = {}
        """Seconds each image built by this builder took (images found already built are not here)."""
        self._locks: dict[str, threading.Lock] = {}
        self._failed: dict[str, list[ImageBuildError]] = {}
        self._broken: dict[str, TaskError] = {}
        self._guard = threading.Lock()

    def env_image(self, pack: Pack, task: TaskSpec | None = None) -> str:
        """The environment image of ``task`` (of the pack's one environment when ``task`` is None)."""
        if task is None and pack.spec.recipes is not None:
            raise ValueError("a recipe pack has one environment per task: pass the task")
        spec = pack.spec_for(task) if task is not None else pack.spec
        base = base_for(spec.environment, pack)
        if self.registry:  # the base is made by `sandbox bootstrap`, not built here: shared through the registry too
            with self._guard:
                lock = self._locks.setdefault(f"base {base.tag}", threading.Lock())
            with lock:
                if base.tag not in self._shared_bases:
                    self._shared_bases.add(base.tag)
                    if image_exists(self.client, base.tag):
                        self._push(base.tag)
                    else:
                        self._pull(base.tag)
        base_tag = require_base(self.client, base.name, pack)
        ctx = environment_context(pack, base_tag, self.ca_bundle, spec)
        key = pack.environment_key(task) if task is not None else "default"
        name = pack.name.lower() if key == "default" else key
        labels = {"evalharness.pack": pack.name, "evalharness.environment": key}
        return self._ensure(f"evalharness/env.{name}:{ctx.digest()}", ctx, spec.timeouts.build_s, labels)

    def task_image(self, pack: Pack, task: TaskSpec) -> str:
        env_tag = self.env_image(pack, task)
        ctx = task_context(pack, task, env_tag)
        tag = f"evalharness/task.{pack.name.lower()}:{ctx.digest(task.instance_id)}"
        return self._ensure(tag, ctx, pack.spec_for(task).timeouts.build_s,
                            {"evalharness.pack": pack.name, "evalharness.task": task.instance_id})

    def harness_image(self, pack: Pack, task: TaskSpec, install_steps: list[str]) -> str:
        """The task image built on the environment plus ``install_steps``: what a command-kind agent runs in."""
        env_tag = self.env_image(pack, task)
        spec = pack.spec_for(task)
        hctx = harness_context(pack, env_tag, install_steps, spec.environment.workdir)
        labels = {"evalharness.pack": pack.name}
        key = pack.environment_key(task)
        name = pack.name.lower() if key == "default" else key
        harness_env = self._ensure(f"evalharness/harness-env.{name}:{hctx.digest()}", hctx,
                                   spec.timeouts.build_s, labels, task_defects=False)
        ctx = task_context(pack, task, harness_env)
        tag = f"evalharness/harness-task.{pack.name.lower()}:{ctx.digest(task.instance_id)}"
        return self._ensure(tag, ctx, spec.timeouts.build_s, {**labels, "evalharness.task": task.instance_id})

    def ensure_image(self, tag: str, ctx: BuildContext, timeout: float, labels: dict[str, str]) -> str:
        """Build ``ctx`` as ``tag`` unless it exists, by the rules of this builder's own tiers (once per run; a broken
        recipe a TaskError, other failures ImageBuildError; shared through the registry): for images it has no
        tier for, such as a Harbor task's."""
        return self._ensure(tag, ctx, timeout, labels)

    def _ensure(self, tag: str, ctx: BuildContext, timeout: float, labels: dict[str, str], *,
                task_defects: bool = True) -> str:
        """Build ``tag`` unless it exists. A failure that says the recipe is broken (build_failures.is_task_defect)
        raises TaskError, now and for every later call; other failures raise ImageBuildError (infrastructure)."""
        with self._guard:
            lock = self._locks.setdefault(tag, threading.Lock())
        with lock:
            if tag in self._broken:
                raise self._broken[tag]
            failures = self._failed.get(tag, [])
            if len(failures) >= MAX_BUILD_ATTEMPTS:  # a broken recipe is not rebuilt for every trial
                raise ImageBuildError(f"building {tag} failed {len(failures)} times in this run; not trying again",
                                      failures[-1].log_tail, reason=failures[-1].reason, kind=failures[-1].kind)
            if self.registry and tag not in self._shared and image_exists(self.client, tag):
                self._shared.add(tag)  # built here earlier: make sure the registry has it too (cheap when it does)
                self._push(tag)
            if not image_exists(self.client, tag) and not (self.registry and self._pull(tag)):
                self.log(f"building {tag}")
                for note in ctx.notes:
                    self.log(f"note: {note}")
                started = time.monotonic()
                try:
                    build_image(self.client, tag, ctx, timeout=timeout, labels=labels)
                except ImageBuildError as e:
                    history = self._failed.setdefault(tag, [])
                    history.append(e)
                    diagnoses = [BuildFailure(f.reason, f.kind) for f in history]  # type: ignore[arg-type]
                    if task_defects and is_task_defect(diagnoses):
                        self._broken[tag] = TaskError(f"image {tag} cannot be built: {e.reason}",
                                                      "the task or its pack's environment recipe is broken; fix the "
                                                      "pack and run again", reason=e.reason)
                        raise self._broken[tag] from e
                    raise
                self.built.append(tag)
                self.durations[tag] = round(time.monotonic() - started, 1)
                if self.registry:
                    self._shared.add(tag)
                    self._push(tag)
        return tag

    def _pull(self, tag: str) -> bool:
        """``tag`` from the registry, named ``tag`` here; False when the registry does not have it (or answers not)."""
        remote = registry_ref(self.registry, tag)
        try:
            image = self.client.images.pull(*remote.rsplit(":", 1))
            image.tag(*tag.rsplit(":", 1))
            self._untag(remote)
        except (DockerException, requests.exceptions.RequestException) as e:
            self.log(f"not in registry {self.registry}: {tag} ({_first_line(e)}); building it")
            return False
        self.log(f"pulled {tag} from {self.registry}")
        self.pulled.append(tag)
        self._shared.add(tag)
        return True

    def _push(self, tag: str) -> None:
        """Push a built image (a failed push costs the others a build, nothing else: logged, not raised)."""
        remote = registry_ref(self.registry, tag)
        try:
            self.client.images.get(tag).tag(*remote.rsplit(":", 1))
            for line in self.client.images.push(*remote.rsplit(":", 1), stream=True, decode=True):
                if "error" in line:
                    raise DockerException(line["error"])
            self.log(f"pushed {tag} to {self.registry}")
        except (DockerException, requests.exceptions.RequestException) as e:
            self.log(f"warning: could not push {tag} to {self.registry}: {_first_line(e)}")
        finally:
            self._untag(remote)

    def _untag(self, remote: str) -> None:
        """Drop the registry's name of an image here (the image stays under its own tag)."""
        try:
            self.client.images.remove(remote, noprune=True)
        except (DockerException, requests.exceptions.RequestException):
            pass


def registry_ref(registry: str, tag: str) -> str:
    """The registry's name for ``tag`` (pure): ``127.0.0.1:5000/team`` + ``evalharness/task.p:abc`` ->
    ``127.0.0.1:5000/team/evalharness/task.p:abc``."""
    return f"{registry.rstrip('/')}/{tag}"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else type(e).__name__


def build_image(client: docker.DockerClient, tag: str, ctx: BuildContext, *, timeout: float,
                labels: dict[str, str] | None = None) -> None:
    """Build with host networking; raise ImageBuildError with the log tail on failure."""
    buildargs = {k: v for k, v in os.environ.items() if k in FORWARDED_BUILD_ENV}
    log: list[str] = []
    try:
        for chunk in client.api.build(fileobj=ctx.tar(), custom_context=True, tag=tag, rm=True, forcerm=True,
                                      network_mode="host", decode=True, timeout=int(timeout), labels=labels,
                                      buildargs=buildargs):
            if "stream" in chunk:
                log.append(chunk["stream"])
            if "error" in chunk:
                failure = diagnose("".join(log), chunk["error"])
                raise ImageBuildError(f"building {tag} failed: {chunk['error'].strip()}", "".join(log)[-3000:],
                                      reason=failure.reason, kind=failure.kind)
    except (DockerException, requests.exceptions.RequestException) as e:
        failure = engine_failure(f"{type(e).__name__}: {e}")
        raise ImageBuildError(f"building {tag} failed: {e}", "".join(log)[-3000:], reason=failure.reason,
                              kind=failure.kind) from e
