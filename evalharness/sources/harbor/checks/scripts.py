"""The scripts of a Harbor task, each read as commands, and what the commands fetch (pure).

A script is the environment's Dockerfile (build time), the verifier's tests/Dockerfile (build time, separate
mode), test.sh (verify time) or solve.sh (the oracle, agent time); multi-step tasks add each step's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from evalharness.sources.harbor.checks import dockerfile
from evalharness.sources.harbor.checks.findings import read_text
from evalharness.sources.harbor.checks.shell import Command, commands
from evalharness.sources.harbor.model import HarborTask

KINDS = ("environment", "verifier-image", "test", "solve")


@dataclass
class Script:
    path: Path
    kind: str
    """One of KINDS."""
    commands: list[Command]


def task_scripts(task: HarborTask) -> list[Script]:
    found = []
    for path in (task.dockerfile, task.tests_dir / "Dockerfile"):
        if path is not None and path.is_file():
            kind = "environment" if path == task.dockerfile else "verifier-image"
            found.append(Script(path, kind, dockerfile.run_commands(read_text(path))))
    tests = [task.test_script] + sorted((task.root / "steps").glob("*/tests/test.sh"))
    solves = [task.solve_script] + sorted((task.root / "steps").glob("*/solution/solve.sh"))
    for kind, paths in (("test", tests), ("solve", solves)):
        for path in paths:
            if path is not None and path.is_file() and path.suffix == ".sh":  # Windows .bat scripts are not read
                found.append(Script(path, kind, commands(read_text(path))))
    return found


_LOCAL_HOST = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|\[?::1\]?|[a-z0-9][a-z0-9_-]*)$", re.IGNORECASE)
_URL = re.compile(r"\b(?:https?|ftp)://[^\s'\"<>]+")
PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")
_REGISTRY_HOSTS = {"pip": PYPI_HOSTS, "uv": PYPI_HOSTS, "npm": ("registry.npmjs.org",), "go": ("proxy.golang.org",),
                   "cargo": ("crates.io", "static.crates.io"), "apt": ()}


@dataclass
class Fetch:
    """A command that needs the network, and the hosts it needs (empty: a package mirror we cannot name)."""

    command: Command
    what: str
    """bootstrap (``curl ... | sh``), download, clone, or a package manager's install (pip, uv, npm, apt, go, cargo)."""
    hosts: tuple[str, ...]


def fetches(cmd: Command) -> Fetch | None:
    """Whether the command reaches beyond the machine (a sidecar by bare service name or localhost does not)."""
    args, name = cmd.args, cmd.name
    urls = [u for u in _URL.findall(" ".join(args)) if not _LOCAL_HOST.match(urlsplit(u).hostname or "")]
    hosts = tuple(sorted({urlsplit(u).hostname or "" for u in urls}))
    if name in ("curl", "wget") and urls:
        shells = {"sh", "bash", "zsh", "python", "python3"}
        piped = {w.rsplit("/", 1)[-1] for w in cmd.piped_to[:1]}
        return Fetch(cmd, "bootstrap" if piped & shells else "download", hosts)
    if name == "git" and "clone" in args and (urls or any(a.startswith("git@") for a in args)):
        return Fetch(cmd, "clone", hosts or ("git remote",))
    manager = package_manager(cmd)
    if manager and "--offline" not in args and "--no-index" not in args:
        return Fetch(cmd, manager, hosts or _REGISTRY_HOSTS[manager])
    return None


def package_manager(cmd: Command) -> str | None:
    """Which package manager installs with this command: pip, uv, npm, apt, go, cargo; None when none does."""
    args, name = cmd.args, cmd.name
    rest = args[1:]
    if name in ("pip", "pip3") or (name.startswith("python") and rest[:2] == ["-m", "pip"]):
        sub = rest[2:] if rest[:1] == ["-m"] else rest
        return "pip" if sub[:1] in (["install"], ["download"]) and installs_something(sub[1:]) else None
    if name == "uv" and (rest[:2] == ["pip", "install"] or rest[:2] == ["tool", "install"] or rest[:1] in (["sync"], ["add"])):
        return "uv"
    if name == "uv" and rest[:1] == ["run"] and any(a in ("--with", "-w") for a in rest):
        return "uv"
    if name == "uvx":
        return "uv"
    if name in ("npm", "pnpm", "yarn") and rest[:1] in (["install"], ["i"], ["ci"], ["add"]):
        return "npm"
    if name in ("apt-get", "apt") and rest and rest[0] in ("install", "update", "upgrade", "dist-upgrade"):
        return "apt"
    if name == "go" and (rest[:1] == ["get"] or rest[:2] == ["mod", "download"] or (rest[:1] == ["install"] and any("@" in a for a in rest))):
        return "go"
    if name == "cargo" and rest[:1] in (["install"], ["fetch"]):
        return "cargo"
    return None


def installs_something(args: list[str]) -> bool:
    """pip arguments that install at least one package (not only local paths)."""
    return any(not a.startswith("-") and not a.startswith((".", "/")) for a in args) or any(a in ("-r", "--requirement") for a in args)
