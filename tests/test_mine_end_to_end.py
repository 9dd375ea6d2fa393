"""`packs mine` through the real CLI, real git and real Docker, on a repository built here.

Five first-parent commits: the root (no parent), one good candidate (fixes `add` and adds its test), one
touching no test, one whose change fixes nothing (its new test passes at base), one whose new test is
flaky. The report gives each its verdict; the mined pack holds the one good task, and a run of it gives
oracle 100% and null 0%.

The flaky test passes for exactly one of 64 parameters per run, chosen at random when the run starts: the
same parameter passing on all three gold runs of discovery (a false FAIL_TO_PASS) has probability 1/4096.
(Failing tests are what cost time in pytest, so the parameters are few and the reruns three.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support import run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LIB = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST = "from lib import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
COIN = ("import os\n\nimport pytest\n\nCOIN = os.urandom(1)[0] % 64\n\n\n"
        "@pytest.mark.parametrize('side', range(64))\ndef test_coin(side):\n    assert side == COIN\n")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}).stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("minedrepo") / "calc"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = {"root": commit(repo, "Start calc", {"lib.py": LIB, "test_lib.py": TEST})}
    fixed = LIB.replace("a - b", "a + b")
    shas["good"] = commit(repo, "add() gives the difference of its arguments\n\nadd(2, 3) is -1; I expected 5.",
                          {"lib.py": fixed, "test_lib.py": TEST + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"})
    shas["no_tests"] = commit(repo, "Describe mul", {"lib.py": fixed.replace("def mul(a, b):\n",
                                                                             "def mul(a, b):\n    \"\"\"a times b\"\"\"\n")})
    with_test = TEST + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    shas["no_fix"] = commit(repo, "mul(0, x) should be 0\n\nMultiplying zero by any number must give zero.", {
        "lib.py": (repo / "lib.py").read_text().replace("return a * b", "return b * a"),
        "test_lib.py": with_test + "\n\ndef test_mul_zero():\n    assert mul(0, 7) == 0\n"})
    toss = "Toss a coin\n\nEvery toss of the coin should land on one of its sides, whichever side comes up."
    shas["flaky"] = commit(repo, toss, {"lib.py": (repo / "lib.py").read_text() + "\n\nSIDES = 64\n",
                                        "test_coin.py": COIN})
    return repo, shas


def test_mining_gives_each_commit_its_verdict_and_a_pack_that_runs(history, tmp_path, base_image):
    repo, shas = history
    out = tmp_path / "mined"
    args = ("packs", "mine", "--repo", str(repo), "--out", str(out), "--pip", "pytest==8.3.5",
            "--discover-reruns", "3", "--reruns", "2", "-j", "2")
    done = run_cli(*args, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "mining-report.json").read_text())
    verdicts = {c["commit"]: c["verdict"] for c in report["candidates"]}
    assert verdicts == {shas["root"]: "no_parent", shas["good"]: "ok", shas["no_tests"]: "no_tests_touched",
                        shas["no_fix"]: "nothing_fails_at_base", shas["flaky"]: "flaky"}
    assert [c["commit"] for c in report["candidates"]] == [shas[k] for k in ("flaky", "no_fix", "no_tests", "good",
                                                                              "root")]
    flaky = next(c for c in report["candidates"] if c["verdict"] == "flaky")
    assert "test_coin.py::test_coin[" in flaky["reason"] and "%" in flaky["reason"]
    assert len(flaky["discovery"]["flaky"]) >= 2
    assert report["totals"]["candidates"] == 3 and report["totals"]["validated"] == 1
    assert "1 task(s) validated of 3 candidate(s)" in done.stdout

    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 1
    task = tasks[0]
    assert task["base_commit"] == shas["root"] and task["FAIL_TO_PASS"] == ["test_lib.py::test_add"]
    assert task["PASS_TO_PASS"] == ["test_lib.py::test_mul"]
    assert task["problem_statement"] == "add() gives the difference of its arguments\n\nadd(2, 3) is -1; I expected 5."
    assert task["patch"].startswith("diff --git a/lib.py b/lib.py") and "a + b" in task["patch"]
    assert "test_lib.py" not in task["patch"] and "diff --git a/lib.py" not in task["test_patch"]
    assert task["test_patch"].startswith("diff --git a/test_lib.py b/test_lib.py")
    assert task["created_at"].startswith(git(repo, "show", "-s", "--format=%cI", shas["good"])[:19])
    assert json.loads((out / "validation" / f"{task['instance_id']}.json").read_text())["verdict"] == "ok"
    from evalharness.packs import load_pack
    from evalharness.validation import load_report

    pack = load_pack(out)  # the report is current for the task as written (runs read it to skip invalid tasks)
    assert load_report(pack, pack.task(task["instance_id"]))["verdict"] == "ok"

    # resumable: a second run examines nothing again and writes the same report
    again = run_cli(*args, cwd=tmp_path, check=False)
    assert again.returncode == 0 and "5 commit(s) already examined" in again.stderr
    assert json.loads((out / "mining-report.json").read_text())["candidates"] == report["candidates"]

    run = run_cli("run", "-p", str(out), "-H", "oracle", "-H", "null", "--format", "json", "--runs-dir",
                  str(tmp_path / "runs"), cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads(run.stdout[run.stdout.index("{"):run.stdout.rindex("}") + 1])
    rates = {s["config"]: s["resolve_rate"] for s in summary["scores"]}
    assert rates == {"oracle/none": 1.0, "null/none": 0.0}
