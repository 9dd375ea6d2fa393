"""A real image registry on 127.0.0.1 (Debian's `docker-registry`, the CNCF distribution registry), for --registry.

Engines allow plain http to registries on 127.0.0.0/8 by default, so no certificate is needed on loopback.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    def __init__(self, root: Path):
        self.root, self.port = root, _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Registry":
        binary = shutil.which("docker-registry")
        assert binary, "docker-registry is not installed (scripts/setup installs it: apt-get install docker-registry)"
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        config = self.root / "config.yml"
        config.write_text(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: "
                          f"{self.root / 'data'}\nhttp:\n  addr: {self.address}\n")
        self.proc = subprocess.Popen([binary, "serve", str(config)], stdout=open(self.root / "log", "ab"),
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.catalog()
                return self
            except OSError:
                assert self.proc.poll() is None, (self.root / "log").read_text()
                time.sleep(0.2)
        raise RuntimeError("the registry did not answer")

    def catalog(self) -> list[str]:
        with urllib.request.urlopen(f"http://{self.address}/v2/_catalog?n=1000", timeout=5) as r:
            return json.loads(r.read())["repositories"]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
