"""What a static check of a Harbor task says (pure data; ``docs/audit.md`` "Static checks of Harbor tasks").

Severity is the audit's 0-3 scale (``evalharness/audit/findings.py``): 1 minor (the Terminal-Bench-3 template's
hygiene rules: pins, platform, metadata; static hints), 2 serious (the grade can be wrong or unfair: shared-mode
verifier, verify-time downloads, a time limit the agent is misinformed of, a missing reward on a failing path),
3 the task cannot be graded fairly as written (the verifier cannot reach what it needs, calls a tool that is
not there, never writes a reward; a validation run that failed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalharness.sources.harbor.model import HarborTask

SEVERITIES = (0, 1, 2, 3)


@dataclass(frozen=True)
class Evidence:
    """A place in the task: a file (relative to the task directory), a line (None: the file as a whole or a
    run-time fact) and the quoted text."""

    file: str
    line: int | None
    text: str

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class StaticFinding:
    check: str
    """The check's stable id (``pip-pinning``, ``allow-internet``, ...; ``CHECKS`` in checks.py lists them)."""
    severity: int
    reason: str
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not 0-3")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = [asdict(e) for e in self.evidence]
        return data


def relative(task: HarborTask, path: Path) -> str:
    try:
        return str(path.relative_to(task.root))
    except ValueError:
        return str(path)


def evidence(task: HarborTask, path: Path, line: int | None, text: str | None = None) -> Evidence:
    """Evidence at ``path:line``, quoting the line itself unless ``text`` is given."""
    if text is None and line:
        lines = read_text(path).splitlines()
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return Evidence(relative(task, path), line, (text or "")[:300])


def toml_line(task: HarborTask, key: str | None, table: str | None = None) -> Evidence:
    """Evidence at the task.toml line that sets ``key`` (inside ``[table]`` when given), else (or when ``key`` is
    None) at the table's header, else the file."""
    path = task.root / "task.toml"
    current, header_line = "", None
    for number, raw in enumerate(read_text(path).splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("["):
            current = stripped.strip("[] ")
            if table is not None and current == table:
                header_line = number
            continue
        if key and (table is None or current == table) and stripped.split("=", 1)[0].strip() == key:
            return evidence(task, path, number)
    return evidence(task, path, header_line)


def read_text(path: Path | None) -> str:
    if path is None or not path.is_file():
        return ""
    return path.read_text(encoding="utf-8", errors="replace")
