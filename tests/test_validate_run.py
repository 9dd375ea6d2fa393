"""`packs validate --run` through the real CLI and real Docker, on a recipe pack built from a local git repository.

The repository has two commits: the base (with the bug) and a later environment commit (as SWE-bench's
environment_setup_commit is later than most base commits). Four tasks: one sound, one whose gold
patch does not fix it, one whose FAIL_TO_PASS test passes without a fix, one whose version has no
recipe. Each gets its verdict and reason; a run then skips the unsound ones, naming them, unless
--include-invalid.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support import run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LIB_BUG = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST = ("from lib import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul():\n    assert mul(2, 3) == 6\n")
FIX = """diff --git a/lib.py b/lib.py
--- a/lib.py
+++ b/lib.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
"""
NOT_A_FIX = FIX.replace("+    return a + b", "+    return b - a")
NEW_TEST = """diff --git a/test_new.py b/test_new.py
new file mode 100644
--- /dev/null
+++ b/test_new.py
@@ -0,0 +1,5 @@
+from lib import add
+
+
+def test_add_zero():
+    assert add(0, 0) == 0
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}).stdout.strip()


@pytest.fixture(scope="module")
def recipe_pack(tmp_path_factory, base_image) -> Path:
    root = tmp_path_factory.mktemp("recipepack")
    repo = root / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "lib.py").write_text(LIB_BUG)
    (repo / "test_lib.py").write_text(TEST)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "lib.py").write_text(LIB_BUG.replace("a - b", "a + b"))  # the environment commit is later: fixed
    (repo / "FUTURE.txt").write_text("from a later commit\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "later")
    env_commit = git(repo, "rev-parse", "HEAD")
    pack = root / "pack"
    (pack / "recipes").mkdir(parents=True)
    (pack / "recipes" / "demo.yaml").write_text(
        "repo: demo/lib\n"
        f"url: {repo}\n"
        "source: written for this test\n"
        "defaults:\n"
        "  python: '3.11'\n"
        "  pip: [pytest==8.3.5]\n"
        "  test_command: python -m pytest -rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit_xml}"
        " {test_files}\n"
        "  log_parser: junit\n"
        "versions: {'1.0': {}}\n"
        "unsupported: {'0.1': 'needs a Python no base ships'}\n")
    common = {"repo": "demo/lib", "base_commit": base, "environment_setup_commit": env_commit, "version": "1.0",
              "problem_statement": "add subtracts"}
    tasks = [
        {**common, "instance_id": "sound", "patch": FIX, "FAIL_TO_PASS": ["test_lib.py::test_add"],
         "PASS_TO_PASS": ["test_lib.py::test_mul"]},
        {**common, "instance_id": "gold-fails", "patch": NOT_A_FIX, "FAIL_TO_PASS": ["test_lib.py::test_add"],
         "PASS_TO_PASS": ["test_lib.py::test_mul"]},
        {**common, "instance_id": "empty-passes", "patch": FIX, "test_patch": NEW_TEST,
         "FAIL_TO_PASS": ["test_new.py::test_add_zero"], "PASS_TO_PASS": []},
        {**common, "instance_id": "no-recipe", "version": "0.1", "patch": FIX,
         "FAIL_TO_PASS": ["test_lib.py::test_add"]},
    ]
    (pack / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (pack / "pack.yaml").write_text("name: recipepack\nversion: 1\nrecipes: recipes\n"
                                    "timeouts: {agent_s: 120, tests_s: 60, build_s: 900, exec_s: 30}\n")
    return pack


def test_each_task_gets_its_verdict_and_runs_skip_the_unsound(recipe_pack, tmp_path):
    done = run_cli("packs", "validate", str(recipe_pack), "--run", "--reruns", "2", cwd=tmp_path, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    reports = {p.stem: json.loads(p.read_text()) for p in (recipe_pack / "validation").glob("*.json")}
    assert {k: r["verdict"] for k, r in reports.items()} == {
        "sound": "ok", "gold-fails": "gold_fails", "empty-passes": "empty_passes", "no-recipe": "no_recipe"}
    assert "test_lib.py::test_add" in reports["gold-fails"]["reason"]
    assert reports["gold-fails"]["tests"]["test_lib.py::test_add"]["gold_pass_rate"] == 0.0
    assert "test_new.py::test_add_zero" in reports["empty-passes"]["reason"]
    assert reports["no-recipe"]["reason"] == "needs a Python no base ships"
    assert reports["sound"]["tests"]["test_lib.py::test_add"] == {
        "list": "FAIL_TO_PASS", "base": "failed", "gold_pass_rate": 1.0, "gold": ["passed", "passed"]}
    assert "recipepack: 1/4 ok" in done.stdout
    # progress on stderr, a line per graded run (a slow task is never minutes of silence); stdout: the summary
    assert "  sound: gold patch, run 2/2: resolved (" in done.stderr and "[4/4]" in done.stderr
    assert "gold patch, run" not in done.stdout and "[4/4]" not in done.stdout

    # a second validation keeps the current reports (resumable) and says so
    again = run_cli("packs", "validate", str(recipe_pack), "--run", cwd=tmp_path, check=False)
    assert "4 task(s) already validated" in again.stderr and again.returncode == 1

    # the task image holds the base commit, not the later environment commit
    from evalharness.packs import load_pack
    from evalharness.sandbox.engine import docker_client

    from evalharness.sandbox.docker import DockerSandbox

    image = reports["sound"]["image"]
    sandbox = DockerSandbox(docker_client(), image, run_id="test-validate-run", trial="sound").start()
    try:  # the tree a trial sees, rebuilt from the image's packed base commit
        shown = sandbox.exec("cat lib.py; ls; git log --all --oneline | wc -l").output
    finally:
        sandbox.close()
    assert "a - b" in shown and "FUTURE.txt" not in shown and shown.strip().endswith("1")
    emptied = docker_client().containers.run(image, ["ls", "-A", "/testbed"], remove=True, network_mode="none")
    assert emptied == b""  # the environment's later checkout is not readable in the image either
    assert load_pack(recipe_pack).spec_for(load_pack(recipe_pack).task("sound")).environment.python == "3.11"

    # a run skips the unsound tasks as task errors, naming each with its reason
    run = run_cli("run", "-p", str(recipe_pack), "-H", "oracle", "--format", "json", "--runs-dir",
                  str(tmp_path / "runs"), cwd=tmp_path, check=False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "validation: gold_fails" in run.stderr and "validation: empty_passes" in run.stderr
    assert "needs a Python no base ships" in run.stderr
    report = json.loads(run.stdout[run.stdout.index("{"):run.stdout.rindex("}") + 1])
    assert report["outcomes"] == {"oracle/none": {"resolved": 1, "task_error": 3}}
    assert report["scores"][0]["n_tasks"] == 1 and report["scores"][0]["resolve_rate"] == 1.0
    skipped = {e["task_id"]: e["reason"] for e in report["task_errors"]}
    assert sorted(skipped) == ["empty-passes", "gold-fails", "no-recipe"]
    assert skipped["no-recipe"] == "needs a Python no base ships"
    forced = run_cli("run", "-p", str(recipe_pack), "-H", "oracle", "--task", "empty-passes", "--include-invalid",
                     "--format", "json", "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path, check=False)
    assert forced.returncode == 0, forced.stdout + forced.stderr
