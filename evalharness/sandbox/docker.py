"""Docker sandbox: one container per trial, sealed (no network), limited, labelled, always removed."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import socket
import ssl
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import docker
import paramiko
import requests
from docker.errors import DockerException, NotFound
from docker.utils.socket import frames_iter

from evalharness.errors import FileTooLarge, SandboxError
from evalharness.sandbox.base import (AGENT_USER, BASE_GIT, GRADER_DIR, MAX_OUTPUT_BYTES, REBUILD_TREE, SEED_TAR,
                                      HeadTail, Limits, Sandbox, files_tar, parse_size)
from evalharness.sandbox.engine import LABEL_ROLE, LABEL_RUN, LABEL_TRIAL
from evalharness.types import ExecResult

log = logging.getLogger(__name__)
AGENT_UID = 1000
"""uid and gid of the non-root ``agent`` user in every task image (images.py creates it)."""
_DOCKER_ERRORS = (DockerException, requests.exceptions.RequestException, OSError, paramiko.SSHException)
"""What an engine that fails says, over any transport (paramiko's for ssh://): SandboxError, never the agent's."""
_HOST_GRACE_S = 30.0  # how long past its own timeout an exec may take before the host gives up on it
_exec_pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="eh-exec")
SEED_HOME = "/opt/evalharness/seed-home.tar"
_SEED_FAILED = 75
_REBUILD = REBUILD_TREE


def _seed_script(workdir: str) -> str:
    """The container's own first act (as root, before any command): make the grader's folders and rebuild
    the work tree (from the image's packed base commit) and home in their tmpfs. Saves a round trip per
    sandbox. Its output goes to the container's log, which a failure quotes."""
    rebuild = (f'{_REBUILD} "$w" {AGENT_UID}:{AGENT_UID} '
               f'&& {{ [ ! -f {SEED_HOME} ] || tar -C / -xpf {SEED_HOME} --numeric-owner; }}')
    return (f"w={shlex.quote(workdir)}; mkdir -m 0700 {GRADER_DIR}/priv && mkdir -m 0755 {GRADER_DIR}/pub "
            f"&& {{ if [ -f {SEED_TAR} ]; then tar -C / -xpf {SEED_TAR} --numeric-owner; "
            f"elif [ -x {_REBUILD} ] && [ -d {BASE_GIT} ]; then {rebuild}; fi; }} "
            f"&& touch {GRADER_DIR}/.ready || touch {GRADER_DIR}/.failed; exec sleep infinity")


_AWAIT_SEED = (f'while [ ! -e {GRADER_DIR}/.ready ]; do [ -e {GRADER_DIR}/.failed ] && exit {_SEED_FAILED}; '
               'sleep 0.005; done; exec "$@"')
"""A command waits until the container has rebuilt its work tree and home."""
MAX_READ_BYTES = 64 * 1024 * 1024
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
        self._group: int | None = None
        """A fresh gid given to this container's processes only: the key to its shared folders."""

    def shared_dir(self, container_path: str) -> Path:
        """The host folder mounted at ``container_path`` (one of ``shared_dirs``)."""
        try:
            return self._shared[container_path]
        except KeyError:
            raise SandboxError(f"{container_path} is not a shared folder of this sandbox "
                               f"(shared: {', '.join(self._shared) or 'none'})") from None

    def _mounts(self) -> dict[str, dict[str, str]]:
        """Fresh host folders: neutral names in the system temp dir, reachable only by root and by this
        container's own group (see _give_to_sandbox)."""
        volumes = {}
        for container_path in self._shared_paths:
            host = Path(tempfile.mkdtemp(prefix="evalharness-"))  # mode 0700
            self._group = _give_to_sandbox(host, self._group)
            self._shared[container_path] = host
            volumes[str(host)] = {"bind": container_path, "mode": "ro"}
        return volumes

    def start(self) -> "DockerSandbox":
        """Start the container: read-only root, size-limited tmpfs for the work tree, /home/agent, /tmp
        and the grader's scratch space; the work tree is rebuilt from the image's packed base commit."""
        limits = self.limits
        disk, tmp = parse_size(limits.disk), parse_size(limits.tmp)
        scratch = max(256 * 1024 ** 2, 8 * limits.max_patch_bytes)
        # exec: Docker mounts tmpfs noexec by default, which stops a test command that runs a script of the
        # tree (SymPy's bin/test, Django's tests/runtests.py); it guards nothing against code that can run python
        tmpfs = {
            self.workdir: f"size={disk},mode=0755,uid={AGENT_UID},gid={AGENT_UID},exec",
            f"/home/{AGENT_USER}": f"size={disk},mode=0755,uid={AGENT_UID},gid={AGENT_UID},exec",
            "/tmp": f"size={tmp},mode=1777,exec", "/var/tmp": f"size={tmp},mode=1777,exec",
            GRADER_DIR: f"size={scratch},mode=0711",
        }
        # tmpfs pages count against the container's memory: the processes keep their own allowance
        memory = parse_size(limits.memory) + 2 * disk + 2 * tmp + scratch + 64 * 1024 ** 2
        volumes = self._mounts()
        try:
            self.container = self.client.containers.run(
                self.image, command=["sh", "-c", _seed_script(self.workdir)], detach=True, init=True,
                network_mode="none", labels=self.labels, working_dir="/", user="root",
                mem_limit=memory, memswap_limit=memory, shm_size="64m", read_only=True, tmpfs=tmpfs,
                nano_cpus=int(limits.cpus * 1e9), pids_limit=limits.pids,
                environment={"HOME": f"/home/{AGENT_USER}"}, volumes=volumes or None,
                group_add=[str(self._group)] if self._group is not None else None,
                security_opt=["no-new-privileges"],  # a setuid program the image holds gives the agent nothing
            )
        except _DOCKER_ERRORS as e:
            self._remove_shared()
            raise SandboxError(f"could not start a container from {self.image}: {e}") from e
        self._seeded = False  # the container unpacks its seed itself; the first command waits for it
        return self

    @property
    def id(self) -> str:
        return self.container.id if self.container else ""

    def _stream(self, argv, *, timeout, env, user, workdir, stdin: bytes | None, sink) -> int:
        """Run argv, feed ``stdin``, hand each (stream, bytes) frame to ``sink``; return the exit code.

        A command whose own timeout has passed but whose output is still held open (a process it
        left behind) is not an engine failure: the sandbox's processes of that user are killed and
        the command reports exit 137, timed out. Only an engine that does not answer is a SandboxError.
        """
        if self.container is None:
            raise SandboxError("sandbox used before start()")
        api = self.client.api
        if stdin is not None and _tls(api):  # no half-close over TLS: the command reads exactly len(stdin) bytes
            argv = ["sh", "-c", 'head -c "$0" | "$@"', str(len(stdin)), *argv]
        if not getattr(self, "_seeded", True):
            argv = ["sh", "-c", _AWAIT_SEED, "sh", *argv]
        try:
            exec_id = api.exec_create(self.container.id, argv, user=user, workdir=workdir,
                                      environment=env or None, stdin=stdin is not None)["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"exec failed in container {self.id[:12]}: {e}") from e
        future = _exec_pool.submit(_pump, sock, stdin, sink)
        try:
            future.result(timeout=timeout + _HOST_GRACE_S)
        except FutureTimeout:
            if not self._alive():
                self.close()
                raise SandboxError(f"container {self.id[:12]} stopped answering during a command") from None
            self._kill_user(user)
            try:
                future.result(timeout=_HOST_GRACE_S)
            except FutureTimeout:
                _close_quietly(sock)
            return 137
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"exec failed in container {self.id[:12]}: {e}") from e
        try:
            code = api.exec_inspect(exec_id).get("ExitCode")
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"exec failed in container {self.id[:12]}: {e}") from e
        code = -1 if code is None else int(code)
        if not getattr(self, "_seeded", True):
            if code == _SEED_FAILED and self._seed_failed():
                said = self._logs_tail()
                self.close()
                raise SandboxError(f"could not rebuild the work tree in {self.image}" + (f": {said}" if said else ""))
            self._seeded = True
        return code

    def _seed_failed(self) -> bool:
        """Did the container's first act fail? Asked of root's marker, never of the exit code alone: a first
        command of the agent's own may exit 75 too."""
        try:
            exec_id = self.client.api.exec_create(self.container.id, ["test", "-e", f"{GRADER_DIR}/.failed"],
                                                  user="root")["Id"]
            self.client.api.exec_start(exec_id)
            return self.client.api.exec_inspect(exec_id).get("ExitCode") == 0
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"exec failed in container {self.id[:12]}: {e}") from e

    def _logs_tail(self) -> str:
        """The last lines the container's first act printed (why its work tree could not be rebuilt)."""
        try:
            return self.container.logs(tail=5).decode(errors="replace").strip().replace("\n", " | ")[-500:]
        except _DOCKER_ERRORS:
            return ""

    def _alive(self) -> bool:
        try:
            return bool(self.client.api.inspect_container(self.container.id)["State"]["Running"])
        except _DOCKER_ERRORS:
            return False

    def _kill_user(self, user: str) -> None:
        """Kill every process of ``user`` (root's shells excepted): what an overrun command left behind."""
        if user == "root":
            return
        try:
            exec_id = self.client.api.exec_create(self.container.id, ["sh", "-c", "kill -9 -1"], user=user)["Id"]
            self.client.api.exec_start(exec_id)
        except _DOCKER_ERRORS:
            pass

    def kill_agent_processes(self) -> None:
        """Stop everything the agent left running, before its work tree is read."""
        self._kill_user(AGENT_USER)

    def _exec(self, argv, *, timeout, env, user, workdir) -> ExecResult:
        started = time.monotonic()
        kept = HeadTail()
        code = self._stream(argv, timeout=timeout, env=env, user=user, workdir=workdir, stdin=None,
                            sink=lambda _stream, data: kept.add(data))
        duration = time.monotonic() - started
        timed_out = code in (124, 137) and duration >= timeout - 0.5
        return ExecResult(exit_code=code, output=kept.text(), timed_out=timed_out, duration_s=duration)

    def exec_bytes(self, argv: list[str], *, stdin: bytes | None = None, timeout: float = 120.0,
                   user: str = "root", max_bytes: int = MAX_OUTPUT_BYTES) -> tuple[int, bytes, bool]:
        out = bytearray()

        def sink(stream: int, data: bytes) -> None:
            if stream == 1 and len(out) <= max_bytes:
                out.extend(data[:max_bytes + 1 - len(out)])

        started = time.monotonic()
        code = self._stream(["timeout", "-k", "5", f"{timeout:.1f}", *argv], timeout=timeout, env=None, user=user,
                            workdir="/", stdin=stdin, sink=sink)
        timed_out = code in (124, 137) and time.monotonic() - started >= timeout - 0.5
        return code, bytes(out), timed_out

    def write_file(self, path: str, content: str | bytes, *, user: str = AGENT_USER) -> None:
        data = content.encode() if isinstance(content, str) else content
        script = 'umask 022; mkdir -p "$(dirname "$1")" && cat > "$1"'
        code, _, _ = self.exec_bytes(["sh", "-c", script, "sh", path], stdin=data, user=user, timeout=120)
        if code != 0:
            raise SandboxError(f"could not write {path} into the sandbox (exit {code})")

    def write_files(self, files: dict[str, bytes], *, user: str = "root") -> None:
        """Several files in one command: a tar on standard input, unpacked at /."""
        code, out, _ = self.exec_bytes(["tar", "-x", "-C", "/", "--no-overwrite-dir", "-f", "-"],
                                       stdin=files_tar(files), user=user, timeout=120)
        if code != 0:
            raise SandboxError(f"could not write {len(files)} files into the sandbox (exit {code}): {out[-300:]!r}")

    def base_commit(self) -> str:
        if self.image not in _base_commits:
            _base_commits[self.image] = super().base_commit()
        return _base_commits[self.image]

    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        limit = MAX_READ_BYTES if max_bytes is None else max_bytes
        script = '[ -f "$1" ] || exit 66; exec head -c "$2" "$1"'
        code, data, _ = self.exec_bytes(["sh", "-c", script, "sh", path, str(limit + 1)], max_bytes=limit + 1)
        if code == 66:
            raise FileNotFoundError(path)
        if code != 0:
            raise SandboxError(f"could not read {path} from the sandbox (exit {code})")
        if len(data) > limit:
            raise FileTooLarge(path, limit)
        return data

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


