"""`packs new --repo` on real Node repositories, one task from each one's history, then oracle and null.

Pins: a Node repository got a pytest pack. Here node-semver (tap 16, no lockfile) and ts-pattern (jest +
ts-jest, `npm ci`) each become a pack through the real CLI: the environment installs Debian's Node and
npm at image build, the dependencies at the task's base commit, the task's lists are discovered in Docker
from the runner's JSON report, and `run` resolves the task with `oracle` and not with `null`.
The ts-pattern task's test file does not compile at its base (a type-level change): its tests must come
out failing there, never absent-as-passing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from support import SHARED, run_cli

MINING = SHARED / "research-data" / "mining-repos"
SEMVER, TS_PATTERN = MINING / "npm__node-semver.git", MINING / "gvergnaud__ts-pattern.git"
SEMVER_FIX = "d588e3782864b1cab2fe9f2452b848e8c7f609d1"      # fix(diff): prerelease to stable (#755)
TS_PATTERN_FIX = "75e3967cb74ef59a64bf2c025b3ce6399d534892"  # Merge #307: fix isMatching for non-objects

SEMVER_STATEMENT = """semver.diff() names the wrong release type from a prerelease to a stable version

`semver.diff('1.7.2-1', '1.8.1')` answers 'patch' and `semver.diff('1.1.1-pre', '2.1.1')` answers 'patch'
too, though going from 1.7.2-1 to 1.8.1 is a minor bump and from 1.1.1-pre to 2.1.1 a major one.
Only when the stable version has the same major, minor and patch as the prerelease (1.2.3-1 to 1.2.3)
is the difference a plain 'patch'.
"""
TS_PATTERN_STATEMENT = """isMatching with two arguments rejects non-object patterns

Calling `isMatching(pattern, value)` with a value typed `unknown` only type-checks when the pattern
is an object pattern. `isMatching(P.array(P.number), value)` or `isMatching(P.string, value)` are
refused by the compiler, although the one-argument form `isMatching(P.string)(value)` accepts them.
Both forms should accept every kind of pattern.
"""


def clone(bare: Path, tmp_path: Path) -> Path:
    """A work-tree clone of a shared bare repository (its copy gets the empty refs/ folder git needs)."""
    if not bare.is_dir():
        pytest.skip(f"needs the shared mining repositories ({bare} is absent)")
    copy = tmp_path / bare.name
    shutil.copytree(bare, copy)
    (copy / "refs").mkdir(exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(copy), str(tmp_path / "repo")], check=True)
    return tmp_path / "repo"


def oracle_and_null(tmp_path: Path) -> dict[str, float]:
    ran = run_cli("run", "--pack", "pack", "--harness", "oracle", "--harness", "null", "--format", "json",
                  cwd=tmp_path)
    report = json.loads(ran.stdout)
    assert all(s["n_infra"] == 0 for s in report["scores"]), report["scores"]
    return {s["config"]: s["resolve_rate"] for s in report["scores"]}


@pytest.mark.docker
@pytest.mark.slow
def test_node_semver_tap_pack_from_history_oracle_resolves_null_does_not(tmp_path, base_image):
    clone(SEMVER, tmp_path)
    made = run_cli("packs", "new", "--repo", "repo", "--out", "pack", "--ref", f"{SEMVER_FIX}^", cwd=tmp_path)
    assert "runner tap (scripts.test runs it: 'tap')" in made.stdout
    assert "npm install --ignore-scripts --no-audit --no-fund --no-save --no-package-lock tap@16" in made.stdout
    spec = yaml.safe_load((tmp_path / "pack" / "pack.yaml").read_text())
    assert spec["log_parser"] == "tap" and spec["environment"]["apt"] == ["nodejs", "npm"]
    (tmp_path / "diff.md").write_text(SEMVER_STATEMENT)
    run_cli("packs", "add-task", "pack", "--base", f"{SEMVER_FIX}^", "--statement", "diff.md", "--tests",
            "test/functions/diff.js", "--gold", SEMVER_FIX, "--id", "semver-diff", "--reruns", "1", cwd=tmp_path)
    task = json.loads((tmp_path / "pack" / "tasks.jsonl").read_text())
    assert task["FAIL_TO_PASS"] == ["test/functions/diff.js::diff versions test"]   # one subtest, many assertions
    assert task["PASS_TO_PASS"] == ["test/functions/diff.js::throws on bad version"]
    assert "functions/diff.js" in task["patch"] and "test/" not in task["patch"]
    assert oracle_and_null(tmp_path) == {"oracle/none": 1.0, "null/none": 0.0}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.long  # default tier: test_node_semver_tap_pack_from_history_oracle_resolves_null_does_not
def test_ts_pattern_jest_pack_a_test_file_that_does_not_compile_at_base_fails_there(tmp_path, base_image):
    repo = clone(TS_PATTERN, tmp_path)
    made = run_cli("packs", "new", "--repo", "repo", "--out", "pack", "--ref", f"{TS_PATTERN_FIX}^1",
                   cwd=tmp_path)
    assert "runner jest" in made.stdout and "npm ci --ignore-scripts --no-audit --no-fund" in made.stdout
    gold = subprocess.run(["git", "-C", str(repo), "diff", f"{TS_PATTERN_FIX}^1", TS_PATTERN_FIX, "--", "src"],
                          check=True, capture_output=True, text=True).stdout
    (tmp_path / "gold.diff").write_text(gold)
    (tmp_path / "statement.md").write_text(TS_PATTERN_STATEMENT)
    run_cli("packs", "add-task", "pack", "--base", f"{TS_PATTERN_FIX}^1", "--statement", "statement.md", "--tests",
            "tests/is-matching.test.ts", "--tests-from", TS_PATTERN_FIX, "--gold", "gold.diff",
            "--id", "ts-pattern-ismatching", "--reruns", "1", cwd=tmp_path)
    task = json.loads((tmp_path / "pack" / "tasks.jsonl").read_text())
    # the file fails to compile at base ("Test suite failed to run"): every test in it fails there
    assert "tests/is-matching.test.ts::isMatching > should work with object patterns" in task["FAIL_TO_PASS"]
    assert all(t.startswith("tests/is-matching.test.ts::isMatching > ") for t in task["FAIL_TO_PASS"])
    assert task.get("PASS_TO_PASS", []) == []
    assert oracle_and_null(tmp_path) == {"oracle/none": 1.0, "null/none": 0.0}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.long  # default tier: the node-semver pack test above (add-task's discovery is mining's); mine_rules tests
def test_packs_mine_on_node_semver_keeps_a_validated_task_that_oracle_resolves(tmp_path, base_image):
    clone(SEMVER, tmp_path)
    mined = run_cli("packs", "mine", "--repo", "repo", "--out", "pack", "--ref", SEMVER_FIX, "--max", "1",
                    "--reruns", "2", "--discover-reruns", "1", cwd=tmp_path, check=False)
    assert mined.returncode == 0, mined.stdout + mined.stderr
    assert "coverage gate measures Python only" in mined.stderr
    task = json.loads((tmp_path / "pack" / "tasks.jsonl").read_text())   # its own commit message is the statement
    assert task["metadata"]["commit"] == SEMVER_FIX and task["problem_statement"].startswith("fix(diff)")
    assert task["FAIL_TO_PASS"] == ["test/functions/diff.js::diff versions test"]
    assert "functions/diff.js" in task["patch"] and "test/" not in task["patch"]
    assert oracle_and_null(tmp_path) == {"oracle/none": 1.0, "null/none": 0.0}
