"""The agent's changes in its work directory as a patch (patch.diff), so a Harbor trial can be reviewed like any
other (`evalharness review`, the report's trial pages).

The paths come from the engine's filesystem diff (``docker diff``), never from the agent; each changed file's
bytes are read from the stopped agent container (after) and from an unstarted container of the environment image
(before). ``unified_patch`` (pure) writes a git-style diff: text files line by line, a binary or oversized file as
one line saying so. It is for people to read; the verdict is the verifier's reward, never this patch.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

MAX_FILE = 256 * 1024
"""Bytes of one file read for the patch; a larger file is named, not shown."""
MAX_FILES = 200
"""Files in one patch; more are named in a last line."""


def workdir_paths(engine_diff: Iterable[dict], workdir: str) -> list[tuple[str, int]]:
    """(path, kind) of the files under ``workdir`` the engine lists as changed (0), added (1) or deleted (2)."""
    root = workdir.rstrip("/") + "/"
    return sorted((c["Path"], int(c["Kind"])) for c in engine_diff if str(c.get("Path", "")).startswith(root))


def _text(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\0" in data[:8192] or len(data) > MAX_FILE:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def unified_patch(changed: list[tuple[str, int]], before: Callable[[str], bytes | None],
                  after: Callable[[str], bytes | None], workdir: str) -> str:
    """A git-style diff of ``changed`` files (paths relative to ``workdir``); folders (no bytes on either side)
    are left out."""
    root = workdir.rstrip("/") + "/"
    parts: list[str] = []
    for n, (path, kind) in enumerate(changed):
        if n == MAX_FILES:
            parts.append(f"# {len(changed) - MAX_FILES} more changed path(s) not shown\n")
            break
        old = None if kind == 1 else before(path)
        new = None if kind == 2 else after(path)
        if old is None and new is None:
            continue
        rel = path[len(root):]
        head = f"diff --git a/{rel} b/{rel}\n" + ("new file mode 100644\n" if old is None else "") + \
            ("deleted file mode 100644\n" if new is None else "")
        a, b = _text(old), _text(new)
        if a is None or b is None:
            parts.append(head + f"Binary files a/{rel} and b/{rel} differ\n")
            continue
        body = "".join(_ended(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{rel}",
                                                   "/dev/null" if new is None else f"b/{rel}")))
        if body:
            parts.append(head + body)
    return "".join(parts)


def _ended(lines: Iterable[str]) -> Iterable[str]:
    for line in lines:
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
