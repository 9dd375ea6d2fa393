"""Which programs a verifier's image provides, and which test.sh calls without them (pure).

Only well-known tools are judged (test runners, interpreters, downloaders); the image's base is judged only
when it is a known official image (``python:``, ``ubuntu:``, ``debian:``, ``node:``, ...). An unknown base, a
prebuilt ``docker_image`` or a bootstrap script of unknown content means "cannot tell", never a finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from evalharness.sources.harbor.checks import dockerfile
from evalharness.sources.harbor.checks.findings import read_text
from evalharness.sources.harbor.checks.scripts import package_manager
from evalharness.sources.harbor.checks.shell import Command, commands
from evalharness.sources.harbor.model import HarborTask

TOOLS = {"pytest", "py.test", "uv", "uvx", "python", "python3", "pip", "pip3", "node", "npm", "npx", "curl",
         "wget", "git", "go", "cargo", "jq"}
_FULL = {"curl", "wget", "git"}  # what the non-slim official images carry (buildpack-deps)
_BASES = (  # (image name pattern, tools always there, tools only in non-slim variants)
    (r"(docker\.io/)?(library/)?python", {"python", "python3", "pip", "pip3"}, _FULL),
    (r"(docker\.io/)?(library/)?(ubuntu|debian)", set(), set()),
    (r"(docker\.io/)?(library/)?node", {"node", "npm", "npx"}, _FULL | {"python3"}),
    (r"(docker\.io/)?(library/)?golang", {"go"}, _FULL),
    (r"(docker\.io/)?(library/)?rust", {"cargo"}, _FULL),
    (r"(docker\.io/)?(library/)?buildpack-deps", _FULL, {"python3"}),
    (r"ghcr\.io/astral-sh/uv", {"uv", "uvx"}, set()),
    (r"evalharness/base", {"python3"}, set()),
)
_SUBCOMMANDS = {"pip", "install", "tool", "add", "i", "ci", "sync", "download", "get", "-m"}
_APT_TOOLS = {"python3": {"python3"}, "python3-pip": {"pip", "pip3"}, "python-is-python3": {"python"},
              "python3-pytest": {"pytest"}, "nodejs": {"node"}, "npm": {"npm", "npx"}, "golang": {"go"},
              "golang-go": {"go"}, "cargo": {"cargo"}}


@dataclass
class Image:
    base: str | None
    """The base image's name; None when the task names a prebuilt image or has no Dockerfile."""
    tools: set[str] = field(default_factory=set)
    unknown: bool = False
    """Something was installed whose content a static check cannot see (a bootstrap script, an unknown base)."""


def base_tools(image: str) -> set[str] | None:
    name, _, tag = image.partition(":")
    for pattern, always, full in _BASES:
        if re.fullmatch(pattern, name):
            slim = any(word in tag for word in ("slim", "alpine"))
            return set(always) | (set() if slim else set(full))
    return None


def installed(cmd: Command) -> tuple[set[str], bool]:
    """The tools a command installs, and whether it installs something unknowable (``curl ... | sh``)."""
    args, manager = cmd.args, package_manager(cmd)
    positional = [a for a in args[1:] if not a.startswith("-")]
    if cmd.name in ("curl", "wget") and {w.rsplit("/", 1)[-1] for w in cmd.piped_to[:1]} & {"sh", "bash"}:
        return ({"uv", "uvx"}, False) if any("astral.sh/uv" in a for a in args) else (set(), True)
    if cmd.name == "uv" and args[1:2] == ["venv"] or (cmd.name.startswith("python") and args[1:3] == ["-m", "venv"]):
        return {"python", "python3", "pip"} if cmd.name.startswith("python") else {"python", "python3"}, False
    if manager == "apt":
        return {t for p in positional for t in _APT_TOOLS.get(p, {p} & TOOLS)}, False
    if manager in ("pip", "uv", "npm", "cargo", "go") and cmd.name != "uvx":
        while positional and positional[0] in _SUBCOMMANDS:
            positional.pop(0)
        names = {re.split(r"[=<>!~\[@ ]", p, maxsplit=1)[0].lower() for p in positional}
        return {t for n in names for t in ({"uv", "uvx"} if n == "uv" else {n} & TOOLS)}, False
    return set(), False


def image_for_tests(task: HarborTask) -> tuple[Image, str | None]:
    """The image test.sh runs in (the verifier's own in separate mode, else the environment's) and the file
    that builds it."""
    cfg = task.config
    if cfg.verifier.separate:
        path = task.tests_dir / "Dockerfile"
        if path.is_file():
            return _image(path), "tests/Dockerfile"
        if cfg.verifier.environment is not None and cfg.verifier.environment.docker_image:
            return Image(None, unknown=True), None
    if task.dockerfile is None or cfg.environment.docker_image:
        return Image(None, unknown=True), None
    return _image(task.dockerfile), "environment/Dockerfile"


def _image(path: Path) -> Image:
    stage = dockerfile.final_stage(read_text(path))
    base = dockerfile.base_image(stage)
    known = base_tools(base)
    image = Image(base, set(known or ()), unknown=known is None)
    for ins in stage:
        if ins.keyword in ("COPY", "ADD") and "--from=" in ins.value:
            sources = [w for w in ins.value.split() if not w.startswith("--")][:-1]
            image.tools |= {Path(s).name for s in sources} & TOOLS
    for cmd in dockerfile.run_commands(stage):
        tools, unknown = installed(cmd)
        image.tools |= tools
        image.unknown |= unknown
    return image


def missing_tools(task: HarborTask, script: Path, image: Image) -> list[tuple[str, Command]]:
    """Each known tool test.sh calls (first call) that nothing before it provides."""
    if image.unknown:
        return []
    have, missing, unknown = set(image.tools), {}, False
    for cmd in commands(read_text(script)):
        tool = "pytest" if cmd.name.startswith("python") and cmd.args[1:3] == ["-m", "pytest"] else cmd.name
        if tool in TOOLS and tool not in have and tool not in missing and not unknown and not cmd.by_path:
            missing[tool] = cmd
        tools, vague = installed(cmd)
        have |= tools
        unknown |= vague
    return list(missing.items())
