"""Import arrows point one way: stats never imports docker or I/O layers, the sandbox never imports
pandas, the language layer imports no sandbox, runner or grader, nothing imports the CLI. Importing the package does nothing visible.

Pins: a statistics function that pulled in the Docker SDK and failed on a laptop without it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "evalharness"

FORBIDDEN = {
    "stats": {"docker", "evalharness.sandbox", "evalharness.runner", "evalharness.store", "evalharness.cli",
              "sqlalchemy", "evalharness.report"},
    "sandbox": {"pandas", "evalharness.stats", "evalharness.runner", "evalharness.cli", "evalharness.report"},
    "grading": {"pandas", "evalharness.stats", "evalharness.runner", "evalharness.cli"},
    "models": {"docker", "evalharness.runner", "evalharness.cli", "evalharness.stats"},
    # pure: a language names its parsers, never imports the grader, the sandbox or the run machinery
    "languages": {"docker", "pandas", "evalharness.sandbox", "evalharness.runner", "evalharness.grading",
                  "evalharness.executors", "evalharness.trial", "evalharness.validation", "evalharness.store",
                  "evalharness.report", "evalharness.stats", "evalharness.cli"},
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_import_arrows():
    problems = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        layer = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for name in _imports(path):
            if name.startswith("evalharness.cli") and rel.parts[0] != "cli":
                problems.append(f"{rel} imports the CLI")
            for bad in FORBIDDEN.get(layer, ()):
                if name == bad or name.startswith(bad + "."):
                    problems.append(f"{rel} imports {name}")
    assert problems == []


def test_importing_the_package_prints_nothing_and_creates_nothing(tmp_path):
    code = "import evalharness, evalharness.cli, evalharness.runner, evalharness.stats"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert list(tmp_path.iterdir()) == []
