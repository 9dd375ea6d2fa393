"""A Harbor task's images: its environment (environment/Dockerfile) and, in separate mode, its verifier
(tests/Dockerfile), each built from a copy of the task with its overlays applied.

Each FROM image is used as is when present or pullable; else the base map's local image, with the prelude a
bare Debian base needs (basemap.prelude). Tags are content hashes of the rewritten Dockerfile and the context
files (ImageBuilder builds each once); the host CA bundle travels unhashed, as for every other image.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import docker

from evalharness.errors import SandboxError, TaskError
from evalharness.packs import Pack
from evalharness.sandbox.images import BuildContext, ImageBuilder, harness_context, require_base
from evalharness.sources.harbor.basemap import LOCAL_BASE, choose_base, from_images, load_map, prelude, rewrite_from
from evalharness.sources.harbor.model import HarborTask
from evalharness.sources.harbor.overlays import apply_overlays, overlay_patches
from evalharness.sources.harbor.pulls import present, pull
from evalharness.sources.harbor.run.container import ERRORS
from evalharness.types import TaskSpec

_lock = threading.Lock()
_copies: dict[tuple[str, str], HarborTask] = {}
_scratch = tempfile.TemporaryDirectory(prefix="evalharness-harbor-")


def harbor_task(pack: Pack, task: TaskSpec) -> HarborTask:
    """The task as it runs: a copy of its directory with the pack's overlays applied (once per pack hash)."""
    assert pack.spec.harbor is not None, "not a harbor pack"
    key = (pack.content_hash, task.instance_id)
    with _lock:
        if key not in _copies:
            spec = pack.spec.harbor
            overlays = pack.root / spec.overlays if spec.overlays else None
            dest = Path(_scratch.name) / pack.content_hash[:16] / task.instance_id
            copy = apply_overlays(pack.root / spec.tasks_dir / task.instance_id,
                                  overlay_patches(overlays, task.instance_id), dest)
            _copies[key] = HarborTask.load(copy)
        return _copies[key]


def _context_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.relative_to(folder).as_posix() != "Dockerfile"}


class HarborImages:
    """Builds a Harbor pack's images through the run's ImageBuilder (each tag once per run)."""

    def __init__(self, builder: ImageBuilder):
        self.builder, self.client = builder, builder.client
        self.notes: list[str] = []

    def _base(self, image: str, mapping: dict[str, str], task_id: str) -> tuple[str, bool]:
        here = present(self.client, image)
        choice = choose_base(image, present=here, pulled=not here and pull(self.client, image), mapping=mapping)
        if choice.image is None:
            raise TaskError(f"task {task_id}: {choice.reason}", "add a mapping: packs import harbor --base-map",
                            reason=choice.reason)
        self.notes.append(choice.reason)
        if choice.image.startswith(LOCAL_BASE):
            return require_base(self.client, choice.image[len(LOCAL_BASE):]), choice.mapped
        return choice.image, choice.mapped

    def _context(self, pack: Pack, folder: Path, dockerfile: str, task_id: str) -> BuildContext:
        mapping = load_map(pack.root / pack.spec.harbor.base_map if pack.spec.harbor.base_map else None)
        replace, mapped = {}, False
        for image in from_images(dockerfile):
            replace[image], was_mapped = self._base(image, mapping, task_id)
            mapped = mapped or was_mapped
        ca = self.builder.ca_bundle if mapped else None
        ctx = BuildContext(dockerfile=rewrite_from(dockerfile, replace, prelude(ca is not None) if mapped else []),
                           files=_context_files(folder))
        if ca is not None:
            ctx.unhashed["evalharness-host-ca.crt"] = ca
        return ctx

    def _build(self, pack: Pack, task: HarborTask, spec: TaskSpec, folder: Path, dockerfile: Path, role: str) -> str:
        ctx = self._context(pack, folder, dockerfile.read_text(), spec.instance_id)
        tag = f"evalharness/harbor-{role}.{pack.name.lower()}:{ctx.digest(spec.instance_id, role)}"
        labels = {"evalharness.pack": pack.name, "evalharness.task": spec.instance_id}
        return self.builder.ensure_image(tag, ctx, task.config.environment.build_timeout_sec, labels)

    def environment(self, pack: Pack, spec: TaskSpec) -> str:
        task = harbor_task(pack, spec)
        if task.dockerfile is None:
            raise TaskError(f"task {spec.instance_id}: no environment/Dockerfile", reason="no environment/Dockerfile")
        return self._build(pack, task, spec, task.environment_dir, task.dockerfile, "env")

    def harness(self, pack: Pack, spec: TaskSpec, env_image: str, steps: list[str], workdir: str) -> str:
        """The environment image plus a harness's install steps (run as root from /, network at build time only):
        what a ``command`` agent with install steps runs in. The agent's changes are read against it."""
        task = harbor_task(pack, spec)
        ctx = harness_context(pack, env_image, steps, workdir)
        tag = f"evalharness/harbor-harness.{pack.name.lower()}:{ctx.digest(spec.instance_id, 'harness')}"
        labels = {"evalharness.pack": pack.name, "evalharness.task": spec.instance_id}
        return self.builder.ensure_image(tag, ctx, task.config.environment.build_timeout_sec, labels)

    def verifier(self, pack: Pack, spec: TaskSpec) -> str | None:
        """The separate verifier's image, or None when the verifier shares the agent's final filesystem."""
        task = harbor_task(pack, spec)
        if not task.config.verifier.separate:
            return None
        if task.verifier_dockerfile is None:
            raise TaskError(f"task {spec.instance_id}: separate verifier without tests/Dockerfile",
                            reason="separate verifier without tests/Dockerfile")
        return self._build(pack, task, spec, task.tests_dir, task.verifier_dockerfile, "verifier")


def image_workdir(client: docker.DockerClient, image: str) -> str:
    """The image's WORKDIR, else /."""
    try:
        return client.images.get(image).attrs.get("Config", {}).get("WorkingDir") or "/"
    except ERRORS as e:
        raise SandboxError(f"could not read the configuration of {image}: {e}") from e


def workdir_of(client: docker.DockerClient, image: str, task: HarborTask) -> str:
    """``[environment].workdir``, else the image's WORKDIR, else /."""
    return task.config.environment.workdir or image_workdir(client, image)
