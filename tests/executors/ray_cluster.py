"""A real two-node Ray cluster on loopback for the Ray executor tests: a head on the first Docker engine and an
extra node on the second, each `ray start --block` in its own process group (so the extra node can be killed
mid-run and the head stopped by its own means: never a bare `ray stop`, which stops every Ray on the machine),
with token authentication on (a token file of its own).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
FIRST_ENGINE = "unix:///var/run/docker.sock"
LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0, Ray takes 127.0.0.1 as the node address (its macOS default) instead of rewriting it to the address
of the default route, and its servers bind 127.0.0.1 only; but `ray start --address` then refuses to add a node."""
EXTRA_NODE = (
    "import sys, ray._private.ray_constants as c, ray._private.services as s\n"
    "c.ENABLE_RAY_CLUSTER = True  # past the one-machine guard of `ray start --address`\n"
    "s.resolve_ip_for_localhost = lambda host: host  # keep --node-ip-address=127.0.0.1 as given\n"
    "from ray.scripts.scripts import main\n"
    "sys.argv[0] = 'ray'; sys.exit(main())\n")
"""`ray start` for the extra node: Ray's own command with the two loopback rewrites undone (its processes get
LOOPBACK=0 from the environment, so they keep 127.0.0.1 too)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(docker_host: str, token: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, "DOCKER_HOST": docker_host, "RAY_USAGE_STATS_ENABLED": "0", LOOPBACK: "0",
            "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
            "RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3",
            # `ray stop` waits for a graceful drain (about 30 s a node) that a test cluster has no use for
            "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}


class RayCluster:
    """``start``, ``stop``; ``kill_extra`` (SIGKILL to the extra node's process group), ``start_extra``;
    ``address`` is HOST:PORT of the head; ``pids`` every process of both nodes."""

    def __init__(self, second_engine_url: str):
        self.second = second_engine_url
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp = Path(tempfile.mkdtemp(prefix="ehray-", dir="/tmp"))  # short: Ray's socket paths must fit
        self.token = self.temp / "auth_token"
        self.token.write_text(secrets.token_hex(32))
        self.token.chmod(0o600)
        self.head: subprocess.Popen | None = None
        self.extra: subprocess.Popen | None = None

    def env(self, docker_host: str = FIRST_ENGINE) -> dict[str, str]:
        """The environment of a process that joins this cluster (a driver: the evalharness CLI)."""
        return _env(docker_host, self.token)

    def _start(self, args: list[str], docker_host: str, log: str, command: list[str]) -> subprocess.Popen:
        out = open(self.temp / log, "ab")
        return subprocess.Popen([*command, "start", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--block",
                                 "--disable-usage-stats", *args], env=self.env(docker_host), stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def start(self, timeout: float = 120) -> "RayCluster":
        self.head = self._start(["--head", f"--port={self.port}", "--include-dashboard=false",
                                 f"--temp-dir={self.temp}"], FIRST_ENGINE, "head.log", [RAY])
        self._wait_nodes(1, timeout)
        self.start_extra(timeout)
        return self

    def start_extra(self, timeout: float = 120) -> None:
        self.extra = self._start([f"--address={self.address}"], self.second, "extra.log",
                                 [sys.executable, "-c", EXTRA_NODE])
        self._wait_nodes(2, timeout)

    def alive_nodes(self) -> int:
        code = ("import ray,logging; ray.init(address=%r, logging_level=logging.ERROR, log_to_driver=False, "
                "_node_ip_address='127.0.0.1'); print('NODES', sum(1 for n in ray.nodes() if n['Alive']))"
                % self.address)
        run = subprocess.run([sys.executable, "-c", code], env=self.env(FIRST_ENGINE), capture_output=True, text=True,
                             timeout=60)
        found = re.search(r"NODES (\d+)", run.stdout)
        return int(found.group(1)) if found else 0

    def _wait_nodes(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.alive_nodes() < count:
            for proc in (self.head, self.extra):
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"ray start exited ({proc.returncode}); see {self.temp}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray cluster has fewer than {count} nodes; see {self.temp}")
            time.sleep(1)

    def kill_extra(self) -> None:
        """SIGKILL the extra node: `ray start`, its raylet and every worker of its group (as a machine dying)."""
        _killpg(self.extra, signal.SIGKILL)
        self.extra = None

    def pids(self) -> set[int]:
        """Every process of both nodes' process groups."""
        groups = {os.getpgid(p.pid) for p in (self.head, self.extra) if p is not None and p.poll() is None}
        out = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getpgid(int(entry.name)) in groups:
                        out.add(int(entry.name))
                except ProcessLookupError:
                    continue
        return out

    def stop(self) -> None:
        """SIGTERM both nodes' groups at once (`ray start --block` then stops what it started), SIGKILL what stays."""
        procs = [p for p in (self.extra, self.head) if p is not None]
        for proc in procs:
            _signal_group(proc, signal.SIGTERM)
        for proc in procs:
            _killpg(proc, signal.SIGTERM)
        self.extra = self.head = None


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(os.getpgid(proc.pid), sig)
    except ProcessLookupError:
        pass


def _killpg(proc: subprocess.Popen | None, sig: int, timeout: float = 30) -> None:
    if proc is None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    try:
        os.killpg(pgid, sig)
        proc.wait(timeout=timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    deadline = time.monotonic() + timeout
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.3)
    if _group_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
