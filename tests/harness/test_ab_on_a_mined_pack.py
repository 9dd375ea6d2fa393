"""Job 1 as a user runs it: mine a repository's history into a pack, run two model+harness
configurations on it over two seeds through the scripted model server (real litellm, real HTTP,
real Docker), and `compare` them: the paired difference and its interval, as scipy computes them
from the per-task rates.

The repository has eight commits after its root, each fixing one function and adding its test.
Configuration A (`minimal`) is scripted to fix seven of the tasks, B (`mini-swe-agent`) three of them,
so the per-task differences are known: +1 on four tasks, 0 on four.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from harness_scripts import MINI, MINIMAL, PRICES, TrialScript, give_up, git_apply, solve
from scipy import stats
from support import run_cli

from evalharness.models import ScriptedModelServer
from evalharness.packs import load_pack

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.long]  # default tier: docs/testing.md

FUNCTIONS = ["double", "halve", "square", "negate", "increment", "decrement", "twice_plus_one", "cube"]
BUGGY = {"double": "x * 3", "halve": "x / 3", "square": "x * 2", "negate": "x", "increment": "x + 2",
         "decrement": "x - 2", "twice_plus_one": "2 * x", "cube": "x * x"}
FIXED = {"double": "x * 2", "halve": "x / 2", "square": "x * x", "negate": "-x", "increment": "x + 1",
         "decrement": "x - 1", "twice_plus_one": "2 * x + 1", "cube": "x * x * x"}
CASES = {"double": (4, 8), "halve": (8, 4), "square": (3, 9), "negate": (5, -5), "increment": (1, 2),
         "decrement": (1, 0), "twice_plus_one": (3, 7), "cube": (2, 8)}
A_SOLVES, B_SOLVES = set(FUNCTIONS[:7]), set(FUNCTIONS[:3])
SEEDS = 2


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.org", "GIT_COMMITTER_NAME": "dev",
           "GIT_COMMITTER_EMAIL": "dev@example.org", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def library(fixed: set[str]) -> str:
    return "".join(f"def {f}(x):\n    return {FIXED[f] if f in fixed else BUGGY[f]}\n\n\n" for f in FUNCTIONS)


def suite(fixed: set[str]) -> str:
    names = ", ".join(FUNCTIONS)
    body = "".join(f"def test_{f}():\n    assert {f}({CASES[f][0]}) == {CASES[f][1]}\n\n\n" for f in FUNCTIONS
                   if f in fixed)
    return f"from arith import {names}\n\n\ndef test_imports():\n    assert callable(double)\n\n\n{body}"


@pytest.fixture(scope="module")
def mined(tmp_path_factory, base_image):
    home = tmp_path_factory.mktemp("ab")
    repo = home / "arith"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    fixed: set[str] = set()
    (repo / "arith.py").write_text(library(fixed))
    (repo / "test_arith.py").write_text(suite(fixed))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Start arith")
    for f in FUNCTIONS:
        fixed.add(f)
        (repo / "arith.py").write_text(library(fixed))
        (repo / "test_arith.py").write_text(suite(fixed))
        git(repo, "add", "-A")
        x, want = CASES[f]
        got = eval(BUGGY[f], {"x": x})  # noqa: S307 - our own literal expressions
        git(repo, "commit", "-qm", f"{f}({x}) returns {got:g}, expected {want}\n\nCalling {f} gives the wrong value.")
    out = home / "pack"
    # --no-coverage: this test is about the A/B over mined tasks; the coverage gate would reject the first fix
    # (no PASS_TO_PASS test runs arith.py yet: no_p2p_guard), as tests/test_coverage_gate_docker.py shows
    done = run_cli("packs", "mine", "--repo", str(repo), "--out", str(out), "--pip", "pytest==8.3.5",
                   "--discover-reruns", "1", "--reruns", "1", "-j", "2", "--no-coverage", cwd=home, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return home, out


def test_mining_then_an_ab_over_seeds_ends_in_a_paired_interval(mined):
    home, out = mined
    pack = load_pack(out)
    by_function = {}
    for task in pack.tasks:
        function = next(f for f in FUNCTIONS if task.problem_statement.startswith(f + "("))
        by_function[function] = task
    assert sorted(by_function) == sorted(FUNCTIONS), [t.problem_statement for t in pack.tasks]
    plans = {}
    for f, task in by_function.items():
        plans[(MINIMAL, task.instance_id)] = solve(git_apply, task.patch) if f in A_SOLVES else give_up()
        plans[(MINI, task.instance_id)] = solve(git_apply, task.patch) if f in B_SOLVES else give_up()
    with ScriptedModelServer(TrialScript(pack.tasks, plans)) as server:
        run = run_cli("run", "--pack", str(out), "--harness", MINIMAL, "--harness", MINI,
                      "--model", "openai/scripted-gpt", "--api-base", f"{server.url}/v1",
                      "--input-cost-per-token", str(PRICES["input_cost_per_token"]),
                      "--output-cost-per-token", str(PRICES["output_cost_per_token"]),
                      "--seeds", str(SEEDS), "--workers", "2", "--format", "json", "--runs-dir",
                      str(home / "runs"), cwd=home, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads(run.stdout[run.stdout.index("{"):run.stdout.rindex("}") + 1])
    rates = {s["config"]: s["resolve_rate"] for s in summary["scores"]}
    assert rates == {f"{MINIMAL}/openai/scripted-gpt": pytest.approx(7 / 8),
                     f"{MINI}/openai/scripted-gpt": pytest.approx(3 / 8)}

    compared = run_cli("compare", summary["runs"][0]["run_id"], "--a", f"{MINIMAL}/openai/scripted-gpt", "--b",
                       f"{MINI}/openai/scripted-gpt", "--format", "md", "--runs-dir", str(home / "runs"),
                       cwd=home).stdout
    a = [1.0 if f in A_SOLVES else 0.0 for f in FUNCTIONS]
    b = [1.0 if f in B_SOLVES else 0.0 for f in FUNCTIONS]
    low, high = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert "| shared tasks | 8 |" in compared, compared
    assert "| difference A - B | +50.0% |" in compared, compared
    assert f"| 95% interval (paired t) | [{low:+.1%}, {high:+.1%}] |" in compared, compared
    assert "cost per resolved A | $" in compared
