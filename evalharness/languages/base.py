"""What a language module provides (``docs/languages.md``), and the plain values it returns.

A language module is pure: it reads the tracked files of a repository at one commit (their paths, and a
reader of small files) and says how a pack for it builds, installs and tests, each value with its reason.
It never imports the sandbox, the runner or the grader: parsers are named (``log_parser``), not imported.
Adding a language means adding one module that provides ``Language`` and one line in ``registry``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from evalharness.errors import UserError

Reader = Callable[[str], "str | None"]
"""``read(path)``: a tracked file's text at the commit, None when absent (or too large)."""


@dataclass(frozen=True)
class Choice:
    """One detected value and why (the ``pack.yaml`` comment over it)."""

    value: object
    reason: str


@dataclass(frozen=True)
class Runner:
    """A test runner a language supports: how it runs given test files with per-test results, which parser
    reads them, and the files that configure it (what a pack's ``runner_files`` may name)."""

    name: str
    command: str
    """The test command; ``{test_files}`` becomes the task's test files, ``{junit_xml}`` the results file."""
    log_parser: str
    """A name in ``evalharness.grading.parsers.PARSERS``."""
    config_files: tuple[str, ...] = ()
    package_keys: tuple[str, ...] = ()
    """Keys of the project manifest that configure the runner (``package.json``'s ``jest``)."""


class UnsupportedRunner(UserError):
    """The project's test runner is one this language module refuses (named, with what to do instead)."""


class Language(Protocol):
    """What a language module provides."""

    name: str

    def claims(self, files: list[str]) -> bool:
        """Does the repository (its tracked files) look like a project of this language?"""

    def detect(self, files: list[str], read: Reader) -> object:
        """The project's environment (base image, install steps, runner, test command), each with its reason.
        Raises ``UnsupportedRunner`` rather than guess."""

    def is_test_file(self, path: str) -> bool:
        """Is ``path`` a test file by this language's naming conventions?"""

    def render_manifest(self, name: str, found: object, *, url: str, ref: str, where: str) -> str:
        """``pack.yaml`` for the detected project, a comment over each value saying why."""

    def summary(self, found: object) -> list[str]:
        """What ``packs new`` prints about the detection, a line each."""
