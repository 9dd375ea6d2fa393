"""A unified git diff taken apart and put together again: files, hunks, runs of changed lines (pure, plus
git's own diff to write a patch). Any subset of a file's hunks applies to the base exactly, since hunks
are kept in base coordinates."""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

State = dict[str, "str | None"]
"""Touched paths -> file text (None: the file does not exist)."""


class PatchUnsupported(ValueError):
    """The gold patch cannot be taken apart here (binary, rename, or it does not match the base given)."""


@dataclass
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    lines: list[tuple[str, str]]
    """(op, text with its line ending): op is " ", "-" or "+"."""


@dataclass
class FilePatch:
    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def parse_patch(patch: str) -> list[FilePatch]:
    """The files and hunks of a unified git diff (PatchUnsupported for binary patches and renames)."""
    files: list[FilePatch] = []
    lines = patch.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            files.append(FilePatch(None, None))
        elif line.startswith(("GIT binary patch", "Binary files ")):
            raise PatchUnsupported(f"binary change to {files[-1].path if files else '?'}")
        elif line.startswith(("rename from ", "copy from ")):
            raise PatchUnsupported(f"rename or copy in the patch: {line}")
        elif line.startswith("--- ") and files and not files[-1].hunks:
            files[-1].old_path = _path(line[4:])
        elif line.startswith("+++ ") and files and not files[-1].hunks:
            files[-1].new_path = _path(line[4:])
        elif (m := _HUNK.match(line)) and files:
            hunk, i = _read_hunk(lines, i + 1, m)
            files[-1].hunks.append(hunk)
            continue
        i += 1
    return [f for f in files if f.hunks]


def _path(text: str) -> str | None:
    text = text.split("\t")[0].strip()
    return None if text == "/dev/null" else text[2:] if text[:2] in ("a/", "b/") else text


def _read_hunk(lines: list[str], i: int, m: re.Match) -> tuple[Hunk, int]:
    old_len = 1 if m.group(2) is None else int(m.group(2))
    new_len = 1 if m.group(4) is None else int(m.group(4))
    hunk = Hunk(int(m.group(1)), old_len, int(m.group(3)), [])
    old_left, new_left = old_len, new_len
    while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i].startswith("\\")):
        line = lines[i]
        if line.startswith("\\"):
            if hunk.lines:
                op, text = hunk.lines[-1]
                hunk.lines[-1] = (op, text.removesuffix("\n"))
        else:
            op = line[:1] if line[:1] in " -+" else " "
            hunk.lines.append((op, line[1:] + "\n"))
            old_left -= op != "+"
            new_left -= op != "-"
        i += 1
    return hunk, i


def apply_hunks(base: str, hunks: list[Hunk], path: str = "", added: list[int] | None = None) -> str:
    """``base`` with ``hunks`` (in base coordinates, any subset of one file's hunks) applied. As ``git apply``
    does, a hunk whose lines are not at its stated line is applied where they are, nearest to it. The line
    numbers (1-based, in the result) of the lines the hunks add are appended to ``added``."""
    lines = base.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for h in hunks:
        old = [t for op, t in h.lines if op != "+"]
        start = _locate(lines, old, h.old_start if h.old_len == 0 else h.old_start - 1, pos)
        if start is None:
            raise PatchUnsupported(f"the gold patch does not match the base of {path} at line {h.old_start}")
        out += lines[pos:start]
        for op, t in h.lines:
            if op != "-":
                out.append(t)
                if op == "+" and added is not None:
                    added.append(len(out))
        pos = start + len(old)
    return "".join(out + lines[pos:])


def _locate(lines: list[str], old: list[str], stated: int, floor: int) -> int | None:
    """Where ``old`` starts in ``lines`` at or after ``floor``, the nearest to ``stated``; None if nowhere."""
    if not old:
        return stated if floor <= stated <= len(lines) else None
    found = [i for i in range(floor, len(lines) - len(old) + 1) if lines[i] == old[0]
             and lines[i:i + len(old)] == old]
    return min(found, key=lambda i: (abs(i - stated), i)) if found else None


def file_state(fp: FilePatch, base: str | None, hunks: list[Hunk], added: list[int] | None = None) -> str | None:
    """One file after applying ``hunks`` of its patch: None when it does not exist."""
    if fp.old_path is None and not hunks:
        return None
    if fp.new_path is None and len(hunks) == len(fp.hunks):
        return None
    return apply_hunks(base or "", hunks, fp.path, added)


def render(base: State, state: State) -> str:
    """A git patch taking the base files to ``state`` (git's own diff; new and deleted files included)."""
    with tempfile.TemporaryDirectory(prefix="eh-mutant-") as tmp:
        for side, files in (("a", base), ("b", {**base, **state})):
            Path(tmp, side).mkdir()
            for path, text in files.items():
                if text is not None:
                    target = Path(tmp, side, path)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(text.encode())
        done = subprocess.run(["git", "diff", "--no-index", "--no-prefix", "--no-color", "--no-ext-diff",
                               "--full-index", "a", "b"], cwd=tmp, capture_output=True,
                              env={"HOME": tmp, "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"})
    if done.returncode not in (0, 1):
        raise RuntimeError(f"git diff failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def change_blocks(hunk: Hunk) -> list[tuple[int, int]]:
    """The runs of removed and added lines of a hunk, as [start, end) indexes into its lines."""
    blocks, start = [], None
    for k, (op, _) in enumerate([*hunk.lines, (" ", "")]):
        if op != " " and start is None:
            start = k
        elif op == " " and start is not None:
            blocks.append((start, k))
            start = None
    return blocks


def removed_by_line(fp: FilePatch, added: list[int]) -> dict[int, str]:
    """Each added line (``added``: their numbers in order, from ``file_state``) -> the code its run of changed
    lines removed, whitespace collapsed."""
    out, numbers = {}, iter(added)
    for hunk in fp.hunks:
        for lo, hi in change_blocks(hunk):
            removed = " ".join(" ".join(t.split()) for op, t in hunk.lines[lo:hi] if op == "-")
            for op, _ in hunk.lines[lo:hi]:
                if op == "+":
                    out[next(numbers)] = removed
    return out
