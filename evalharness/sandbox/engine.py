"""Connecting to the Docker engine (the local one, or another by URL), with errors that say what to do."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import docker
import requests
from docker.errors import DockerException

from evalharness.errors import PrerequisiteError, UserError

LABEL_RUN = "evalharness.run_id"
LABEL_TRIAL = "evalharness.trial"
LABEL_ROLE = "evalharness.role"

_START_HINT = "Start the engine (as root: dockerd --bridge=none --iptables=false &) or run scripts/setup, then retry"


@dataclass(frozen=True)
class EngineHost:
    """A Docker engine named by URL (``--docker-host``): ``unix:///path``, ``ssh://user@host[:port]`` or
    ``tcp://host:port`` with TLS; ``#N`` after it is how many trials it runs at once."""

    url: str
    workers: int | None = None
    tls_dir: str | None = None
    """Folder of ca.pem, cert.pem and key.pem (tcp:// only): ``?tls=DIR``, else DOCKER_CERT_PATH, else ~/.docker."""

    @property
    def label(self) -> str:
        """The URL as shown in progress and stored with each trial (no query: it may name a key folder)."""
        return self.url

    @property
    def local(self) -> bool:
        """The engine runs on this machine, so a host folder can be mounted into its containers."""
        return self.url.startswith("unix://")


def parse_host(text: str) -> EngineHost:
    """``URL[#WORKERS]`` -> EngineHost (pure). Plain tcp:// is refused: an engine is root on its machine, and an
    unauthenticated socket gives that to anyone who can reach it."""
    url, _, workers_text = text.strip().partition("#")
    workers = None
    if workers_text:
        if not workers_text.isdigit() or int(workers_text) < 1:
            raise UserError(f"--docker-host {text!r}: the part after # is the number of trials it runs at once "
                            f"(a whole number of at least 1, got {workers_text!r})")
        workers = int(workers_text)
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if parts.scheme == "unix":
        if not parts.path or query:
            raise UserError(f"--docker-host {text!r}: a unix socket is unix:///path/to/docker.sock")
        return EngineHost(url, workers)
    if parts.scheme == "ssh":
        if parts.password is not None:
            raise UserError(f"--docker-host: an ssh URL with a password is refused (it would be shown and stored "
                            f"with every trial): ssh://{parts.username}@{parts.hostname}", "use an ssh key")
        if not parts.hostname or query or parts.path not in ("", "/"):
            raise UserError(f"--docker-host {text!r}: an ssh engine is ssh://user@host[:port] (keys from your ssh "
                            "agent or ~/.ssh; the user must be allowed to use docker there)")
        return EngineHost(url, workers)
    if parts.scheme == "tcp":
        if not parts.hostname or not parts.port or parts.path not in ("", "/") or set(query) - {"tls"}:
            raise UserError(f"--docker-host {text!r}: a tcp engine is tcp://host:port[?tls=CERT_DIR]")
        tls = query.get("tls", [None])[-1] or os.environ.get("DOCKER_CERT_PATH") or str(Path.home() / ".docker")
        missing = [name for name in ("ca.pem", "cert.pem", "key.pem") if not (Path(tls) / name).is_file()]
        if missing:
            raise UserError(f"--docker-host {text!r}: tcp:// needs TLS, and {tls} lacks {', '.join(missing)}",
                            "give ?tls=DIR (or DOCKER_CERT_PATH) with the engine's CA and your client certificate "
                            "and key; an engine without TLS is not used")
        return EngineHost(f"tcp://{parts.hostname}:{parts.port}", workers, tls)
    raise UserError(f"--docker-host {text!r}: expected unix://, ssh:// or tcp:// (with TLS)")


def docker_client(timeout: float = 900, host: EngineHost | None = None) -> docker.DockerClient:
    """A client whose engine answered a ping (the local one, or ``host``); PrerequisiteError otherwise (never a
    silent skip)."""
    try:
        if host is None:
            client = docker.from_env(timeout=int(timeout))
        else:
            client = _host_client(host, timeout)
        client.ping()
    except (DockerException, requests.exceptions.RequestException, *_transport_errors(host)) as e:
        if host is not None:
            raise PrerequisiteError(f"Docker engine {host.label} not reachable ({type(e).__name__}: {_first_line(e)})",
                                    _SSH_HINT if host.url.startswith("ssh://") else
                                    "check the URL, that its engine runs, and (tcp) the certificates") from e
        client_version = _client_version()
        raise PrerequisiteError(
            f"Docker engine not reachable ({client_version}; {type(e).__name__}: {_first_line(e)})", _START_HINT
        ) from e
    return client


_SSH_HINT = ("check the URL, and that `ssh user@host docker version` works from here without a prompt: the host's key "
             "must be in ~/.ssh/known_hosts (that file; evalharness never adds a key), your key in ~/.ssh, "
             "~/.ssh/config's IdentityFile or your ssh agent, and docker on that user's PATH there")


