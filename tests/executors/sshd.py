"""A real OpenSSH server on 127.0.0.1 for the ``--docker-host ssh://`` tests, and a client home that trusts it.

Everything lives in one folder: the server's config, host key, pid file and authorized_keys, and a client home
(``home``) whose .ssh holds the client key, the server's host key as known and a config naming both. A process
given ``env()`` (HOME pointed there) finds them as paramiko and docker-py look for them (``~/.ssh/known_hosts``,
``~/.ssh/config``, ``~/.ssh/id_ed25519``); the user's own ~/.ssh is never read or written.

The server lets root in by key only. Its ``docker`` is the local CLI on the default engine: what is tested is the
transport (``docker system dial-stdio`` over ssh), not a second machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
PRIVSEP = Path("/run/sshd")
"""OpenSSH's privilege separation folder (compiled in); a machine that never ran the service lacks it."""


def missing() -> str | None:
    """Why no server can be started here, or None."""
    if not SSHD.is_file():
        return f"{SSHD} is not installed (apt-get install -y openssh-server)"
    if not shutil.which("ssh-keygen"):
        return "ssh-keygen is not installed (apt-get install -y openssh-client)"
    if os.geteuid() != 0:
        return "sshd for a root login must run as root"
    return None


class Sshd:
    """``start``, ``stop``, ``url`` (``ssh://root@127.0.0.1:PORT``), ``env()`` for a client process."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.port = _free_port()
        self.url = f"ssh://root@127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self._made_privsep = False

    def start(self, timeout: float = 30) -> "Sshd":
        self._keys()
        config = self.root / "sshd_config"
        config.write_text(_config(self.root, self.port))
        if not PRIVSEP.is_dir():
            PRIVSEP.mkdir(mode=0o755)
            self._made_privsep = True
        subprocess.run([str(SSHD), "-t", "-f", str(config)], check=True, capture_output=True)
        log = open(self.root / "sshd.log", "ab")
        self.proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self._listening():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"sshd did not start; see {self.root / 'sshd.log'}")
            time.sleep(0.1)
        return self

    def env(self) -> dict[str, str]:
        """What a client process needs to find the key and trust the host: HOME here, no ssh agent."""
        return {"HOME": str(self.home)}

    def log(self) -> str:
        return (self.root / "sshd.log").read_text(errors="replace")

    def stop(self, timeout: float = 10) -> None:
        """Stop the listener and every connection it accepted (each of which sshd put in a session of its own)."""
        if self.proc is not None and self.proc.poll() is None:
            for pid in [self.proc.pid, *_children(self.proc.pid)]:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=timeout)
        self.proc = None
        if self._made_privsep:
            shutil.rmtree(PRIVSEP, ignore_errors=True)
            self._made_privsep = False

    def _keys(self) -> None:
        ssh = self.home / ".ssh"
        ssh.mkdir(parents=True, exist_ok=True)
        ssh.chmod(0o700)
        for key in (self.root / "host_ed25519", ssh / "id_ed25519"):
            if not key.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", key.name, "-f", str(key)],
                               check=True, capture_output=True)
        (self.root / "authorized_keys").write_text((ssh / "id_ed25519.pub").read_text())
        (self.root / "authorized_keys").chmod(0o600)
        host_key = (self.root / "host_ed25519.pub").read_text().split()
        (ssh / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_key[0]} {host_key[1]}\n")
        (ssh / "config").write_text(
            "Host 127.0.0.1\n"
            f"  IdentityFile {ssh / 'id_ed25519'}\n"
            "  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {ssh / 'known_hosts'}\n"
            "  StrictHostKeyChecking yes\n"
            "  BatchMode yes\n")

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                return s.recv(4).startswith(b"SSH-")
        except OSError:
            return False


def _config(root: Path, port: int) -> str:
    # StrictModes no: the folder sits under /tmp, which is world-writable, and sshd would refuse its
    # authorized_keys for that; the file itself is root's and 0600.
    return "\n".join([
        f"Port {port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {root / 'host_ed25519'}",
        f"PidFile {root / 'sshd.pid'}",
        f"AuthorizedKeysFile {root / 'authorized_keys'}",
        "AuthenticationMethods publickey",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "AllowUsers root",
        "UsePAM no",
        "StrictModes no",
        "AllowTcpForwarding no",
        "AllowAgentForwarding no",
        "X11Forwarding no",
        "PermitTunnel no",
        "PrintMotd no",
        "LogLevel VERBOSE",
        "",
    ])


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
