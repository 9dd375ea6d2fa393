"""The statistics layer is pure: it imports no docker, sandbox, runner, store or cli, and does no I/O.

Pins the layering arrow of STYLE.md ("stats never imports docker"): a report must be computable
from a trials table on a machine without Docker.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import evalharness.stats

STATS_DIR = Path(evalharness.stats.__file__).resolve().parent
FORBIDDEN_TOP = {"docker", "sqlalchemy", "requests", "httpx", "subprocess", "socket", "litellm", "openai", "anthropic"}
ALLOWED_EVALHARNESS = {"evalharness.types", "evalharness.errors"}


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            names.append("evalharness.stats.<relative>")
    return names


def test_stats_imports_only_allowed_modules():
    modules = sorted(STATS_DIR.glob("*.py"))
    assert len(modules) >= 8
    for path in modules:
        for name in _imports(path):
            assert name.split(".")[0] not in FORBIDDEN_TOP, f"{path.name} imports {name}"
            if name.startswith("evalharness") and not name.startswith("evalharness.stats"):
                assert name in ALLOWED_EVALHARNESS, f"{path.name} imports {name}"


def test_importing_stats_pulls_in_no_docker_and_prints_nothing():
    code = ("import sys, evalharness.stats as s; "
            "bad = [m for m in sys.modules if m.split('.')[0] == 'docker' or m.startswith(('evalharness.sandbox', "
            "'evalharness.runner', 'evalharness.store', 'evalharness.cli'))]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]" and out.stderr == ""


def test_public_names_exist():
    for name in evalharness.stats.__all__:
        assert hasattr(evalharness.stats, name), name
    for required in ("score", "score_table", "per_task_table", "compare", "adjust_pvalues", "plan_from_pilot",
                     "tasks_needed", "mde", "plan_table", "detect_drift", "cohen_kappa", "variance_components",
                     "cost_per_resolved", "acceptance_rate"):
        assert required in evalharness.stats.__all__
