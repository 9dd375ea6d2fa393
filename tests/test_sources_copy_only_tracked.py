"""A task image holds what the task may see: the committed files of a path source, never its
ignored or untracked files; a local git repository works as a git source.

Pins: a `path` source copied the whole folder, so `.pytest_cache` listed the hidden test names,
a `.pyc` compiled from a later commit held the fix and a `.env` with a token was readable in
the sandbox; a `git` source with a local path or file:// URL failed with a raw traceback while
the run exited 0 with every trial an infrastructure error.
"""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import git
import pytest
from support import TINYPACK, run_cli

from evalharness.errors import TaskError
from evalharness.packs import load_pack
from evalharness.sandbox.sources import DENY_LIST, denied, git_bundle, local_git_repository, path_source_tar

SECRET = "EH_TOKEN=sk-do-not-leak-123"


def _plant(src: Path) -> None:
    """Files no task may see: a secret, a cache naming tests, compiled future code, an untracked note."""
    (src / ".env").write_text(SECRET + "\n")
    (src / ".pytest_cache" / "v" / "cache").mkdir(parents=True)
    (src / ".pytest_cache" / "v" / "cache" / "nodeids").write_text('["tests/test_hidden.py::test_secret"]')
    (src / "calc" / "__pycache__").mkdir()
    (src / "calc" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\x00future fix")
    (src / "calc" / "fixed.pyc").write_bytes(b"\x00future fix")
    (src / "NOTES-untracked.txt").write_text("the fix is in clamp\n")


def _git_pack(tmp_path: Path) -> Path:
    """The tiny pack as a git repository: sources committed, junk planted, a tracked file edited afterwards."""
    root = tmp_path / "packrepo"
    shutil.copytree(TINYPACK, root)
    repo = git.Repo.init(root)
    (root / ".gitignore").write_text(".env\n.pytest_cache/\n__pycache__/\n")
    repo.index.add([".gitignore", "pack.yaml", "tasks.jsonl", "src/calc/__init__.py", "src/tests/test_calc.py"])
    repo.index.commit("pack")
    _plant(root / "src")
    with (root / "src" / "calc" / "__init__.py").open("a") as f:
        f.write("# UNCOMMITTED EDIT\n")
    return root


def _names(tar_bytes: bytes) -> set[str]:
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        return {m.name.rstrip("/") for m in tar.getmembers()}


def test_a_path_source_in_git_takes_the_committed_files_only(tmp_path):
    root = _git_pack(tmp_path)
    data, notes = path_source_tar(root / "src")
    assert _names(data) == {"calc", "calc/__init__.py", "tests", "tests/test_calc.py"}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert b"UNCOMMITTED" not in tar.extractfile("calc/__init__.py").read()
    assert any("uncommitted edits" in n for n in notes)
    assert path_source_tar(root / "src")[0] == data  # same commit, same bytes, same image tag


def test_a_folder_outside_git_is_copied_without_the_deny_list(tmp_path, tinypack_copy):
    _plant(tinypack_copy / "src")
    (tinypack_copy / "src" / ".venv" / "bin").mkdir(parents=True)
    data, notes = path_source_tar(tinypack_copy / "src")
    names = _names(data)
    assert not any(denied(Path(n)) for n in names) and ".venv" in DENY_LIST
    assert {"calc/__init__.py", "tests/test_calc.py", "NOTES-untracked.txt"} <= names  # no git: nothing tells
    assert not {".env", ".pytest_cache", "calc/__pycache__", "calc/fixed.pyc", ".venv"} & names
    assert notes and "not in a git work tree" in notes[0]


def test_a_path_source_nothing_committed_under_is_a_task_error(tmp_path):
    root = _git_pack(tmp_path)
    (root / "other").mkdir()
    (root / "other" / "a.py").write_text("x = 1\n")
    with pytest.raises(TaskError, match="nothing under it is committed"):
        path_source_tar(root / "other")
    with pytest.raises(TaskError, match="is not a folder"):
        path_source_tar(root / "missing")


def test_local_git_urls_are_told_from_remote_ones(tmp_path):
    assert local_git_repository("https://github.com/o/r.git", tmp_path) is None
    assert local_git_repository("git@github.com:o/r.git", tmp_path) is None
    assert local_git_repository("file:///srv/r%20x", tmp_path) == Path("/srv/r x")
    assert local_git_repository("../r", tmp_path / "pack") == (tmp_path / "r").resolve()
    assert local_git_repository("/srv/r", tmp_path) == Path("/srv/r")


def test_git_bundle_refuses_bad_refs_and_missing_repositories_with_one_line(tmp_path):
    root = _git_pack(tmp_path)
    data, commit = git_bundle(root, "HEAD", "./packrepo")
    assert data.startswith(b"# v2 git bundle") and len(commit) == 40
    with pytest.raises(TaskError, match="ref 'v9' is not a commit of"):
        git_bundle(root, "v9", "./packrepo")
    with pytest.raises(TaskError, match="no such repository"):
        git_bundle(tmp_path / "nope", "HEAD", "./nope")


@pytest.mark.docker
def test_nothing_ignored_untracked_or_uncommitted_is_visible_in_the_sandbox(tmp_path, sandbox_factory):
    pack = load_pack(_git_pack(tmp_path))
    sandbox = sandbox_factory(pack, pack.tasks[0])
    listing = sandbox.exec("find / \\( -path /proc -o -path /sys -o -path /usr -o -path /opt/venv \\) -prune -o "
                           "\\( -name '.env' -o -name '.pytest_cache' -o -name '*.pyc' -o -name 'NOTES-untracked.txt' "
                           "-o -name 'nodeids' \\) -print 2>/dev/null; echo END", user="root").output
    assert listing.strip() == "END", listing
    assert sandbox.exec("grep -rl 'sk-do-not-leak\\|UNCOMMITTED\\|test_secret' /testbed /tmp /home /opt/evalharness "
                        "2>/dev/null; echo END",
                        user="root").output.strip() == "END"
    assert "def clamp" in sandbox.exec("cat calc/__init__.py").output


def _git_source_pack(tmp_path: Path, url: str, ref: str = "HEAD") -> Path:
    """The tiny pack, its source a separate git repository named by ``url``."""
    source = tmp_path / "upstream"
    shutil.copytree(TINYPACK / "src", source)
    repo = git.Repo.init(source)
    repo.index.add(["calc/__init__.py", "tests/test_calc.py"])
    repo.index.commit("upstream")
    pack = tmp_path / "pack"
    shutil.copytree(TINYPACK, pack, ignore=shutil.ignore_patterns("src"))
    manifest = pack / "pack.yaml"
    source_line = f"  source: {{kind: git, url: '{url.format(upstream=source)}', ref: '{ref}'}}"
    manifest.write_text(manifest.read_text().replace("  source: {kind: path, path: src}", source_line))
    return pack


@pytest.mark.docker
@pytest.mark.parametrize("url", ["../upstream", "file://{upstream}"])
def test_a_local_git_source_builds_and_runs(tmp_path, base_image, url):
    pack = _git_source_pack(tmp_path, url)
    built = run_cli("sandbox", "build", "-p", str(pack), cwd=tmp_path)
    assert "tiny-clamp: evalharness/task.tinypack:" in built.stdout
    done = run_cli("run", "-p", str(pack), "-H", "null", "--format", "json", cwd=tmp_path)
    assert '"no_patch": 2' in done.stdout and "infra_error" not in done.stdout


@pytest.mark.docker
def test_a_bad_ref_of_a_local_git_source_is_one_line_and_exit_1(tmp_path, base_image):
    pack = _git_source_pack(tmp_path, "../upstream", ref="v9")
    done = run_cli("sandbox", "build", "-p", str(pack), cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: task tiny-clamp, tiny-mean-empty: git source ../upstream: ref 'v9' is "
                                  "not a commit of"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    run = run_cli("run", "-p", str(pack), "-H", "null", "--format", "json", cwd=tmp_path, check=False)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "task error: tinypack/tiny-clamp: git source ../upstream: ref 'v9'" in run.stderr
