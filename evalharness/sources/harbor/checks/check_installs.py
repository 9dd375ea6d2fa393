"""Static checks of what a task installs and where it may run: ``pip-pinning``, ``dockerfile-platform``,
``gpu-types``, ``gpu-request`` (pure)."""

from __future__ import annotations

import re

import yaml

from evalharness.sources.harbor.checks.findings import StaticFinding, evidence, read_text, toml_line
from evalharness.sources.harbor.checks.scripts import task_scripts
from evalharness.sources.harbor.checks.shell import Command
from evalharness.sources.harbor.model import HarborTask

_VALUE_FLAGS = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-t",
                "--target", "-d", "--dest", "--cache-dir", "--prefix", "--root", "--src", "--log", "--python", "-p",
                "--from", "--with", "-w", "--platform", "--python-version", "--find-links", "-f", "--trusted-host",
                "--only-binary", "--no-binary", "-e", "--editable", "--index", "--default-index", "--with-requirements"}
_NPM_EXACT = re.compile(r"^(@[^/]+/)?[^@]+@v?\d+\.\d+\.\d+([-+][\w.]+)?$")
GPU_TYPES = ("any", "T4", "L4", "A10", "L40S", "A100-40GB", "A100-80GB", "H100", "H200", "B200")
"""The GPU names Harbor's cloud backend (Modal) accepts, as the Terminal-Bench-3 template lists them."""