def _free_gid() -> int:
    """A gid no host group has: only this container's processes will carry it."""
    import grp
    import secrets as _secrets

    while True:
        gid = 200_000 + _secrets.randbelow(1_000_000_000)
        try:
            grp.getgrgid(gid)
        except KeyError:
            return gid


def _give_to_sandbox(folder: Path, gid: int | None) -> int | None:
    """Owner root, group a fresh gid that only this container's processes carry (``group_add``), mode
    0750: no host account but root can enter it, whatever its uid; the relay's socket inside is 0660.

    A host that is not root cannot do this: the folder goes to the agent's uid 1000 where it can
    (then a host account with uid 1000 could reach the socket), else stays ours with mode 0711
    (and any local user could), with a warning.
    """
    if os.geteuid() == 0:
        gid = gid if gid is not None else _free_gid()
        os.chown(folder, 0, gid)
        os.chmod(folder, 0o750)
        return gid
    if os.geteuid() == AGENT_UID:
        log.warning("running as uid %d: a host account with that uid could use %s while the trial runs",
                    AGENT_UID, folder)
        return None
    try:
        os.chown(folder, AGENT_UID, AGENT_UID)
        log.warning("not root: %s is given to uid %d, which a host account may share", folder, AGENT_UID)
    except PermissionError:
        os.chmod(folder, 0o711)
        log.warning("cannot give %s away (run as root): any local user could use its socket", folder)
    return None


