"""Python: today's ``packs new`` detection (``sources/scaffold.py``), unchanged, behind the language interface.

pytest runs under the grader's guarded launcher; its JUnit XML is read by the ``junit`` parser.
"""

from __future__ import annotations

import re

from evalharness.languages.base import Reader

_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


class Python:
    name = "python"
    config_files = ("pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", "tox.ini", "conftest.py")

    def claims(self, files: list[str]) -> bool:
        return any(p in files for p in MARKERS) or any(p.endswith(".py") for p in files)

    def detect(self, files: list[str], read: Reader):
        from evalharness.sources.scaffold import detect

        return detect(files, read)

    def is_test_file(self, path: str) -> bool:
        return bool(_TEST_FILE.search(path))

    def render_manifest(self, name: str, found, *, url: str, ref: str, where: str) -> str:
        from evalharness.sources.scaffold import render_manifest

        return render_manifest(name, found, url=url, ref=ref, where=where)

    def summary(self, found) -> list[str]:
        return [f"Python {found.python.value} ({found.base}); {found.layout.reason}; tests: {found.tests.reason}",
                f"  install: {'; '.join(found.install.value) or 'nothing'}",
                f"  test command: {found.test_command}",
                *[f"  note: {note}" for note in found.notes]]


PYTHON = Python()
