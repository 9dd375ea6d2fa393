"""Gold patch checks (pure): is the gold patch code a person writes, of a size an agent can write?

Three checks over the gold patch's diff (``docs/mining.md``, "The quality gate"):

- ``gold_too_large``: more than ``max_gold_bytes`` bytes (``--max-gold-bytes``).
- ``gold_generated``: a file no one writes by hand: a lock file (``poetry.lock``, ``package-lock.json``,
  ``*.lock``, ...), a minified or source-map file (``*.min.js``, ``*.map``), a vendored path (``vendor/``,
  ``_vendor/``, ``third_party/``, ``extern/``, ``node_modules/``), a compiled or binary file (``.mo``,
  ``.pyc``, ``.so``, images, archives, any ``GIT binary patch``), or a file whose first lines say it is
  generated (``automatically generated``, ``do not edit``, ``@generated``).
- ``gold_data_dominated``: more than ``data_share`` of the changed lines (added and removed, blank lines
  left out) are data, and at least ``data_min_lines`` are: lines of data files (``DATA_SUFFIXES``:
  ``.json``, ``.csv``, ``.txt``, ``.po``, ...) and literal-table lines of code files (a line of only
  literals and punctuation: ``(0x1F600, 'V'),``, ``'January': 'Janvier',``) where a file has at least
  ``table_min_lines`` of them, as generated Unicode tables or translation catalogues have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from evalharness.quality.gate import DEFAULT, Check, Thresholds

DATA_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".txt", ".po", ".pot", ".xml", ".yaml", ".yml", ".dat",
                 ".data", ".tab", ".ucd", ".svg", ".ini", ".cfg", ".toml", ".html", ".htm")
LOCK_NAMES = {"poetry.lock", "pipfile.lock", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock",
              "pnpm-lock.yaml", "uv.lock", "pdm.lock", "cargo.lock", "composer.lock", "gemfile.lock", "go.sum"}
MINIFIED = (".min.js", ".min.css", ".map")
VENDORED = {"vendor", "_vendor", "vendored", "third_party", "thirdparty", "3rdparty", "extern", "node_modules"}
COMPILED = (".mo", ".pyc", ".pyo", ".so", ".pyd", ".dll", ".dylib", ".o", ".a", ".whl", ".egg", ".zip", ".gz",
            ".tgz", ".bz2", ".xz", ".tar", ".png", ".jpg", ".jpeg", ".gif", ".ico", ".pdf", ".woff", ".woff2", ".ttf")
MARKER_LINES = 5
"""A generated-file marker counts in a file's first lines only (a comment, not code that mentions it)."""
_MARKER = re.compile(r"^\s*(?:#|//|/\*|\*|<!--|;|--)?.*\b(?:automatically generated|auto-?generated|generated "
                     r"(?:by|from|with)|do not (?:edit|modify)|@generated)\b", re.I)
