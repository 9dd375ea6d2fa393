"""Overlays: small unified-diff patches per task (``overlays/<task>/*.patch``), applied to a copy of the task.

In the spirit of NeMo's task overlays: the upstream task stays byte for byte as imported, the reviewable change
that makes it run here (an offline verifier, a registry ``COPY --from`` replaced) lives beside it and is part
of the pack's content hash (packs.harbor_parts). Patches apply in name order with ``git apply -p1`` from the
task directory; one that does not apply is the task's error, named with the patch.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from evalharness.errors import TaskError


def overlay_patches(overlays: Path | None, task_id: str) -> list[Path]:
    folder = overlays / task_id if overlays is not None else None
    return sorted(folder.glob("*.patch")) if folder is not None and folder.is_dir() else []


def apply_overlays(task_dir: Path, patches: list[Path], dest: Path) -> Path:
    """A copy of ``task_dir`` at ``dest`` with ``patches`` applied (modes kept); TaskError naming the patch."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(task_dir, dest, symlinks=True)
    for patch in patches:
        done = subprocess.run(["git", "apply", "-p1", "--whitespace=nowarn", str(patch.resolve())], cwd=dest,
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            reason = f"overlay {patch.parent.name}/{patch.name} does not apply: {done.stderr.strip()[:300]}"
            raise TaskError(f"task {task_dir.name}: {reason}", "fix or remove the overlay", reason=reason)
    return dest