def _raw(sock):
    return getattr(sock, "_sock", sock)


def _close_quietly(sock) -> None:
    try:
        _raw(sock).close()
    except OSError:
        pass


def _tls(api) -> bool:
    """The engine is reached over TLS (``--docker-host tcp://...``)."""
    return str(getattr(api, "base_url", "")).startswith("https://")


def _pump(sock, stdin: bytes | None, sink) -> None:
    """Write ``stdin`` (then half-close), and read the multiplexed output frames until the end.

    Over TLS a half-close would end the TLS session (ssl.SSLSocket.shutdown drops it) and one TLS connection
    must not be written and read by two threads at once: ``stdin`` is written whole first, without a
    half-close (_stream had the command read exactly that many bytes)."""
    raw = _raw(sock)
    writer = None
    if stdin is not None and isinstance(raw, ssl.SSLSocket):
        raw.sendall(stdin)
    elif stdin is not None:
        def feed() -> None:
            try:
                raw.sendall(stdin)
            except OSError:
                pass
            finally:
                try:
                    raw.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
    try:
        for stream, data in frames_iter(sock, tty=False):
            sink(stream, data)
    finally:
        if writer is not None:
            writer.join(timeout=5)
        _close_quietly(sock)


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
    _remove_labelled_leftovers(client, label)
    return removed


def _remove_labelled_leftovers(client: docker.DockerClient, label: str) -> None:
    """A Harbor trial's volumes (/tests, /logs/verifier) and snapshot images, when it ended before removing them
    (sources/harbor/run/container.py labels them as its containers)."""
    for volume in client.api.volumes(filters={"label": label}).get("Volumes") or []:
        try:
            client.api.remove_volume(volume["Name"], force=True)
        except DockerException:  # in use by a container still being removed: the next gc takes it
            pass
    for image in client.api.images(filters={"label": label}):
        try:
            client.api.remove_image(image["Id"], force=True)
        except DockerException:
            pass
