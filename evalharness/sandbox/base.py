"""The Sandbox contract every harness and the grader rely on."""

from __future__ import annotations

import abc
import io
import shlex
import tarfile
import time
from dataclasses import dataclass

from evalharness.errors import BudgetExhausted, SandboxError
from evalharness.types import ExecResult

AGENT_USER = "agent"
BASE_COMMIT_FILE = "/etc/evalharness/base_commit"
BASE_GIT = "/opt/evalharness/base.git"
"""A task image's base commit as one pack (data/prepare_task.sh): the grader's copy, the objects the agent's
.git borrows, what an audit reads."""
REBUILD_TREE = "/usr/local/bin/evalharness-rebuild-tree"
"""The image's own rebuild of its work tree from its packed base commit (data/rebuild_tree.sh)."""
SEED_TAR = "/opt/evalharness/seed.tar"
"""The work tree and home as one tar: images prepared before task layers held a packed commit."""
MAX_OUTPUT_BYTES = 2_000_000
GRADER_DIR = "/run/evalharness-grader"
"""A root-owned scratch space in every sandbox (mode 0711): ``priv/`` only root reads, ``pub/`` anyone reads."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox. Disk sizes bound size-limited tmpfs mounts (the root
    file system is read-only), so an agent can fill its own work tree and /tmp, never the host."""

    cpus: float = 1.0
    memory: str = "2g"
    pids: int = 512
    disk: str = "2g"
    """Size of the writable work tree (and /home/agent)."""
    tmp: str = "1g"
    """Size of /tmp (and /var/tmp)."""
    max_patch_bytes: int = 8 * 1024 * 1024
    """A change larger than this is the outcome ``patch_too_large``, never cut."""


def parse_size(text: str | int) -> int:
    """'2g', '512m', '64k' or a number of bytes -> bytes (Docker's units, powers of 1024)."""
    if isinstance(text, int):
        return text
    value = str(text).strip().lower().removesuffix("b")
    units = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}
    try:
        if value and value[-1] in units:
            return int(float(value[:-1]) * units[value[-1]])
        return int(value)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (examples: 2g, 512m, 1048576)") from None


def files_tar(files: dict[str, bytes]) -> bytes:
    """Root's files as one tar to unpack at / (folders below the grader's space made 0700)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        made: set[str] = set()
        for path, data in files.items():
            parts = path.strip("/").split("/")
            for depth in range(3, len(parts)):  # below run/evalharness-grader/{priv,pub}
                folder = "/".join(parts[:depth])
                if folder not in made:
                    info = tarfile.TarInfo(folder)
                    info.type, info.mode = tarfile.DIRTYPE, 0o700
                    tar.addfile(info)
                    made.add(folder)
            info = tarfile.TarInfo("/".join(parts))
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class HeadTail:
    """Keeps the first and the last ``limit // 2`` bytes of a stream and counts the rest: the tail
    is the stream's real end, however long it runs."""

    def __init__(self, limit: int = MAX_OUTPUT_BYTES):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head.extend(chunk[:room])
            chunk = chunk[room:]
        if chunk:
            self.tail.extend(chunk)
            if len(self.tail) > self.half:
                del self.tail[:len(self.tail) - self.half]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def bytes(self) -> bytes:
        if not self.dropped:
            return bytes(self.head + self.tail)
        return bytes(self.head) + f"\n[... {self.dropped} bytes dropped by evalharness ...]\n".encode() + bytes(self.tail)

    def text(self) -> str:
        return self.bytes().decode("utf-8", errors="replace")


def clip_output(data: bytes, limit: int = MAX_OUTPUT_BYTES) -> str:
    """Keep the head and tail of an oversized output, saying how much was dropped."""
    kept = HeadTail(limit)
    kept.add(data)
    return kept.text()


class Sandbox(abc.ABC):
    """A live, isolated copy of a task's repository.

    Commands run as a non-root user with a wall-clock timeout each. When a deadline is set
    (the trial's wall budget), a command started after it raises BudgetExhausted and a
    command running across it is cut at the deadline.
    """

    workdir: str = "/testbed"
    default_timeout: float = 120.0
    deadline: float | None = None  # time.monotonic() value
    wall_budget: float = 0.0

    @abc.abstractmethod
    def _exec(self, argv: list[str], *, timeout: float, env: dict[str, str] | None, user: str,
              workdir: str) -> ExecResult: ...

    @abc.abstractmethod
    def write_file(self, path: str, content: str | bytes, *, user: str = AGENT_USER) -> None: ...

    @abc.abstractmethod
    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The file's bytes (at most ``max_bytes``; FileTooLarge past that); FileNotFoundError if absent."""

    def exec_bytes(self, argv: list[str], *, stdin: bytes | None = None, timeout: float = 120.0,
                   user: str = "root", max_bytes: int = MAX_OUTPUT_BYTES) -> tuple[int, bytes, bool]:
        """Run ``argv`` (no shell) and return (exit code, stdout bytes exactly, timed out). Grader use."""
        raise NotImplementedError

    @abc.abstractmethod
    def close(self) -> None: ...

    def exec(self, command: str, *, timeout: float | None = None, env: dict[str, str] | None = None,
             user: str | None = None, workdir: str | None = None) -> ExecResult:
        """Run a shell command; never longer than ``timeout`` seconds (or the trial deadline)."""
        limit = timeout if timeout is not None else self.default_timeout
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise BudgetExhausted("wall_s", self.wall_budget, self.wall_budget - remaining)
            limit = min(limit, remaining)
        argv = ["timeout", "-k", "5", f"{max(limit, 0.1):.1f}", "bash", "-c", command]
        return self._exec(argv, timeout=limit, env=env, user=user or AGENT_USER, workdir=workdir or self.workdir)

    def set_wall_budget(self, seconds: float | None) -> None:
        self.wall_budget = seconds or 0.0
        self.deadline = None if seconds is None else time.monotonic() + seconds

    def ensure_dir(self, path: str, *, user: str = AGENT_USER) -> None:
        """mkdir -p, once per directory and user for the life of the sandbox."""
        known = self.__dict__.setdefault("_known_dirs", {("/", AGENT_USER), ("/tmp", AGENT_USER)})
        if (path, user) not in known:
            self.exec(f"mkdir -p {shlex.quote(path)}", user=user, timeout=30)
            known.add((path, user))

    def base_commit(self) -> str:
        """The task's single commit (read once: it never changes)."""
        if "_base_commit" not in self.__dict__:
            self.__dict__["_base_commit"] = self.read_file(BASE_COMMIT_FILE).decode().strip()
        return self.__dict__["_base_commit"]

    def diff(self) -> str:
        """Every change in the work tree against the base commit, as a git patch, derived by a git
        the work tree cannot configure (evalharness.grading.extract). A harness may show it to its
        model; the trial derives the graded patch again after the agent has stopped."""
        from evalharness.grading.extract import extract_patch

        return extract_patch(self, kill_agent=False).text

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