def pip_pinning(task: HarborTask) -> list[StaticFinding]:
    """Every pip / uv / uvx / npm install names an exact version (``==``, ``@x.y.z``) or a hash, in the
    Dockerfiles, test.sh and solve.sh, and every requirements file in the build contexts. apt is left alone:
    Debian and Ubuntu archives drop superseded versions, so an apt pin stops building (the template forbids
    them); the base image's tag or digest is what fixes apt's versions."""
    found = []
    for script in task_scripts(task):
        for cmd in script.commands:
            loose = unpinned(cmd)
            if loose:
                found.append(StaticFinding("pip-pinning", 1,
                    f"{', '.join(loose)} installed without an exact version: a rebuild can bring a different "
                    "release and change what the task tests", (evidence(task, script.path, cmd.line),)))
    for path in sorted([*task.environment_dir.rglob("requirements*.txt"), *task.tests_dir.glob("requirements*.txt")]):
        for number, raw in enumerate(read_text(path).splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if line and not line.startswith("-") and "==" not in line and "--hash" not in line and "@" not in line:
                found.append(StaticFinding("pip-pinning", 1, f"{line} in a requirements file without an exact version",
                                           (evidence(task, path, number),)))
    return found


def unpinned(cmd: Command) -> list[str]:
    """The packages this command installs without an exact version."""
    args, name = cmd.args, cmd.name
    rest = args[1:]
    if name.startswith("python") and rest[:2] == ["-m", "pip"]:
        name, rest = "pip", rest[2:]
    if name in ("pip", "pip3") and rest[:1] == ["install"]:
        return _loose_python(rest[1:], bootstrap=True)
    if name == "uv" and rest[:2] in (["pip", "install"], ["tool", "install"]):
        return _loose_python(rest[2:], bootstrap=False)
    if name == "uvx" or (name == "uv" and rest[:2] == ["tool", "run"]):
        return _loose_uvx(rest[2:] if name == "uv" else rest)
    if name in ("npm", "pnpm", "yarn") and rest[:1] in (["install"], ["i"], ["add"]):
        return [a for a in _positionals(rest[1:]) if not _NPM_EXACT.match(a) and not _local(a)]
    return []


def _loose_python(args: list[str], *, bootstrap: bool) -> list[str]:
    if "--require-hashes" in args:
        return []
    loose = [a for a in _positionals(args) if not _pinned(a)]
    if bootstrap and loose == ["pip"] and ({"-U", "--upgrade"} & set(args)):
        return []  # upgrading pip itself before pinned installs
    withs = [v for f, v in zip(args, args[1:]) if f in ("--with", "-w")]
    return loose + [v for v in withs if not _pinned(v)]


def _loose_uvx(args: list[str]) -> list[str]:
    withs = [v for f, v in zip(args, args[1:]) if f in ("--with", "-w")]
    withs += [a.split("=", 1)[1] for a in args if a.startswith("--with=")]
    source = next((v for f, v in zip(args, args[1:]) if f == "--from"), None)
    tool = next(iter(_positionals(args)), None)
    loose = [v for v in withs if not _pinned(v)]
    if source is not None:
        return loose + ([source] if not _pinned(source) else [])
    if tool and not _pinned(tool.replace("@", "==", 1)):
        if not any(_pinned(v) and re.split(r"[=<>!~\[@ ]", v, maxsplit=1)[0] == tool for v in withs):
            loose.append(tool)
    return loose


def _positionals(args: list[str]) -> list[str]:
    """The arguments up to the first that is not an option or a package (for uvx: the tool, then its own
    arguments, which are not installs)."""
    found, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a.startswith("-"):
            skip = a in _VALUE_FLAGS
            continue
        found.append(a)
    return found


def _pinned(spec: str) -> bool:
    if _local(spec) or spec.startswith("$"):
        return True  # a path, or a variable whose value a static check cannot see
    if spec.startswith(("git+", "hg+", "svn+", "bzr+")):
        return "@" in spec.rsplit("/", 1)[-1]
    if spec.startswith(("http://", "https://")):
        return True  # a file at a fixed address (the address is what is pinned)
    return bool(re.search(r"===?\s*[\w.*+!-]+", spec)) and "*" not in spec


def _local(spec: str) -> bool:
    return spec in (".", "./") or spec.startswith(("./", "../", "/", "file:")) or spec.endswith((".whl", ".tar.gz", ".zip", ".tgz"))


def dockerfile_platform(task: HarborTask) -> list[StaticFinding]:
    """No ``FROM --platform=`` (in the environment's or the verifier's Dockerfile) and no compose ``platform:``:
    a pinned platform runs under emulation, or not at all, on other machines."""
    from evalharness.sources.harbor.checks.dockerfile import froms

    found = []
    for path in (task.dockerfile, task.tests_dir / "Dockerfile"):
        for frm in froms(read_text(path)) if path is not None else []:
            if frm.platform:
                found.append(StaticFinding("dockerfile-platform", 1,
                    f"the image is pinned to {frm.platform}: elsewhere it runs under emulation or not at all; pick "
                    "per-architecture artifacts at build time instead", (evidence(task, path, frm.line),)))
    compose = task.compose_file
    try:
        services = (yaml.safe_load(read_text(compose)) or {}).get("services", {}) if compose else {}
    except yaml.YAMLError:
        services = {}
    for name, service in (services or {}).items():
        if isinstance(service, dict) and service.get("platform"):
            line = next((i for i, raw in enumerate(read_text(compose).splitlines(), 1) if "platform:" in raw), None)
            found.append(StaticFinding("dockerfile-platform", 1, f"compose service {name} is pinned to "
                                       f"{service['platform']}", (evidence(task, compose, line),)))
    return found


def gpu_types(task: HarborTask) -> list[StaticFinding]:
    """``gpu_types`` names only GPUs the cloud backend knows, and only when GPUs are asked for."""
    env, found = task.config.environment, []
    bad = [t for t in env.gpu_types or [] if t not in GPU_TYPES]
    if bad:
        found.append(StaticFinding("gpu-types", 1, f"gpu_types {', '.join(map(repr, bad))} not a name the backend "
                                   f"accepts ({', '.join(GPU_TYPES)}): the request cannot be met as written",
                                   (toml_line(task, "gpu_types", "environment"),)))
    if env.gpu_types and env.gpus == 0:
        found.append(StaticFinding("gpu-types", 1, "gpu_types is set but gpus = 0: no GPU is requested",
                                   (toml_line(task, "gpu_types", "environment"),)))
    return found


def gpu_request(task: HarborTask) -> list[StaticFinding]:
    """A task that asks for GPUs runs only on a machine that has them; evalharness's Docker sandbox passes none."""
    gpus = task.config.environment.gpus
    if gpus <= 0:
        return []
    return [StaticFinding("gpu-request", 1, f"the task asks for {gpus} GPU(s): it runs only where GPUs are "
                          "available, and evalharness's sandbox gives containers none", (toml_line(task, "gpus", "environment"),))]
