"""Docker sandbox: one container per trial, sealed (no network), limited, labelled, always removed."""

from __future__ import annotations

import io
import logging
import os
import shutil
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import docker
import requests
from docker.errors import DockerException, NotFound

from evalharness.errors import SandboxError
from evalharness.sandbox.base import AGENT_USER, Limits, Sandbox, clip_output
from evalharness.sandbox.engine import LABEL_ROLE, LABEL_RUN, LABEL_TRIAL
from evalharness.types import ExecResult

log = logging.getLogger(__name__)
AGENT_UID = 1000
"""uid and gid of the non-root ``agent`` user in every task image (images.py creates it)."""
_DOCKER_ERRORS = (DockerException, requests.exceptions.RequestException, OSError)
_HOST_GRACE_S = 30.0  # how long past its own timeout an exec may take before the host gives up on it
_exec_pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="eh-exec")
_base_commits: dict[str, str] = {}
"""Image -> its task's base commit: fixed at build time, so read once per image, not per container."""


class DockerSandbox(Sandbox):
    """A container started from a task image with ``network_mode=none`` and CPU/memory/pids limits.

    ``shared_dirs`` are container paths that each get a fresh, private host folder (created at
    start, removed at close), mounted read-only: the host puts files or a unix socket there
    (see :meth:`shared_dir`), the sandbox can read them but not change them.
    """

    def __init__(self, client: docker.DockerClient, image: str, *, run_id: str, trial: str,
                 role: str = "agent", limits: Limits = Limits(), workdir: str = "/testbed",
                 default_timeout: float = 120.0, shared_dirs: tuple[str, ...] | list[str] = ()):
        self.client, self.image, self.workdir = client, image, workdir
        self.default_timeout = default_timeout
        self.labels = {LABEL_RUN: run_id, LABEL_TRIAL: trial, LABEL_ROLE: role}
        self.limits = limits
        self.container = None
        self._lock = threading.Lock()
        self._shared_paths = tuple(shared_dirs)
        self._shared: dict[str, Path] = {}

    def shared_dir(self, container_path: str) -> Path:
        """The host folder mounted at ``container_path`` (one of ``shared_dirs``)."""
        try:
            return self._shared[container_path]
        except KeyError:
            raise SandboxError(f"{container_path} is not a shared folder of this sandbox "
                               f"(shared: {', '.join(self._shared) or 'none'})") from None

    def _mounts(self) -> dict[str, dict[str, str]]:
        """Fresh host folders: neutral names in the system temp dir, private to the agent's uid (see _give_to_agent)."""
        volumes = {}
        for container_path in self._shared_paths:
            host = Path(tempfile.mkdtemp(prefix="evalharness-"))  # mode 0700
            _give_to_agent(host)
            self._shared[container_path] = host
            volumes[str(host)] = {"bind": container_path, "mode": "ro"}
        return volumes

    def start(self) -> "DockerSandbox":
        try:
            self.container = self.client.containers.run(
                self.image, command=["sleep", "infinity"], detach=True, init=True,
                network_mode="none", labels=self.labels, working_dir=self.workdir, user="root",
                mem_limit=self.limits.memory, memswap_limit=self.limits.memory,
                nano_cpus=int(self.limits.cpus * 1e9), pids_limit=self.limits.pids,
                environment={"HOME": f"/home/{AGENT_USER}"}, volumes=self._mounts() or None,
            )
        except _DOCKER_ERRORS as e:
            self._remove_shared()
            raise SandboxError(f"could not start a container from {self.image}: {e}") from e
        return self

    @property
    def id(self) -> str:
        return self.container.id if self.container else ""

    def _exec(self, argv, *, timeout, env, user, workdir) -> ExecResult:
        if self.container is None:
            raise SandboxError("sandbox used before start()")
        api = self.client.api
        started = time.monotonic()
        try:
            exec_id = api.exec_create(self.container.id, argv, user=user, workdir=workdir, environment=env or None)
            future = _exec_pool.submit(_read_all, api.exec_start(exec_id, stream=True))
            data = future.result(timeout=timeout + _HOST_GRACE_S)
            code = api.exec_inspect(exec_id).get("ExitCode")
        except FutureTimeout as e:
            self.close()
            raise SandboxError(f"exec did not return {timeout + _HOST_GRACE_S:.0f} s after its timeout; "
                               "container removed") from e
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"exec failed in container {self.id[:12]}: {e}") from e
        duration = time.monotonic() - started
        code = -1 if code is None else int(code)
        timed_out = code in (124, 137) and duration >= timeout - 0.5
        return ExecResult(exit_code=code, output=clip_output(data), timed_out=timed_out, duration_s=duration)

    def write_file(self, path: str, content: str | bytes, *, user: str = AGENT_USER) -> None:
        data = content.encode() if isinstance(content, str) else content
        directory, _, name = path.rpartition("/")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            if user == AGENT_USER:
                info.uid = info.gid = 1000
            tar.addfile(info, io.BytesIO(data))
        self.ensure_dir(directory or "/", user=user)
        try:
            ok = self.container.put_archive(directory or "/", buf.getvalue())
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"could not write {path} into the sandbox: {e}") from e
        if not ok:
            raise SandboxError(f"could not write {path} into the sandbox")

    def base_commit(self) -> str:
        if self.image not in _base_commits:
            _base_commits[self.image] = super().base_commit()
        return _base_commits[self.image]

    def read_file(self, path: str) -> bytes:
        try:
            stream, _ = self.container.get_archive(path)
            raw = b"".join(stream)
        except NotFound as e:
            raise FileNotFoundError(path) from e
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"could not read {path} from the sandbox: {e}") from e
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            member = tar.next()
            extracted = tar.extractfile(member) if member else None
            if extracted is None:
                raise FileNotFoundError(path)
            return extracted.read()

    def close(self) -> None:
        with self._lock:
            container, self.container = self.container, None
        if container is None:
            self._remove_shared()
            return
        try:
            container.remove(force=True)
        except NotFound:
            pass
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"could not remove container {container.id[:12]}: {e}") from e
        finally:
            self._remove_shared()

    def _remove_shared(self) -> None:
        for host in self._shared.values():
            shutil.rmtree(host, ignore_errors=True)


def _give_to_agent(folder: Path) -> None:
    """Owner uid/gid 1000 (the image's ``agent``), mode 0700: the agent and root reach it, other users do not.

    A host that is neither root nor uid 1000 cannot give the folder away: it stays ours with mode 0711
    (the relay then makes its socket 0666, and other local users could reach it), with a warning.
    """
    if os.geteuid() == AGENT_UID:
        return
    try:
        os.chown(folder, AGENT_UID, AGENT_UID)
    except PermissionError:
        os.chmod(folder, 0o711)
        log.warning("cannot give %s to uid %d (run as root or as uid %d): any local user could use its socket",
                    folder, AGENT_UID, AGENT_UID)


def _read_all(chunks) -> bytes:
    out = bytearray()
    for chunk in chunks:
        if len(out) < 4 * 2_000_000:
            out.extend(chunk)
    return bytes(out)


def remove_labelled(client: docker.DockerClient, run_id: str | None = None) -> int:
    """Remove every evalharness container (of one run, or all). Returns how many were removed."""
    label = f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN
    removed = 0
    for entry in client.api.containers(all=True, filters={"label": label}):
        try:
            client.api.remove_container(entry["Id"], force=True)
            removed += 1
        except NotFound:  # removed meanwhile by its own trial
            pass
        except DockerException as e:
            if "already in progress" not in str(e):
                raise
    return removed