_STRING = re.compile(r"""[rRbBuUfF]{0,2}(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:0[xXoObB][0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w.])")
_CONSTANT = re.compile(r"\b(?:True|False|None)\b")
_PUNCTUATION = re.compile(r"[\s()\[\]{},:]*")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass
class FileChange:
    """One file of a diff: its path, changed lines (without the +/- mark) and whether git saw it as binary."""

    path: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    """The file's first lines as the diff shows them (a hunk at line 1: context and added lines)."""
    binary: bool = False


def parse_diff(patch: str) -> list[FileChange]:
    """The files of a git diff, in order (``diff --git`` sections; ``/dev/null`` sides handled)."""
    files: list[FileChange] = []
    current: FileChange | None = None
    new_line = 0
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            match = re.match(r"diff --git a/(.+?) b/(.+)$", line)
            current = FileChange(match.group(2) if match else line.split()[-1])
            files.append(current)
        elif current is None:
            continue
        elif line.startswith(("GIT binary patch", "Binary files ")):
            current.binary = True
        elif line.startswith(("+++", "---")):
            continue
        elif (hunk := _HUNK.match(line)) is not None:
            new_line = int(hunk.group(1))
        elif line[:1] in ("+", " ", "-"):
            if line[:1] != "-":
                if new_line and new_line <= MARKER_LINES:
                    current.head.append(line[1:])
                new_line += 1
            (current.added if line[:1] == "+" else current.removed if line[:1] == "-" else []).append(line[1:])
    return files


def is_literal_line(line: str) -> bool:
    """A line of only literals (strings, numbers, True/False/None) and punctuation: a row of a table."""
    text = line.strip()
    if not text or text.startswith("#"):
        return False
    rest, strings = _STRING.subn("", text)
    rest, numbers = _NUMBER.subn("", rest)
    rest, constants = _CONSTANT.subn("", rest)
    return strings + numbers + constants > 0 and _PUNCTUATION.fullmatch(rest) is not None


def generated_kind(change: FileChange) -> str | None:
    """Why a file is not written by hand (lock, minified, vendored, compiled, binary, marked), else None."""
    path = PurePosixPath(change.path)
    name = path.name.lower()
    if name in LOCK_NAMES or name.endswith(".lock"):
        return "a lock file"
    if name.endswith(MINIFIED):
        return "a minified or source-map file"
    if VENDORED & {p.lower() for p in path.parts[:-1]}:
        return "a vendored path"
    if name.endswith(COMPILED) or change.binary:
        return "a compiled or binary file"
    marker = next((line for line in change.head if _MARKER.match(line)), None)
    if marker is not None:
        return f"marked generated ({marker.strip()[:60]!r})"
    return None


def check_gold(patch: str, thresholds: Thresholds = DEFAULT) -> list[Check]:
    """The three gold patch checks, in order: gold_too_large, gold_generated, gold_data_dominated."""
    files = parse_diff(patch)
    return [_size(patch, thresholds), _generated(files), _data(files, thresholds)]


def _size(patch: str, thresholds: Thresholds) -> Check:
    size = len(patch.encode())
    if size > thresholds.max_gold_bytes:
        return Check("gold_too_large", False, f"{size:,} bytes (the cap is {thresholds.max_gold_bytes:,}; "
                     "--max-gold-bytes changes it)")
    return Check("gold_too_large", True, f"{size:,} bytes (cap {thresholds.max_gold_bytes:,})")


def _generated(files: list[FileChange]) -> Check:
    found = [(f.path, kind) for f in files if (kind := generated_kind(f))]
    if found:
        shown = "; ".join(f"{path}: {kind}" for path, kind in found[:3])
        return Check("gold_generated", False, f"{len(found)} of {len(files)} file(s) are not written by hand: {shown}")
    return Check("gold_generated", True, f"{len(files)} file(s), none generated, vendored, compiled or a lock file")


def data_lines(change: FileChange, table_min_lines: int = DEFAULT.table_min_lines) -> tuple[int, int]:
    """(data lines, changed lines) of one file: every line of a data file; the literal-table lines of a code
    file when it has at least ``table_min_lines`` of them (a hand-written table of primes or an ``__all__``
    list is code)."""
    lines = [line for line in change.added + change.removed if line.strip()]
    if change.path.lower().endswith(DATA_SUFFIXES):
        return len(lines), len(lines)
    literal = sum(map(is_literal_line, lines))
    return (literal if literal >= table_min_lines else 0), len(lines)


def _data(files: list[FileChange], thresholds: Thresholds) -> Check:
    per_file = [(f.path, *data_lines(f, thresholds.table_min_lines)) for f in files]
    data = sum(d for _, d, _ in per_file)
    total = sum(t for _, _, t in per_file)
    share = data / total if total else 0.0
    top = sorted((p for p in per_file if p[1]), key=lambda p: -p[1])[:3]
    where = ", ".join(f"{path} {d}" for path, d, _ in top)
    if data >= thresholds.data_min_lines and share > thresholds.data_share:
        return Check("gold_data_dominated", False, f"{data} of {total} changed lines ({share:.0%}, more than "
                     f"{thresholds.data_share:.0%}) are data: {where}")
    return Check("gold_data_dominated", True, f"{data} of {total} changed lines are data ({share:.0%})"
                 + (f": {where}" if where else ""))
