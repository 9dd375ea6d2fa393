"""`packs validate --run` on a Harbor pack: the oracle and the no-op each run N times through real trials; the
TB3-template fixtures made to fail validation are flagged for their defect, cookbook-simple-task is ok, and a
run skips the invalid tasks with the report's reason. The verdict itself is tested pure (no Docker) below.

One import, one validation and one run for the module; the images are the shared tasks' (built once)."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from evalharness.sources.harbor.run.validate import HarborRun, decide, reward_tests
from support import REPO, SHARED, run_cli

TASKS = SHARED / "research-data" / "harbor" / "tasks"
OVERLAYS = REPO / "tasks" / "harbor-overlays"
NAMES = ("cookbook-simple-task", "tb3tpl-fail-validate-nop", "tb3tpl-fail-validate-oracle")
BROKEN = "hand-broken-build"


def _runs(*rewards: float | None) -> list[HarborRun]:
    return [HarborRun("unresolved" if r is None or r < 1 else "resolved", "", r) for r in rewards]


@pytest.mark.parametrize("oracle, null, verdict", [
    ((1.0, 1.0), (0.0, 0.0), "ok"),
    ((1.0, 0.0), (0.0, 0.0), "gold_fails"),  # one oracle run below 1 is enough
    ((1.0, 0.95), (0.0, 0.0), "gold_fails"),  # a continuous reward below 1 is not 1
    ((1.0, 1.0), (0.0, 1.0), "empty_passes"),
    ((1.0, 1.0), (0.0, 0.25), "empty_passes"),
    ((1.0, None), (0.0, 0.0), "incomplete"),  # no reward is undecided, never a 0 (nor a failing oracle)
    ((1.0, 1.0), (None, 0.0), "incomplete"),  # nor a passing no-op
    ((0.0, None), (0.0, 0.0), "gold_fails"),  # a wrong reward decides even beside a missing one
])
def test_the_verdict_from_the_rewards(oracle, null, verdict):
    assert decide(_runs(*oracle), _runs(*null))[0] == verdict


def test_no_solution_fails_whatever_the_runs_say_and_tests_have_the_shape_of_other_reports():
    assert decide(_runs(None), _runs(0.0), has_solution=False)[0] == "gold_fails"
    shape = reward_tests(_runs(1.0, 0.0), _runs(1.0, 0.0))["harbor:reward"]
    assert shape == {"list": "FAIL_TO_PASS", "base": "passed", "gold_pass_rate": 0.5, "gold": ["passed", "failed"]}


@pytest.fixture(scope="module")
def validated(tmp_path_factory, base_image):
    if not TASKS.is_dir():
        pytest.skip(f"{TASKS} absent (shared research data)")
    root = tmp_path_factory.mktemp("harbor-validate")
    for name in NAMES:
        shutil.copytree(TASKS / name, root / "src" / name)
    broken = root / "src" / BROKEN  # its image cannot build: the task's verdict, never a crash of validation
    for rel, text in {"task.toml": 'version = "1.0"\n', "instruction.md": "Nothing.\n",
                      "environment/Dockerfile": "FROM debian:bookworm-slim\nRUN exit 3\n",
                      "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
                      "solution/solve.sh": "true\n"}.items():
        (broken / rel).parent.mkdir(parents=True, exist_ok=True)
        (broken / rel).write_text(text)
    run_cli("packs", "import", "harbor", str(root / "src"), "--out", str(root / "pack"), "--overlays", str(OVERLAYS),
            "--base-map", str(OVERLAYS / "base-map.yaml"), cwd=root)
    done = run_cli("packs", "validate", str(root / "pack"), "--run", "--reruns", "2", "-j", "2", cwd=root, check=False)
    return root, done


@pytest.mark.docker
@pytest.mark.slow
def test_validation_flags_the_fixtures_and_passes_the_sound_task(validated):
    root, done = validated
    assert done.returncode == 1, done.stdout + done.stderr  # some task is not ok
    reports = {n: json.loads((root / "pack" / "validation" / f"{n}.json").read_text()) for n in NAMES}
    assert {n: r["verdict"] for n, r in reports.items()} == {
        "cookbook-simple-task": "ok", "tb3tpl-fail-validate-nop": "empty_passes",
        "tb3tpl-fail-validate-oracle": "gold_fails"}
    assert reports["tb3tpl-fail-validate-nop"]["rewards"] == {"oracle": [1.0, 1.0], "null": [1.0, 1.0]}
    assert reports["tb3tpl-fail-validate-oracle"]["rewards"] == {"oracle": [0.0, 0.0], "null": [0.0, 0.0]}
    assert {f["check"] for f in reports["tb3tpl-fail-validate-oracle"]["findings"]} == {"validate-oracle"}
    broken = json.loads((root / "pack" / "validation" / f"{BROKEN}.json").read_text())
    assert broken["verdict"] == "env_build_failed" and "exit" in broken["build_log_tail"] + broken["reason"]
    assert "1/4 ok" in done.stdout


@pytest.mark.docker
@pytest.mark.slow
def test_a_run_skips_the_invalid_tasks_with_the_reports_reason_and_validation_is_kept(validated):
    root, _ = validated
    again = run_cli("packs", "validate", str(root / "pack"), "--run", "--reruns", "2", cwd=root, check=False)
    assert "4 task(s) already validated" in again.stderr and again.returncode == 1
    done = run_cli("run", "-p", str(root / "pack"), "-H", "oracle", "--format", "json", cwd=root, check=False)
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        rows = dict(((t, (o, r)) for t, o, r in db.execute("SELECT task_id, outcome, reason FROM trials")))
    assert rows["cookbook-simple-task"][0] == "resolved"
    assert rows["tb3tpl-fail-validate-nop"][0] == "task_error"
    assert rows["tb3tpl-fail-validate-nop"][1].startswith("validation: empty_passes: validate-nop")
    assert rows["tb3tpl-fail-validate-oracle"][1].startswith("validation: gold_fails: validate-oracle")
    assert rows[BROKEN][1].startswith("validation: env_build_failed")
    assert done.returncode == 1  # task errors: fix the pack


def test_an_oracle_whose_own_run_is_tampered_makes_the_task_fail_never_incomplete():
    tampered = HarborRun("tampered", "the agent changed what the verifier would run: added /usr/local/bin/tool", None)
    verdict, reason, _ = decide([tampered, tampered], _runs(0.0, 0.0))
    assert verdict == "gold_fails" and "separate verifier" in reason and "/usr/local/bin/tool" in reason
    assert decide(_runs(None, None), _runs(0.0, 0.0))[0] == "incomplete"  # no reward for another reason: undecided
