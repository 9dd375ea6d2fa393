"""The containers of a Harbor trial: writable, network none, limited, labelled; files in and out through the
engine's archive API (never through a program of the container), commands run with a host-side timeout."""

from __future__ import annotations

import io
import tarfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

import docker
import requests
from docker.errors import DockerException, NotFound
from docker.types import Mount

from evalharness.errors import SandboxError
from evalharness.sandbox.base import MAX_OUTPUT_BYTES, clip_output
from evalharness.sandbox.engine import LABEL_ROLE, LABEL_RUN, LABEL_TRIAL

ERRORS = (DockerException, requests.exceptions.RequestException, OSError)
ROOT = "0:0"
"""Root by number: a name is looked up in the container's /etc/passwd, the agent's file in a snapshot."""
_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="eh-harbor")


@dataclass
class Done:
    exit_code: int
    output: str
    timed_out: bool = False


def dir_tar(folder: Path, prefix: str = "") -> bytes:
    """``folder``'s files (modes kept, owned by root) as a tar whose names start with ``prefix``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(folder.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=f"{prefix}{path.relative_to(folder).as_posix()}")
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if path.is_file() and not path.is_symlink():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return buf.getvalue()


def reroot(data: bytes, path: str) -> bytes:
    """A tar the engine gave for ``path`` (its names start at the basename) renamed to start at ``/`` with the
    parent folders made, so it unpacks at ``path`` in another container whatever that one holds."""
    parent = [p for p in path.strip("/").split("/")[:-1] if p]
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        for i in range(len(parent)):
            folder = tarfile.TarInfo("/".join(parent[:i + 1]))
            folder.type, folder.mode = tarfile.DIRTYPE, 0o755
            dst.addfile(folder)
        for member in src.getmembers():
            member.name = "/".join([*parent, member.name])
            if member.islnk():  # a hard link names another member: renamed alike, or it would point elsewhere
                member.linkname = "/".join([*parent, member.linkname])
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return out.getvalue()


def _image_env(client: docker.DockerClient, image: str) -> dict[str, str]:
    env = client.images.get(image).attrs.get("Config", {}).get("Env") or []
    return dict(item.split("=", 1) for item in env if "=" in item)


class HarborContainer:
    """One container of a trial (``role`` agent or verifier); ``volumes`` are fresh engine volumes mounted
    without copying the image's content there (``no_copy``): empty, owned by root, never the agent's."""

    def __init__(self, client: docker.DockerClient, image: str, *, run_id: str, trial: str, role: str,
                 cpus: float, memory_mb: int, pids: int, env: dict[str, str], volumes: tuple[str, ...] = (),
                 own_entrypoint: bool = True, binds: dict[str, Path] | None = None):
        """``own_entrypoint``: False starts ``sleep`` alone, never the image's ENTRYPOINT (a verifier over the
        agent's snapshot must not run a script the agent could have rewritten), and pins HOME to /root unless the
        image or ``env`` sets it. Root is uid 0, never the name: the engine would look the name and HOME up in the
        container's /etc/passwd, which a snapshot has from the agent (root's line removed, the verifier could not
        start; root's home moved to the work directory, Python ran the agent's ``usercustomize`` there).
        ``binds``: container path -> host folder, mounted read-only (a harness's shared folder: the model relay's
        socket); never in a snapshot (``docker commit`` leaves mounts out)."""
        self.client, self.image = client, image
        self.labels = {LABEL_RUN: run_id, LABEL_TRIAL: trial, LABEL_ROLE: role}
        self.volumes: dict[str, str] = {}
        try:
            if not own_entrypoint and "HOME" not in env and "HOME" not in _image_env(client, image):
                env = {**env, "HOME": "/root"}
            mounts = []
            for target in volumes:
                name = f"evalharness-{uuid.uuid4().hex[:16]}"
                self.client.volumes.create(name, labels=self.labels)
                self.volumes[target] = name
                mounts.append(Mount(target, name, type="volume", no_copy=True))
            mounts += [Mount(target, str(host), type="bind", read_only=True) for target, host in (binds or {}).items()]
            start = ({"command": ["sleep", "infinity"]} if own_entrypoint
                     else {"entrypoint": ["sleep", "infinity"], "command": []})
            self.container = client.containers.create(
                image, **start, init=True, network_mode="none", labels=self.labels,
                user=ROOT, environment=env, mounts=mounts or None, mem_limit=f"{int(memory_mb)}m",
                memswap_limit=f"{int(memory_mb)}m", nano_cpus=int(cpus * 1e9), pids_limit=pids)
        except ERRORS as e:
            self.remove()
            raise SandboxError(f"could not create a container from {image}: {e}") from e

    def put(self, path: str, data: bytes) -> None:
        """Unpack a tar at ``path`` (made first); the engine writes it, as root."""
        try:
            self.container.put_archive(path, data)
        except ERRORS as e:
            raise SandboxError(f"could not copy files into {path}: {e}") from e

    def start(self) -> None:
        try:
            self.container.start()
        except ERRORS as e:
            raise SandboxError(f"could not start a container from {self.image}: {e}") from e

    def exec(self, command: str, *, workdir: str, timeout: float, env: dict[str, str] | None = None) -> Done:
        """``bash -c command`` as root; on timeout the container is stopped (every process with it)."""
        api = self.client.api

        def run() -> Done:
            exec_id = api.exec_create(self.container.id, ["bash", "-c", command], user=ROOT, workdir=workdir,
                                      environment=env or None)["Id"]
            output = api.exec_start(exec_id, demux=False) or b""
            return Done(api.exec_inspect(exec_id).get("ExitCode") or 0, clip_output(output, MAX_OUTPUT_BYTES))

        future = _pool.submit(run)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            self.stop()
            return Done(-1, f"timed out after {timeout:g} s", timed_out=True)
        except ERRORS as e:
            raise SandboxError(f"exec in {self.image} failed: {e}") from e

    def running(self) -> bool:
        """Whether the container is still running (its processes may have ended it: ``kill -KILL -1`` as root)."""
        try:
            self.container.reload()
        except ERRORS as e:
            raise SandboxError(f"could not read the state of {self.container.id[:12]}: {e}") from e
        return self.container.status == "running"

    def stop(self) -> None:
        """Stop the container: every process in it ends (the filesystem stays, for diff, commit and copies)."""
        try:
            self.container.kill()
        except NotFound:
            return
        except ERRORS:
            pass
        try:
            self.container.wait(timeout=30)
        except ERRORS as e:
            raise SandboxError(f"container {self.container.id[:12]} did not stop: {e}") from e

    def changes(self) -> list[dict]:
        """The engine's filesystem diff against the image (``docker diff``)."""
        try:
            return self.client.api.diff(self.container.id) or []
        except ERRORS as e:
            raise SandboxError(f"could not read the changes of {self.container.id[:12]}: {e}") from e

    def snapshot(self) -> str:
        """The final filesystem as an image (``docker commit``: files only, no process)."""
        try:
            image = self.container.commit(repository="evalharness/harbor-snapshot", tag=uuid.uuid4().hex[:16],
                                          conf={"Labels": self.labels})
            return image.id
        except ERRORS as e:
            raise SandboxError(f"could not snapshot {self.container.id[:12]}: {e}") from e

    def get_tar(self, path: str, max_bytes: int = 256 * 1024 * 1024) -> bytes | None:
        """``path`` as a tar (file or folder), None when it does not exist."""
        try:
            bits, _ = self.container.get_archive(path)
        except NotFound:
            return None
        except ERRORS as e:
            raise SandboxError(f"could not copy {path} out: {e}") from e
        data, size = bytearray(), 0
        for chunk in bits:  # read to the end even when over the cap: an unread stream keeps the container busy
            size += len(chunk)
            if size <= max_bytes:
                data += chunk
        if size > max_bytes:
            raise SandboxError(f"{path} is over {max_bytes} bytes")
        return bytes(data)

    def read_file(self, path: str, max_bytes: int = 1024 * 1024) -> bytes | None:
        """A regular file's bytes, None when absent or not a regular file."""
        data = self.get_tar(path, max_bytes=max_bytes + 64 * 1024)
        if data is None:
            return None
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return None
            return tar.extractfile(member).read()[:max_bytes]

    def remove(self) -> None:
        container = getattr(self, "container", None)
        try:
            if container is not None:
                container.remove(force=True)
        except ERRORS:
            pass
        for name in self.volumes.values():
            try:
                self.client.volumes.get(name).remove(force=True)
            except ERRORS:
                pass
