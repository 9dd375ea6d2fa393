"""What a probe may look at besides the task: the code at base, stored runs, validation, Docker.

Probes take ``(task, ctx)`` and return a ``Finding``. Pure probes use only the task and
``ctx.base_code``; the others say ``skipped`` when what they need is absent (``ctx.trials`` is None,
``ctx.validator`` is None), never "not flagged".
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from evalharness.types import TaskSpec


class BaseCode(Protocol):
    """Read access to a task's repository at its base commit (before the fix and the test patch)."""

    def contains(self, text: str) -> bool:
        """Does any tracked file at base hold ``text`` (a fixed string)?"""

    def read(self, path: str) -> str | None:
        """The file at ``path`` at base, or None when it does not exist there."""


@dataclass
class GitBaseCode:
    """A task's base commit in a git repository (a mirror ``owner__name.git`` or a clone)."""

    git_dir: Path
    commit: str
    _cache: dict[str, bool] = field(default_factory=dict)

    def _git(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True,
                              env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"})

    def contains(self, text: str) -> bool:
        if text not in self._cache:
            found = self._git("grep", "-q", "-F", "-e", text, self.commit, "--")
            if found.returncode not in (0, 1):
                raise RuntimeError(f"git grep in {self.git_dir} failed: {found.stderr.decode(errors='replace')[:300]}")
            self._cache[text] = found.returncode == 0
        return self._cache[text]

    def read(self, path: str) -> str | None:
        shown = self._git("show", f"{self.commit}:{path}")
        return shown.stdout.decode(errors="replace") if shown.returncode == 0 else None


@dataclass
class DirBaseCode:
    """A task's base tree as a folder on the host (for example copied out of its task image)."""

    root: Path
    suffixes: tuple[str, ...] = (".py", ".pyi", ".pyx", ".txt", ".rst", ".md", ".cfg", ".toml", ".c", ".h")
    _text: str | None = None

    def _all(self) -> str:
        if self._text is None:
            parts = []
            for p in sorted(self.root.rglob("*")):
                if p.is_file() and p.suffix in self.suffixes and ".git" not in p.parts:
                    parts.append(p.read_text(errors="replace"))
            self._text = "\n".join(parts)
        return self._text

    def contains(self, text: str) -> bool:
        return text in self._all()

    def read(self, path: str) -> str | None:
        p = self.root / path
        return p.read_text(errors="replace") if p.is_file() else None


@dataclass
class AuditContext:
    """Everything an audit knows beyond the task itself."""

    pack: Any  # evalharness.packs.Pack
    base_code: Callable[[TaskSpec], BaseCode | None] = lambda task: None
    """The task's code at base, or None when it cannot be read here."""
    trials: Any = None
    """The trials DataFrame of the stored runs given with ``--runs`` (``types.TRIAL_COLUMNS``), or None."""
    validation: Callable[[TaskSpec], dict | None] = lambda task: None
    """The task's current validation report (``validation.load_report``), or None."""
    validator: Any = None
    """A ``validation.Validator`` for probes that grade patches in Docker, or None (those probes skip)."""
    predictions: Any = None
    """Real agents' predictions with verdicts by task id (``audit.agentpreds.load_predictions``), or None."""
    log: Callable[[str], None] = print
