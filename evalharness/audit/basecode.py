"""Where an audit reads a task's code at base: a git mirror, the pack's git or path source, or the task image.

In order: the pack's repository mirror (``owner__name.git`` holding ``base_commit``); the environment's
local git source at ``base_commit`` (or its ref); the pack's path source; else, with Docker, the base
commit copied out of the task's image (built once per task, cached), which is also the only faithful
base for tasks with a ``defect_patch`` (the injected bug is part of the base there). ``None`` when
none applies (a task without an environment recipe has no source and no image: only a mirror serves
it): probes then say they decided from the patches only.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import Callable

from evalharness.audit.context import BaseCode, DirBaseCode, GitBaseCode
from evalharness.packs import GitSource, PathSource, mirror_name
from evalharness.sandbox.base import BASE_GIT
from evalharness.types import TaskSpec


def _git_dir(url: str) -> Path | None:
    path = Path(url)
    if path.is_dir() and ((path / "HEAD").is_file() or (path / ".git").exists()):
        return path / ".git" if (path / ".git").is_dir() else path
    return None


def from_sources(pack, task: TaskSpec) -> BaseCode | None:
    """The task's base from the host's files alone (mirror, local git, path source), or None."""
    if task.defect_patch:
        return None
    mirror = pack.mirror()
    if mirror is not None and task.repo and task.base_commit:
        git = mirror / f"{mirror_name(task.repo)}.git"
        if git.is_dir():
            return GitBaseCode(git, task.base_commit)
    if pack.recipe_problem(task) is not None:
        return None
    source = pack.spec_for(task).environment.source
    if isinstance(source, GitSource):
        git = _git_dir(source.url if Path(source.url).is_absolute() else str(pack.root / source.url))
        if git is not None:
            return GitBaseCode(git, task.base_commit or source.ref)
    if isinstance(source, PathSource):
        root = (pack.root / source.path).resolve()
        return DirBaseCode(root) if root.is_dir() else None
    return None


class ImageBaseCode:
    """Copies a task image's base commit (its packed ``base.git``; an older image's work tree) to a temporary
    folder, once per task, with a labelled, never-started container that is removed at once."""

    def __init__(self, client, builder, pack, run_id: str):
        self.client, self.builder, self.pack, self.run_id = client, builder, pack, run_id
        self._dir = Path(tempfile.mkdtemp(prefix="eh-audit-base-"))
        self._cache: dict[str, BaseCode] = {}

    def __call__(self, task: TaskSpec) -> BaseCode | None:
        found = from_sources(self.pack, task)
        if found is not None or self.pack.recipe_problem(task) is not None:
            return found
        if task.instance_id not in self._cache:
            self._cache[task.instance_id] = self._extract(task)
        return self._cache[task.instance_id]

    def _extract(self, task: TaskSpec) -> BaseCode:
        from docker.errors import NotFound

        from evalharness.sandbox.engine import LABEL_ROLE, LABEL_RUN, LABEL_TRIAL

        image = self.builder.task_image(self.pack, task)
        workdir = self.pack.spec_for(task).environment.workdir
        container = self.client.containers.create(
            image, command=["true"], network_mode="none",
            labels={LABEL_RUN: self.run_id, LABEL_TRIAL: f"{self.pack.name}/{task.instance_id}/audit",
                    LABEL_ROLE: "audit"})
        out = self._dir / task.instance_id
        out.mkdir(parents=True, exist_ok=True)
        try:
            try:
                data, packed = _archive(container, BASE_GIT), True
            except NotFound:  # an image prepared before its layer held a packed commit: the work tree itself
                data, packed = _archive(container, workdir), False
        finally:
            container.remove(force=True)
        _untar(data, out)
        if packed:
            return GitBaseCode(out / Path(BASE_GIT).name, "HEAD")
        return DirBaseCode(out / Path(workdir).name)  # the archive holds the folder itself: testbed/...



def _archive(container, path: str) -> io.BytesIO:
    stream, _ = container.get_archive(path)
    return io.BytesIO(b"".join(stream))


def _untar(data: io.BytesIO, out: Path) -> None:
    with tarfile.open(fileobj=data) as tar:
        members = [m for m in tar.getmembers() if (m.isfile() or m.isdir()) and not m.name.startswith(("/", ".."))
                   and ".." not in Path(m.name).parts]
        tar.extractall(out, members=members, filter="data")


def base_code_provider(pack, *, client=None, builder=None, run_id: str = "audit") -> Callable[[TaskSpec], BaseCode | None]:
    """The best base-code reader available: image extraction when Docker is given, else host files only."""
    if client is not None and builder is not None:
        return ImageBaseCode(client, builder, pack, run_id)
    return lambda task: from_sources(pack, task)
