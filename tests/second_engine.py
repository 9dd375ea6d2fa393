"""A second, real Docker engine beside the first: its own socket, data root, exec root and pid file, no bridge.

It stands in for a remote host (``--docker-host``) or another Ray node's engine. The base image is copied
from the first engine (``docker save`` | ``docker load``), as a user would seed a new host without a registry.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import docker

ROOT = Path(os.environ.get("EH_ENGINE2_ROOT") or
            f"/tmp/eh-engine2-{hashlib.sha256(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()[:8]}")
"""One per checkout (two checkouts' test sessions on one machine once shared a fixed root: one stopped or replaced
the engine the other was using). Short paths: a unix socket path has at most 107 bytes."""


class SecondEngine:
    """``start``, ``stop`` (SIGKILL or SIGTERM), ``client``; ``url`` is ``unix://...``."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.sock = root / "docker.sock"
        self.url = f"unix://{self.sock}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60, extra: list[str] | None = None) -> "SecondEngine":
        """Start dockerd (``extra``: more of its arguments, e.g. a TLS tcp listener) unless it answers."""
        if self.answers():
            return self
        for name in ("data", "exec"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        if self.sock.exists():
            self.sock.unlink()
        dockerd = shutil.which("dockerd")
        assert dockerd, "dockerd is not installed (scripts/setup installs docker.io)"
        log = open(self.root / "dockerd.log", "ab")
        self.proc = subprocess.Popen(
            [dockerd, "-H", self.url, "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
             "--pidfile", str(self.root / "docker.pid"), "--bridge=none", "--iptables=false", "--ip6tables=false", *(extra or [])],
            stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the second dockerd did not start; see {self.root / 'dockerd.log'}")
            time.sleep(0.3)
        return self

    def answers(self) -> bool:
        try:
            docker.DockerClient(base_url=self.url, timeout=5).ping()
            return True
        except Exception:  # noqa: BLE001
            return False

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=900)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> None:
        pid = self._pid()
        if pid is None:
            return
        try:
            os.killpg(os.getpgid(pid), sig) if sig == signal.SIGKILL else os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.proc is not None:
            self.proc.wait(timeout=5)
            self.proc = None

    def _pid(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc.pid
        try:
            return int((self.root / "docker.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def seed_image(self, source: docker.DockerClient, tag: str) -> None:
        """Copy ``tag`` from ``source`` unless this engine has it."""
        mine = self.client()
        try:
            mine.images.get(tag)
            return
        except docker.errors.ImageNotFound:
            pass
        mine.images.load(source.images.get(tag).save(named=tag))

    def containers(self, run_id: str) -> list[str]:
        return [c["Id"] for c in self.client().api.containers(all=True, filters={"label": f"evalharness.run_id={run_id}"})]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
