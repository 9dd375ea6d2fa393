"""`packs mine` through the real CLI and real git: progress lines go to standard error, standard output holds the
summary and the report's path only (issue 27: the per-commit lines were on standard output). The commits are ones
the pure rules decide (no parent, no test touched), so no container is started; the engine is only asked for."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support import run_cli

pytestmark = pytest.mark.docker


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


def test_mining_progress_is_on_stderr_and_the_summary_on_stdout(tmp_path):
    repo = tmp_path / "calc"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "lib.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_lib.py").write_text("from lib import add\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Start")
    (repo / "lib.py").write_text("def add(a, b):\n    return a + b\n")
    _git(repo, "commit", "-qam", "add() gives the difference of its arguments")
    args = ("packs", "mine", "--repo", str(repo), "--out", str(tmp_path / "mined"))
    first = run_cli(*args, cwd=tmp_path, check=False)
    assert first.returncode == 1, first.stdout + first.stderr  # no task kept: both commits are rejected
    done = run_cli(*args, cwd=tmp_path, check=False)  # resumed: the kept commits are a progress line
    for out in (first, done):
        assert "first-parent commit(s) in range" in out.stderr and "in range" not in out.stdout
        assert "report:" in out.stdout and "1 no_tests_touched" in out.stdout  # the summary stays on stdout
    assert "2 commit(s) already examined" in done.stderr and "already examined" not in done.stdout
