"""What a task's source puts into its image: only what the task may see.

A ``path`` source inside a git work tree contributes its *committed* files (``git archive`` of
``HEAD``): never untracked or ignored files (``.env``, ``.pytest_cache``, stale ``.pyc``), never
uncommitted edits. A folder outside any git work tree is copied without ``DENY_LIST`` (a note
says so at build time). A ``git`` source whose URL is a local path or ``file://`` URL is packed
with ``git bundle`` into the build context, since the engine that builds cannot see host paths.
Every problem is a TaskError: the pack is wrong, not the machine.
"""

from __future__ import annotations

import fnmatch
import functools
import io
import os
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

from evalharness.errors import TaskError

DENY_LIST = (".git", ".hg", ".svn", "__pycache__", "*.pyc", "*.pyo", ".pytest_cache", ".mypy_cache",
             ".ruff_cache", ".hypothesis", ".tox", ".nox", ".venv", ".env*", ".coverage*", "htmlcov")
"""Names left out when a ``path`` source folder is not in a git work tree (matched on every path component)."""

_GIT_TIMEOUT_S = 300


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, timeout=_GIT_TIMEOUT_S)


def _first_line(data: bytes) -> str:
    text = data.decode(errors="replace").strip()
    return text.splitlines()[0] if text else "(no output)"


def path_source_tar(root: Path) -> tuple[bytes, list[str]]:
    """(a tar of what the image may hold, notes for the build log) for a ``path`` source folder."""
    if not root.is_dir():
        raise TaskError(f"path source {root} is not a folder", "environment.source.path is relative to the pack folder")
    where = _git("rev-parse", "--show-toplevel", "--show-prefix", cwd=root)
    if where.returncode != 0:
        if b"not a git repository" not in where.stderr:
            raise TaskError(f"path source {root}: git cannot read its work tree: {_first_line(where.stderr)}")
        return _tar_folder(root), [f"path source {root} is not in a git work tree: copying the folder without "
                                   f"{', '.join(DENY_LIST)} (commit it to a git repository to copy tracked files only)"]
    top, prefix = where.stdout.decode().splitlines() + [""] * (2 - len(where.stdout.decode().splitlines()))
    tree = _git("rev-parse", "--verify", "--quiet", f"HEAD:{prefix}", cwd=Path(top))
    if tree.returncode != 0:
        raise TaskError(f"path source {root}: nothing under it is committed in {top}",
                        "commit the source folder: a path source in a git work tree takes the committed files only")
    notes = []
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", ".", cwd=root)
    if dirty.returncode == 0 and dirty.stdout.strip():
        notes.append(f"path source {root} has uncommitted edits: the image takes the committed files (commit them)")
    return _tracked_tar(Path(top), tree.stdout.decode().strip()), notes


@functools.lru_cache(maxsize=8)
def _tracked_tar(top: Path, tree: str) -> bytes:
    """``git archive`` of a tree object, normalised (times, owners) so equal trees give equal bytes."""
    done = _git("archive", "--format=tar", tree, cwd=top)
    if done.returncode != 0:
        raise TaskError(f"git archive of {top} failed: {_first_line(done.stderr)}")
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        for member in src.getmembers():
            data = src.extractfile(member) if member.isfile() else None
            member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
            member.pax_headers = {}
            dst.addfile(member, data)
    return out.getvalue()


def denied(relative: Path) -> bool:
    """True when a path (relative to the source folder) has a component in DENY_LIST."""
    return any(fnmatch.fnmatchcase(part, pattern) for part in relative.parts for pattern in DENY_LIST)


def _tar_folder(root: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for folder, dirs, files in os.walk(root, followlinks=False):
            dirs.sort()
            for name in [*dirs, *sorted(files)]:
                path = Path(folder) / name
                relative = path.relative_to(root)
                if denied(relative):
                    continue
                info = tar.gettarinfo(str(path), arcname=str(relative))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                if info.isfile():
                    with path.open("rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
            dirs[:] = [d for d in dirs if not denied((Path(folder) / d).relative_to(root))]
    return buf.getvalue()


def local_git_repository(url: str, pack_root: Path) -> Path | None:
    """The host folder a ``git`` source URL names (a path, relative to the pack, or file://), else None."""
    if url.startswith("file://"):
        return Path(unquote(urlparse(url).path)).resolve()
    if "://" in url or re.match(r"^[^/]+:", url):  # a remote URL, or scp-like user@host:path
        return None
    path = Path(url).expanduser()
    return (path if path.is_absolute() else pack_root / path).resolve()


def git_bundle(repository: Path, ref: str, url: str) -> tuple[bytes, str]:
    """(a ``git bundle --all`` of a local repository, the commit ``ref`` names in it).

    A shallow repository (a mirror holding chosen commits without their parents) cannot be bundled:
    its git directory travels as a tar instead (``is_bundle`` tells them apart: a tar starts with a file name).
    """
    if not repository.exists():
        raise TaskError(f"git source {url}: no such repository ({repository})",
                        "a local git source is a path relative to the pack folder, an absolute path or a file:// URL")
    commit = _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repository)
    if commit.returncode != 0:
        if b"not a git repository" in commit.stderr:
            raise TaskError(f"git source {url}: {repository} is not a git repository")
        raise TaskError(f"git source {url}: ref {ref!r} is not a commit of {repository}",
                        f"{_first_line(commit.stderr)}; give a branch, tag or commit of that repository")
    sha = commit.stdout.decode().strip()
    held = _git("for-each-ref", "--contains", sha, "--count=1", cwd=repository)
    if held.returncode != 0 or not held.stdout.strip():
        raise TaskError(f"git source {url}: commit {sha[:12]} ({ref}) is on no branch or tag of {repository}",
                        "only branches and tags are bundled into the image; give a ref that holds it")
    shallow = _git("rev-parse", "--is-shallow-repository", cwd=repository)
    if shallow.returncode == 0 and shallow.stdout.strip() == b"true":
        return _git_dir_tar(repository), sha
    return _bundle(repository, sha), sha


def is_bundle(data: bytes) -> bool:
    return data.startswith(b"# v2 git bundle") or data.startswith(b"# v3 git bundle")


@functools.lru_cache(maxsize=4)
def _git_dir_tar(repository: Path) -> bytes:
    """The git directory of ``repository`` (bare, or a work tree's ``.git``) as a tar rooted at ``repo.git/``."""
    found = _git("rev-parse", "--absolute-git-dir", cwd=repository)
    if found.returncode != 0:
        raise TaskError(f"git source {repository}: cannot find its git directory: {_first_line(found.stderr)}")
    git_dir = Path(found.stdout.decode().strip())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for folder, dirs, files in os.walk(git_dir):
            dirs.sort()
            if Path(folder) == git_dir:
                dirs[:] = [d for d in dirs if d not in ("hooks", "logs", "worktrees")]
            for name in sorted(files):
                path = Path(folder) / name
                info = tar.gettarinfo(str(path), arcname=f"repo.git/{path.relative_to(git_dir)}")
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                info.mode = 0o644
                with path.open("rb") as f:
                    tar.addfile(info, f)
    return buf.getvalue()


@functools.lru_cache(maxsize=4)
def _bundle(repository: Path, sha: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="evalharness-bundle-") as tmp:
        target = Path(tmp) / "source.bundle"
        done = _git("bundle", "create", "-q", str(target), "--all", cwd=repository)
        if done.returncode != 0:
            raise TaskError(f"git bundle of {repository} failed: {_first_line(done.stderr)}")
        return target.read_bytes()
