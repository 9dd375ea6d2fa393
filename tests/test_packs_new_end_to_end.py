"""`packs new` + `packs add-task` on a private repository built here: the pack validates and runs.

Pins: a user mining tasks from a private repository by hand wrote a 40-line script, copied an
untracked `.env` into the image, and had no way to declare a task by base commit, statement and
hidden tests. Here a repository with an uncommitted secret and an untracked file becomes a pack with
two hand-written tasks (one fix as a commit, one as patch files), whose lists are discovered in
Docker; `packs validate --run` says ok, oracle resolves both, null neither, and each task image holds
exactly the files tracked at the base commit.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support import run_cli

RANGES = '''def clamp(value, low, high):
    """Limit value to the closed interval [low, high]."""
    if value < low:
        return low
    if value >= high:
        return high - 1
    return value


def span(values):
    """The distance between the smallest and the largest value."""
    return max(values) - min(values)
'''
TESTS = '''from calc import clamp, span


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_span():
    assert span([3, 9, 4]) == 6
'''
NEW_TEST = '''

def test_clamp_keeps_the_upper_bound():
    assert clamp(10, 0, 10) == 10
    assert clamp(12, 0, 10) == 10
'''
PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "0.1.0"
requires-python = ">=3.9"

[project.optional-dependencies]
test = ["pytest>=7"]

[tool.pytest.ini_options]
testpaths = ["tests"]
'''
SPAN_FIX = '''diff --git a/src/calc/ranges.py b/src/calc/ranges.py
--- a/src/calc/ranges.py
+++ b/src/calc/ranges.py
@@ -10,4 +10,6 @@ def clamp(value, low, high):
 
 def span(values):
     """The distance between the smallest and the largest value."""
+    if not values:
+        return 0
     return max(values) - min(values)
'''
SPAN_TEST = '''diff --git a/tests/test_span_empty.py b/tests/test_span_empty.py
new file mode 100644
--- /dev/null
+++ b/tests/test_span_empty.py
@@ -0,0 +1,5 @@
+from calc import span
+
+
+def test_span_of_nothing_is_zero():
+    assert span([]) == 0
'''
CLAMP_STATEMENT = """clamp() never returns the upper bound

