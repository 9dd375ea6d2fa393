"""The re-gradable run folder: runs/<run_id>/<pack>/<task>/<harness>/<model>/seed-<n>/.

A trial's folder is written in full under a temporary name, then renamed into place, so a
killed runner never leaves a half-written trial that looks complete.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
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


class UnsafeTrialPath(ValueError):
    """A trial folder or file that is not a regular file inside the runs folder (a ``..``, an absolute path, a
    symbolic link, a device or a pipe): never read."""


def trial_folder(runs_dir: Path, detail: str) -> Path:
    """``runs_dir / detail`` when ``detail`` (the store's trial folder) is a relative path that stays inside the
    runs folder, symbolic links of its folders resolved; else ``UnsafeTrialPath``."""
    rel = Path(detail or "")
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise UnsafeTrialPath(f"trial folder {detail!r} is not a path inside the runs folder")
    folder = Path(runs_dir) / rel
    if not folder.resolve().is_relative_to(Path(runs_dir).resolve()):
        raise UnsafeTrialPath(f"trial folder {detail!r} leads out of the runs folder (a symbolic link)")
    return folder


def read_trial_text(folder: Path, name: str, *, head: int | None = None, tail: int | None = None) -> tuple[str, int]:
    """(text, size in bytes) of the trial file ``folder / name``: its first ``head`` or last ``tail`` bytes when
    given, else all of it. The file is opened without following a symbolic link and read only if it is a regular
    file (``UnsafeTrialPath`` otherwise); ``FileNotFoundError`` when it is absent."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeTrialPath(f"{name} is a symbolic link: not read") from exc
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnsafeTrialPath(f"{name} is not a regular file: not read")
    with os.fdopen(fd, "rb") as f:
        if tail is not None and info.st_size > tail:
            f.seek(info.st_size - tail)
            data = f.read(tail)
        else:
            data = f.read(head) if head is not None else f.read()
    return data.decode("utf-8", errors="replace"), info.st_size
