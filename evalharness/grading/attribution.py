"""Which code the patch wrote: files and line numbers, so the guarded run can attribute an event to it.

Pure. The launcher's audit hook (``data/eh_pytest.py``) walks the stack of every sensitive event
and asks, frame by frame, whether the line executing is one the patch wrote. This module turns the
patch and the surface decision into that map: for a file the patch adds, every line; for a file it
changes, the line numbers its hunks add in the new file. A line the patch did not touch is the
base's code, even in a changed file.
"""

from __future__ import annotations

import re

_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
WHOLE_FILE = None
"""The map's value for a file the patch adds (or rewrites beyond reading): every line is the patch's."""


def written_lines(patch: bytes, applied: dict[str, str]) -> dict[str, list[int] | None]:
    """``applied`` maps each path the grader applied to git's change letter (``A`` added, ``M``
    changed, ...). Returns path -> sorted new-file line numbers the patch added there, or
    ``WHOLE_FILE`` (None) for an added, copied or type-changed file or one whose hunks cannot be
    read. Deleted paths are left out: no code runs from them."""
    hunks = _added_lines_by_file(patch)
    out: dict[str, list[int] | None] = {}
    for path, change in applied.items():
        if change.startswith("D"):
            continue
        if change.startswith(("A", "C", "T")) or path not in hunks:
            out[path] = WHOLE_FILE
        else:
            out[path] = sorted(hunks[path])
    return out


def _added_lines_by_file(patch: bytes) -> dict[str, set[int]]:
    """New-file line numbers of every ``+`` line, per ``+++ b/PATH`` (paths git quotes are left to
    ``written_lines``' WHOLE_FILE default: a quoted path is never mis-read as another file)."""
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    new_line = 0
    remaining = 0
    for raw in patch.split(b"\n"):
        if remaining == 0:
            if raw.startswith(b"+++ "):
                name = raw[4:].rstrip(b"\r")
                current = None
                if name.startswith(b"b/"):
                    current = out.setdefault(name[2:].decode("utf-8", "surrogateescape"), set())
                continue
            found = _HUNK.match(raw)
            if found and current is not None:
                new_line = int(found.group(1))
                remaining = int(found.group(2)) if found.group(2) is not None else 1
                if remaining == 0:  # a hunk that only deletes
                    continue
            continue
        if raw.startswith(b"\\"):  # "\ No newline at end of file"
            continue
        if raw.startswith(b"+"):
            current.add(new_line)
            new_line += 1
            remaining -= 1
        elif raw.startswith(b"-"):
            continue
        else:  # context (a space, or an empty line a mailer stripped)
            new_line += 1
            remaining -= 1
    return out