`calc.clamp(10, 0, 10)` gives 9, and `calc.clamp(12, 0, 10)` gives 9 too. The docstring says the
interval is closed, so both should give 10.
"""
SPAN_STATEMENT = "span([]) raises ValueError\n\nThe span of no values should be 0, as for a single value.\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def private_repo(tmp_path) -> tuple[Path, str, str]:
    """(repository, base commit, fix commit): a src/ layout project with a bug, then its fix and test."""
    repo = tmp_path / "calc"
    (repo / "src" / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "src" / "calc" / "__init__.py").write_text("from calc.ranges import clamp, span\n")
    (repo / "src" / "calc" / "ranges.py").write_text(RANGES)
    (repo / "tests" / "test_ranges.py").write_text(TESTS)
    (repo / ".gitignore").write_text(".env\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "src" / "calc" / "ranges.py").write_text(RANGES.replace("value >= high:\n        return high - 1",
                                                                    "value > high:\n        return high"))
    (repo / "tests" / "test_ranges.py").write_text(TESTS + NEW_TEST)
    git(repo, "commit", "-qam", "clamp: the upper bound is inclusive")
    fix = git(repo, "rev-parse", "HEAD")
    (repo / ".env").write_text("API_TOKEN=do-not-ship\n")            # ignored: never in an image
    (repo / "NOTES.txt").write_text("untracked notes\n")              # untracked: never in an image
    (repo / "src" / "calc" / "ranges.py").write_text(RANGES + "# uncommitted edit\n")
    return repo, base, fix


def test_a_leaky_statement_is_refused_and_explicit_lists_need_no_docker(tmp_path, private_repo):
    repo, base, fix = private_repo
    run_cli("packs", "new", "--repo", str(repo), "--out", "pack", cwd=tmp_path)
    (tmp_path / "leaky.md").write_text("In src/calc/ranges.py line 5, use `value > high` and `return high`.\n")
    refused = run_cli("packs", "add-task", "pack", "--base", base, "--statement", "leaky.md", "--tests",
                      "tests/test_ranges.py", "--gold", fix, cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "the statement gives the fix away" in refused.stderr
    assert "leak: file_path: 'src/calc/ranges.py'" in refused.stderr and "leak: location: 'line 5'" in refused.stderr
    assert (tmp_path / "pack" / "tasks.jsonl").read_text() == ""
    (tmp_path / "clamp.md").write_text(CLAMP_STATEMENT)
    added = run_cli("packs", "add-task", "pack", "--base", base, "--statement", "clamp.md", "--tests",
                    "tests/test_ranges.py", "--gold", fix, "--id", "clamp-upper",
                    "--fail-to-pass", "tests/test_ranges.py::test_clamp_keeps_the_upper_bound", cwd=tmp_path)
    assert "added clamp-upper (1 FAIL_TO_PASS, 0 PASS_TO_PASS" in added.stdout
    task = json.loads((tmp_path / "pack" / "tasks.jsonl").read_text())
    assert task["base_commit"] == base and task["created_at"] == git(repo, "show", "-s", "--format=%cI", fix)
    assert "tests/test_ranges.py" not in task["patch"] and "src/calc/ranges.py" in task["patch"]
    assert "test_clamp_keeps_the_upper_bound" in task["test_patch"]
    assert "uncommitted edit" not in task["patch"]
    assert run_cli("packs", "validate", "pack", cwd=tmp_path).stdout.startswith("pack: ok (pack v1, 1 tasks)")
    again = run_cli("packs", "add-task", "pack", "--base", base, "--statement", "clamp.md", "--tests",
                    "tests/test_ranges.py", "--gold", fix, "--id", "clamp-upper", "--fail-to-pass", "x", cwd=tmp_path,
                    check=False)
    assert again.returncode == 1 and "already in the pack" in again.stderr


@pytest.mark.docker
@pytest.mark.slow
def test_a_new_pack_with_hand_written_tasks_validates_and_runs(tmp_path, private_repo, base_image, docker_client):
    repo, base, fix = private_repo
    made = run_cli("packs", "new", "--repo", str(repo), "--out", "pack", cwd=tmp_path)
    assert "src/ layout" in made.stdout and "python -m pip install -e '.[test]'" in made.stdout
    (tmp_path / "clamp.md").write_text(CLAMP_STATEMENT)
    (tmp_path / "span.md").write_text(SPAN_STATEMENT)
    (tmp_path / "span.diff").write_text(SPAN_FIX)
    (tmp_path / "span-test.diff").write_text(SPAN_TEST)
    run_cli("packs", "add-task", "pack", "--base", base, "--statement", "clamp.md", "--tests",
            "tests/test_ranges.py", "--gold", fix, "--id", "clamp-upper", cwd=tmp_path)
    run_cli("packs", "add-task", "pack", "--base", base, "--statement", "span.md", "--test-patch", "span-test.diff",
            "--gold", "span.diff", "--id", "span-empty", cwd=tmp_path)
    tasks = {t["instance_id"]: t for t in map(json.loads, (tmp_path / "pack" / "tasks.jsonl").read_text().splitlines())}
    assert tasks["clamp-upper"]["FAIL_TO_PASS"] == ["tests/test_ranges.py::test_clamp_keeps_the_upper_bound"]
    assert tasks["clamp-upper"]["PASS_TO_PASS"] == ["tests/test_ranges.py::test_clamp_inside",
                                                    "tests/test_ranges.py::test_span"]
    assert tasks["span-empty"]["FAIL_TO_PASS"] == ["tests/test_span_empty.py::test_span_of_nothing_is_zero"]

    validated = run_cli("packs", "validate", "pack", "--run", "--reruns", "2", cwd=tmp_path)
    assert "pack: 2/2 ok" in validated.stdout

    image = json.loads((tmp_path / "pack" / "validation" / "clamp-upper.json").read_text())["image"]
    from evalharness.sandbox.docker import DockerSandbox

    with DockerSandbox(docker_client, image, run_id="test-packs-new", trial="clamp-upper").start() as box:
        shown = box.exec("git ls-files -co --exclude-standard && git ls-files -o -i --exclude-standard "
                         "&& git log --all --format=%s")  # the tree a trial sees, rebuilt from the image
    assert shown.exit_code == 0, shown.output
    listing = shown.output.split()
    tracked = git(repo, "ls-tree", "-r", "--name-only", base).split()
    assert sorted(listing[:-4]) == sorted(tracked)                 # nothing untracked, ignored or built
    assert ".env" not in listing and "NOTES.txt" not in listing and not any("egg-info" in p for p in listing)
    assert listing[-4:] == ["task", "base", "(upstream", f"{base})"]  # one commit, no history

    ran = run_cli("run", "--pack", "pack", "--harness", "oracle", "--harness", "null", "--format", "json",
                  cwd=tmp_path)
    report = json.loads(ran.stdout[: ran.stdout.rindex("}") + 1])
    scores = {s["config"]: s["resolve_rate"] for s in report["scores"]}
    assert scores == {"oracle/none": 1.0, "null/none": 0.0} and report["n_infra"] == 0


@pytest.mark.docker
@pytest.mark.slow
def test_a_src_layout_with_nothing_to_install_runs_with_pythonpath(tmp_path, base_image):
    """No packaging metadata at all: the pack installs nothing and tells pytest where the package is."""
    repo = tmp_path / "bare"
    (repo / "src" / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "calc" / "__init__.py").write_text("from calc.ranges import clamp, span\n")
    (repo / "src" / "calc" / "ranges.py").write_text(RANGES)
    (repo / "tests" / "test_ranges.py").write_text(TESTS)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    base = git(repo, "rev-parse", "HEAD")
    made = run_cli("packs", "new", "--repo", str(repo), "--out", "pack", cwd=tmp_path)
    assert "install: nothing" in made.stdout and "-o pythonpath=src" in made.stdout
    (tmp_path / "span.md").write_text(SPAN_STATEMENT)
    (tmp_path / "span.diff").write_text(SPAN_FIX)
    (tmp_path / "span-test.diff").write_text(SPAN_TEST)
    run_cli("packs", "add-task", "pack", "--base", base, "--statement", "span.md", "--test-patch", "span-test.diff",
            "--gold", "span.diff", "--fail-to-pass", "tests/test_span_empty.py::test_span_of_nothing_is_zero",
            cwd=tmp_path)
    validated = run_cli("packs", "validate", "pack", "--run", "--reruns", "1", cwd=tmp_path)
    assert "pack: 1/1 ok" in validated.stdout
