"""`packs mine` in Docker on a repository whose version comes from its installed metadata: a test that reads
the version must not become FAIL_TO_PASS because the environment was installed at the tip.

The history: the root has `verpkg` 1.0 with a static `__version__ = "1.0"` and a wrong `add`; the candidate
fixes `add` and takes `__version__` from the installed metadata, with a test of each; the tip bumps the
version in pyproject.toml to 2.0 (packaging only: no candidate). At the candidate's base, a test asserting
`__version__ == importlib.metadata.version("verpkg")` passes when the environment is the base's (1.0 == 1.0)
and fails when it is the tip's (1.0 != 2.0), while the fix makes it pass either way: a false FAIL_TO_PASS
unless each task image installs the project again at its base (`environment.task_setup`). The pack is then
mined again without `task_setup`, and the version test comes back as FAIL_TO_PASS: the history does show the
fault it is here for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support import run_cli
from test_mine_end_to_end import commit, git

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PYPROJECT = ("[build-system]\nrequires = ['setuptools>=61']\nbuild-backend = 'setuptools.build_meta'\n\n"
             "[project]\nname = 'verpkg'\nversion = '{version}'\n\n[tool.setuptools]\npackages = ['verpkg']\n")
CORE = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = "from verpkg.core import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
NEW_TESTS = ("\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
             "def test_version_is_the_installed_one():\n    from importlib.metadata import version\n\n"
             "    import verpkg\n\n    assert verpkg.__version__ == version('verpkg')\n")


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, str]:
    repo = tmp_path_factory.mktemp("verrepo") / "verpkg"
    (repo / "verpkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "Start verpkg", {"pyproject.toml": PYPROJECT.format(version="1.0"), "verpkg/__init__.py":
                                  '__version__ = "1.0"\n', "verpkg/core.py": CORE, "tests/test_core.py": TESTS})
    good = commit(repo, "add() gives the difference of its arguments\n\nadd(2, 3) is -1; I expected 5. Also, "
                        "__version__ should be the installed distribution's version.",
                  {"verpkg/core.py": CORE.replace("a - b", "a + b"), "tests/test_core.py": TESTS + NEW_TESTS,
                   "verpkg/__init__.py": 'from importlib.metadata import version\n\n__version__ = version("verpkg")\n'})
    commit(repo, "Release 2.0", {"pyproject.toml": PYPROJECT.format(version="2.0")})
    return repo, good


def _mine(repo: Path, out: Path, cwd: Path) -> dict:
    done = run_cli("packs", "mine", "--repo", str(repo), "--out", str(out), "--pip", "pytest==8.3.5",
                   "--discover-reruns", "1", "--reruns", "1", cwd=cwd, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    task = json.loads((out / "tasks.jsonl").read_text().splitlines()[0])
    return task


def test_a_version_test_is_not_fail_to_pass_when_each_task_installs_its_own_base(history, tmp_path, base_image):
    repo, good = history
    out = tmp_path / "mined"
    task = _mine(repo, out, tmp_path)
    assert task["metadata"]["commit"] == good
    assert task["FAIL_TO_PASS"] == ["tests/test_core.py::test_add"]
    assert "tests/test_core.py::test_version_is_the_installed_one" in task["PASS_TO_PASS"]

    manifest = (out / "pack.yaml").read_text()
    assert "task_setup:" in manifest
    (out / "pack.yaml").write_text(re.sub(r"\n  task_setup: \[[^\n]*\]", "", manifest))  # the tip's install only
    task = _mine(repo, out, tmp_path)
    assert task["FAIL_TO_PASS"] == ["tests/test_core.py::test_add", "tests/test_core.py::test_version_is_the_installed_one"]
