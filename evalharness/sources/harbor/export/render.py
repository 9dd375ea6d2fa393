"""What an evalharness task becomes in a Harbor task directory (pure: a pack and a task in, text out).

``export.py`` writes these to disk; the environment's Dockerfile is composed in ``export_env.py``.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Literal

from evalharness import __version__
from evalharness.errors import UserError
from evalharness.packs import Pack
from evalharness.sandbox.base import Limits, parse_size
from evalharness.types import TaskSpec

ORG = "evalharness"
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$")
"""Harbor's ``[task].name`` rule (harbor.constants.ORG_NAME_PATTERN, 0.26.0), and no ``..`` anywhere."""
VERIFIER_MARGIN_S = 120
"""The verifier's limit beyond the test command's own: restoring files, applying the test patch, parsing."""
VerifierMode = Literal["shared", "separate"]
_DIFF_PATHS = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


def harbor_name(pack_name: str, task_id: str) -> str:
    """``evalharness/<pack>__<task>``, valid for Harbor (UserError naming the part that cannot be)."""
    name = f"{ORG}/{pack_name}__{task_id}"
    if not NAME_PATTERN.match(name) or ".." in name:
        raise UserError(f"task {pack_name}/{task_id}: {name!r} is not a valid Harbor task name",
                        "Harbor names are org/name of letters, digits, '.', '_' and '-', starting with a letter "
                        "or digit, without '..': rename the pack or the task (instance_id)")
    return name


def patch_paths(patch: str) -> list[str]:
    """Every path a unified diff names, both sides of a rename (``diff --git a/X b/Y``)."""
    return sorted({p for pair in _DIFF_PATHS.findall(patch) for p in pair})


def restored_paths(pack: Pack, task: TaskSpec) -> list[str]:
    """What the verifier puts back to the base commit before the tests run: the task's test files, every file
    the test patch touches and the pack's runner files (the grader's protected set, without its policy on
    conftest.py, pytest configuration and start-up hooks: see docs/task-format.md, "Exporting to Harbor")."""
    spec = pack.spec_for(task)
    return sorted({*task.test_files, *patch_paths(task.test_patch), *spec.runner_files})


def verifier_config(pack: Pack, task: TaskSpec) -> dict:
    """tests/config.json: everything the shipped verifier needs to decide as the grader does."""
    spec = pack.spec_for(task)
    assert spec.environment is not None and spec.test_command is not None
    return {"pack": pack.name, "task": task.instance_id, "workdir": spec.environment.workdir,
            "test_command": spec.test_command, "log_parser": spec.log_parser, "test_files": task.test_files,
            "FAIL_TO_PASS": task.FAIL_TO_PASS, "PASS_TO_PASS": task.PASS_TO_PASS,
            "xfail_at_base": list(task.metadata.get("xfail_at_base", []) or []),
            "restore": restored_paths(pack, task), "tests_s": spec.timeouts.tests_s}


def task_toml(pack: Pack, task: TaskSpec, verifier: VerifierMode = "separate") -> str:
    """task.toml (schema 1.4): identity, provenance, timeouts, resources, no network, the agent as ``agent``.
    ``separate``: the verifier gets a fresh container of tests/Dockerfile, and the work tree is the one
    artifact Harbor copies into it from the agent's container."""
    spec = pack.spec_for(task)
    assert spec.environment is not None
    limits = Limits()
    mib = 1024 * 1024
    top = {"schema_version": "1.4", "source": f"evalharness pack {pack.name} v{pack.spec.version}",
           "artifacts": [spec.environment.workdir] if verifier == "separate" else None}
    tables: list[tuple[str, dict]] = [
        ("", top),
        ("task", {"name": harbor_name(pack.name, task.instance_id),
                  "description": f"{task.instance_id} from the evalharness pack {pack.name}",
                  "keywords": ["evalharness", pack.name]}),
        ("metadata", {"evalharness_pack": pack.name, "evalharness_pack_version": str(pack.spec.version),
                      "evalharness_pack_content_hash": pack.content_hash, "evalharness_version": __version__,
                      "evalharness_task": task.instance_id, "repo": task.repo, "base_commit": task.base_commit,
                      "log_parser": spec.log_parser, "test_command": spec.test_command}),
        ("verifier", {"timeout_sec": float(spec.timeouts.tests_s + VERIFIER_MARGIN_S), "user": "root",
                      "environment_mode": verifier}),
        ("agent", {"timeout_sec": float(spec.timeouts.agent_s), "user": "agent"}),
        ("environment", {"build_timeout_sec": float(2 * spec.timeouts.build_s), "cpus": max(1, round(limits.cpus)),
                         "memory_mb": parse_size(limits.memory) // mib,
                         "storage_mb": (parse_size(limits.disk) + parse_size(limits.tmp)) // mib,
                         "network_mode": "no-network", "workdir": spec.environment.workdir}),
    ]
    blocks = []
    for name, values in tables:
        lines = [f"[{name}]"] if name else []
        lines += [f"{key} = {_toml(value)}" for key, value in values.items() if value is not None]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _toml(value: object) -> str:
    """A TOML value: JSON's string escapes are TOML's basic-string escapes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def solve_sh(pack: Pack, task: TaskSpec) -> str:
    workdir = pack.spec_for(task).environment.workdir  # type: ignore[union-attr]
    return ("#!/bin/bash\n"
            f"# The gold patch of evalharness task {pack.name}/{task.instance_id}, applied as evalharness's oracle\n"
            "# harness applies it (Harbor's oracle agent copies solution/ to /solution and runs this).\n"
            "set -euo pipefail\n"
            f"cd {shlex.quote(workdir)}\n"
            'git apply --whitespace=nowarn "$(dirname "$(readlink -f "$0")")/gold.patch"\n')


def test_sh(pack: Pack, task: TaskSpec) -> str:
    return ("#!/bin/bash\n"
            f"# Verifier of evalharness task {pack.name}/{task.instance_id} (exported by evalharness {__version__}).\n"
            "# verify.py restores the test files, applies test.patch, runs the pack's test command and decides as\n"
            "# evalharness's grader does on an unguarded run; it writes /logs/verifier/reward.txt (1 = resolved) and\n"
            "# verdict.json. The base image's own Python (3.9 or newer) runs it, isolated from the environment's\n"
            "# variables. A reward file already there is removed first: if the verifier fails, Harbor finds none\n"
            "# (a verifier error, not the agent's 0, and never a reward the agent wrote).\n"
            "mkdir -p /logs/verifier\n"
            "rm -f /logs/verifier/reward.txt /logs/verifier/reward.json\n"
            'exec /usr/bin/python3 -I "$(dirname "$(readlink -f "$0")")/verify.py" "$(dirname "$(readlink -f "$0")")"\n')
