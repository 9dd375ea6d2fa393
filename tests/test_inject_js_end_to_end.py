"""`packs inject` on JavaScript through the real CLI and Docker: Stryker's instrumenter, installed in the pack's
environment image at build, lists the mutants inside the base task's sandbox; kept tasks validate, and
`run` resolves them with oracle and not with null.

Pins: a Node library mutated by a hand-written mutator or on the host, an untested function's mutant kept
(null would resolve it), a gold patch that is not the defect's exact reverse (oracle fails), a test file
mutated, a statement naming the mutated file.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import SHARED, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PACKAGE = {"name": "clamplib", "version": "1.0.0", "main": "index.js", "scripts": {"test": "tap"},
           "devDependencies": {"tap": "^16.3.0"}}
INDEX = """'use strict'
const clamp = (value, low, high) => {
  if (value < low) {
    return low
  }
  if (value > high) {
    return high
  }
  return value
}

function describe (value) {
  // never tested: its mutants survive
  return value > 0 ? 'positive' : 'not positive'
}

module.exports = { clamp, describe }
"""
TESTS = """'use strict'
const t = require('tap')
const { clamp } = require('../index.js')

t.test('clamps below the range', t => {
  t.equal(clamp(-5, 0, 10), 0)
  t.end()
})

t.test('clamps above the range', t => {
  t.equal(clamp(50, 0, 10), 10)
  t.end()
})

t.test('keeps a value inside the range', t => {
  t.equal(clamp(5, 0, 10), 5)
  t.equal(clamp(0, 0, 10), 0)
  t.equal(clamp(10, 0, 10), 10)
  t.end()
})
"""
SEMVER = SHARED / "research-data" / "mining-repos" / "npm__node-semver.git"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


def check_pack(out: Path, tmp_path: Path, count: int) -> list[dict]:
    report = json.loads((out / "injection-report.json").read_text())
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert report["kept"] == len(tasks) == count
    assert all(not e["path"].startswith(("test/", "node_modules/")) for e in report["mutants"])
    for task in tasks:
        meta = task["metadata"]
        assert meta["mutation"][0].isupper(), meta  # Stryker's mutator names, as it reports them
        assert task["defect_patch"].count("\n@@") == 1 and task["FAIL_TO_PASS"]
        assert not re.search(r"\w\.[cm]?[jt]s\b|\bline \d+", task["problem_statement"]), task["problem_statement"]
        assert all(check["passed"] for check in meta["gate"].values())
    for harness, rate in (("oracle", 1.0), ("null", 0.0)):
        run = run_cli("run", "-p", str(out), "-H", harness, "--format", "json", "--runs-dir",
                      str(tmp_path / "runs"), cwd=tmp_path, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
        result = json.loads(run.stdout[run.stdout.index("{"):run.stdout.rindex("}") + 1])
        assert result["scores"][0]["n_tasks"] == count and result["scores"][0]["resolve_rate"] == rate
        assert result["scores"][0]["n_infra"] == 0
    return tasks


def test_stryker_mutants_of_a_small_tap_library_become_tasks_oracle_resolves(tmp_path, base_image):
    repo = tmp_path / "clamplib"
    (repo / "test").mkdir(parents=True)
    (repo / "package.json").write_text(json.dumps(PACKAGE, indent=2) + "\n")
    (repo / ".gitignore").write_text("node_modules\n")
    (repo / "index.js").write_text(INDEX)
    (repo / "test" / "index.js").write_text(TESTS)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "clamplib")
    out = tmp_path / "injected"
    done = run_cli("packs", "inject", "--repo", str(repo), "--count", "1", "--out", str(out), "--seed", "1",
                   "--reruns", "1", cwd=tmp_path, check=False, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "@stryker-mutator/instrumenter@8.7.1" in (out / "pack.yaml").read_text()
    report = json.loads((out / "injection-report.json").read_text())
    assert {e["path"] for e in report["mutants"]} == {"index.js"}
    assert not any(e["verdict"] in ("ok", "candidate") and e["function"] == "describe" for e in report["mutants"])
    tasks = check_pack(out, tmp_path, 1)
    assert all(t["metadata"]["function"] == "clamp" for t in tasks)


@pytest.mark.long
def test_node_semver_inject_two_tasks_oracle_resolves_null_does_not(tmp_path, base_image):
    if not SEMVER.is_dir():
        pytest.skip(f"needs the shared mining repositories ({SEMVER} is absent)")
    copy = tmp_path / SEMVER.name
    shutil.copytree(SEMVER, copy)
    (copy / "refs").mkdir(exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(copy), str(tmp_path / "repo")], check=True)
    out = tmp_path / "semver-injected"
    done = run_cli("packs", "inject", "--repo", "repo", "--count", "2", "--out", str(out), cwd=tmp_path,
                   check=False, timeout=5400)
    assert done.returncode == 0, done.stdout + done.stderr
    check_pack(out, tmp_path, 2)
