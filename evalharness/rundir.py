"""The re-gradable run folder: runs/<run_id>/<pack>/<task>/<harness>/<model>/seed-<n>/.

A trial's folder is written in full under a temporary name, then renamed into place, so a
killed runner never leaves a half-written trial that looks complete.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


def safe(part: str) -> str:
    """A path component from a label (model names contain '/')."""
    return _UNSAFE.sub("__", part).strip(".") or "_"


def trial_dir(run_dir: Path, pack: str, task: str, harness: str, model: str, seed: int) -> Path:
    return run_dir / safe(pack) / safe(task) / safe(harness) / safe(model) / f"seed-{seed}"


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)


def write_trial(final: Path, files: dict[str, str | bytes | dict | list]) -> None:
    """Write all files of one trial, then move the folder into place atomically."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.with_name(final.name + f".partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for name, content in files.items():
        if isinstance(content, bytes):
            (staging / name).write_bytes(content)
        elif isinstance(content, str):
            (staging / name).write_text(content, errors="surrogateescape")
        else:
            write_json(staging / name, content)
    if final.exists():
        shutil.rmtree(final)
    os.replace(staging, final)


def git_revision(path: Path) -> dict[str, Any]:
    """Commit and dirty flag of the checkout that holds evalharness (None outside a checkout)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(dirty) if dirty is not None else None}
