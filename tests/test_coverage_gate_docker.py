"""The coverage gate through the real CLI, real git and real Docker: `packs mine` on a history built here, then
`packs gate --coverage` on the mined pack.

Two candidates, both of which validate (oracle 100%, null 0%): one fixes `add` and tests it (fair: its
FAIL_TO_PASS test runs the changed line, and `test_mul` runs code of the changed module); the other rewrites
`mul` and raises a constant in another module, and its new test only reads the constant: the test never runs
the changed code, so it is rejected as f2p_misses_change, while the fair one is kept with metadata.gate.coverage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import run_cli
from test_mine_end_to_end import commit, git

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LIB = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST = "from lib import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("covrepo") / "calc"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = {"root": commit(repo, "Start calc", {"lib.py": LIB, "consts.py": "LIMIT = 10\n", "test_lib.py": TEST})}
    fixed = LIB.replace("a - b", "a + b")
    shas["fair"] = commit(repo, "add() gives the difference of its arguments\n\nadd(2, 3) is -1; I expected 5 from "
                                "the sum of both arguments, as the documentation says.",
                          {"lib.py": fixed, "test_lib.py": TEST + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"})
    shas["misses"] = commit(repo, "The limit for multiplication results should be twenty\n\nCalling mul with large "
                                  "numbers uses a LIMIT of 10 but the documented limit is 20; raise the constant.",
                            {"lib.py": fixed.replace("    return a * b\n", "    result = a * b\n    return result\n"),
                             "consts.py": "LIMIT = 20\n",
                             "test_consts.py": "import consts\n\n\ndef test_limit():\n    assert consts.LIMIT == 20\n"})
    return repo, shas


def test_mining_rejects_a_task_whose_test_misses_the_change_and_gate_measures_an_existing_pack(history, tmp_path,
                                                                                                base_image):
    repo, shas = history
    out = tmp_path / "mined"
    done = run_cli("packs", "mine", "--repo", str(repo), "--out", str(out), "--pip", "pytest==8.3.5",
                   "--discover-reruns", "1", "--reruns", "1", cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "mining-report.json").read_text())
    entries = {c["commit"]: c for c in report["candidates"]}
    assert entries[shas["fair"]]["verdict"] == "ok"
    missed = entries[shas["misses"]]
    assert missed["verdict"] == "f2p_misses_change", missed
    assert "execute 0 of the 3 executable line(s)" in missed["reason"]
    assert missed["gate"]["coverage"]["changed_lines"] == {"consts.py": [1], "lib.py": [6, 7]}
    assert report["totals"]["by_verdict"]["f2p_misses_change"] == 1

    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert [t["metadata"]["commit"] for t in tasks] == [shas["fair"]]
    coverage = tasks[0]["metadata"]["gate"]["coverage"]
    assert coverage["covered_lines"] == {"lib.py": [2]} and coverage["covered_fraction"] == 1.0
    assert coverage["p2p_guards"]["lib.py"]["tests"] == ["test_lib.py::test_mul"]
    names = [c["name"] for c in tasks[0]["metadata"]["gate"]["checks"]]
    assert names[-2:] == ["f2p_misses_change", "no_p2p_guard"]
    from evalharness.packs import load_pack
    from evalharness.validation import load_report

    pack = load_pack(out)  # runs find the task's validation report current, coverage results and all
    assert load_report(pack, pack.tasks[0])["verdict"] == "ok"

    # the same pack gated again without mining: the kept task passes; tasks.jsonl is left as it is
    before = (out / "tasks.jsonl").read_bytes()
    gated = run_cli("packs", "gate", str(out), "--coverage", cwd=tmp_path, check=False)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert f"[1/1] {tasks[0]['instance_id']}: passed, covered 1/1" in gated.stdout
    assert (out / "tasks.jsonl").read_bytes() == before
    gate_report = json.loads((out / "gate-report.json").read_text())
    assert gate_report["totals"]["passed"] == 1 and gate_report["tasks"][0]["gate"]["coverage"]["covered"] == 1
    again = run_cli("packs", "gate", str(out), "--coverage", cwd=tmp_path)
    assert "cached" in again.stdout


def test_gate_rejects_in_an_existing_pack_mined_without_coverage_and_drops_only_when_asked(history, tmp_path,
                                                                                           base_image):
    repo, shas = history
    out = tmp_path / "plain"
    run_cli("packs", "mine", "--repo", str(repo), "--out", str(out), "--pip", "pytest==8.3.5", "--no-coverage",
            "--discover-reruns", "1", "--reruns", "1", cwd=tmp_path)
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert {t["metadata"]["commit"] for t in tasks} == {shas["fair"], shas["misses"]}
    missed = next(t["instance_id"] for t in tasks if t["metadata"]["commit"] == shas["misses"])

    gated = run_cli("packs", "gate", str(out), "--coverage", cwd=tmp_path, check=False)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert f"{missed}: f2p_misses_change, no_p2p_guard, covered 0/3" in gated.stdout
    assert "1/2 passed, 1 rejected (f2p_misses_change 1, no_p2p_guard 1)" in gated.stdout
    assert len((out / "tasks.jsonl").read_text().splitlines()) == 2

    run_cli("packs", "gate", str(out), "--coverage", "--write", "--drop", cwd=tmp_path, check=False)
    kept = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert [t["metadata"]["commit"] for t in kept] == [shas["fair"]]
    assert kept[0]["metadata"]["gate"]["coverage"]["covered"] == 1
    assert len((out / "tasks.jsonl.bak").read_text().splitlines()) == 2
    from evalharness.packs import load_pack
    from evalharness.validation import load_report

    pack = load_pack(out)  # the validation report is still current for the task with its new metadata.gate
    assert load_report(pack, pack.tasks[0])["verdict"] == "ok"
