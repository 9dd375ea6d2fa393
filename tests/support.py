"""Paths and helpers shared by the top-level tests (import as `from support import ...`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TINYPACK = REPO / "tests" / "data" / "tinypack"
QUICKSTART = REPO / "tasks" / "quickstart"
EVALHARNESS = [sys.executable, "-m", "evalharness.cli"]


def write_file(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` at ``path`` (parents made) with file mode ``mode``: a hand-made task's files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def run_cli(*args: str, cwd: Path, timeout: float = 900, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    done = subprocess.run([*EVALHARNESS, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env)
    if check and done.returncode != 0:
        raise AssertionError(f"evalharness {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done