def _transport_errors(host: EngineHost | None) -> tuple[type[BaseException], ...]:
    """What connecting raises besides docker-py's own errors: its ssh transport (paramiko, imported only for an ssh
    engine) lets an unknown or changed host key, a refused key, a missing key file and a refused connection
    through as they are."""
    if host is None or not host.url.startswith("ssh://"):
        return ()
    import paramiko

    return (paramiko.SSHException, OSError)


def _host_client(host: EngineHost, timeout: float) -> docker.DockerClient:
    if host.url.startswith("ssh://"):
        return _ssh_client(host, timeout)
    if host.tls_dir is None:
        return docker.DockerClient(base_url=host.url, timeout=int(timeout))
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE replace the engine's CA given here (its environment merge
    # wins over a session's verify), so the client stops reading the environment before its first call, and
    # asks the engine's API version only then
    client = docker.DockerClient(base_url=host.url, timeout=int(timeout), tls=_tls(host), version=_FIRST_API)
    client.api.trust_env = False
    client.api._version = client.api.version(api_version=False)["ApiVersion"]
    return client


def _ssh_client(host: EngineHost, timeout: float) -> docker.DockerClient:
    """Over paramiko (docker-py's default), every HTTP connection is a session channel of one ssh connection, and
    sshd allows 10 of them at once (MaxSessions). docker-py keeps a pool per request URL (a new one per exec id,
    up to 9), each holding its idle channels open: with a few trials at once the server refused channels
    (ChannelException: Connect failed). One pool, of few idle channels, for the one engine, and a further ssh
    connection whenever every open one is full (16 trials at once used two).

    paramiko, not the ssh CLI (``use_ssh_client``): the CLI starts an ssh process per connection (an exec took
    3 s, against 0.34 s here) and cannot half-close a command's stdin."""
    client = docker.DockerClient(base_url=host.url, timeout=int(timeout), max_pool_size=_SSH_IDLE_CHANNELS)
    adapter = client.api.get_adapter("http+docker://ssh")
    sessions = _SshSessions(adapter)
    per_url, close = adapter.get_connection, adapter.close

    def one_pool(url, proxies=None):
        pool = per_url("http+docker://ssh/", proxies)
        pool.ssh_transport = sessions  # SSHConnection.connect asks it for open_session()
        return pool

    def close_all():
        close()
        sessions.close()

    adapter.get_connection, adapter.close = one_pool, close_all
    return client


_SSH_IDLE_CHANNELS = 3
"""Idle channels kept open to an ssh engine: each trial at once holds about two more while it runs a command."""
_SSH_MAX_CONNECTIONS = 8
"""Further ssh connections to one engine at most (80 channels at sshd's default MaxSessions)."""


def _quiet_refusal(record: logging.LogRecord) -> bool:
    """paramiko logs each refused channel as an error; _SshSessions opens it on another connection instead."""
    return "open FAILED" not in record.getMessage()


class _SshSessions:
    """``open_session()`` on the first ssh connection that has room, else on a new one (same host, key and
    known_hosts check as docker-py's own)."""

    def __init__(self, adapter):
        self._adapter = adapter
        self._extra: list = []
        self._lock = threading.Lock()

    def open_session(self):
        import paramiko

        logging.getLogger("paramiko.transport").addFilter(_quiet_refusal)  # once: a filter is added once
        while True:
            known = len(self._extra)
            for ssh in [*reversed(self._extra), self._adapter.ssh_client]:  # the newest has room most often
                transport = ssh.get_transport()
                try:
                    return transport.open_session()
                except paramiko.SSHException:  # refused (MaxSessions): a ChannelException, or a bare SSHException
                    if not transport.is_active():  # when another thread took the reason; gone: the engine is lost
                        raise
            with self._lock:
                if len(self._extra) == known:  # no other thread opened one meanwhile
                    if known >= _SSH_MAX_CONNECTIONS:
                        raise paramiko.SSHException(f"{_SSH_MAX_CONNECTIONS + 1} ssh connections are full")
                    ssh = paramiko.SSHClient()
                    ssh.load_system_host_keys()
                    ssh.set_missing_host_key_policy(paramiko.RejectPolicy())
                    ssh.connect(**self._adapter.ssh_params)
                    self._extra.append(ssh)

    def close(self) -> None:
        for ssh in self._extra:
            ssh.close()


_FIRST_API = "1.41"
"""The oldest engine API evalharness uses (Docker 20.10), spoken until the engine has said its own."""


def _tls(host: EngineHost):
    if host.tls_dir is None:
        return False
    folder = Path(host.tls_dir)
    return docker.tls.TLSConfig(client_cert=(str(folder / "cert.pem"), str(folder / "key.pem")),
                                ca_cert=str(folder / "ca.pem"), verify=True)


def _client_version() -> str:
    docker_cli = shutil.which("docker")
    if not docker_cli:
        return "no docker CLI found"
    try:
        out = subprocess.run([docker_cli, "--version"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "docker CLI present"
    return f"client found: {out}"


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else ""
