"""`evalharness packs check-harbor` through the real CLI: one line per finding naming the task, severity, check
and where; a summary; exit 1 at --fail-at or on an unreadable task, 0 otherwise; --format json.

Pins: an unreadable task stopping the whole folder's check (it is a line of its own and the rest are checked).
"""

from __future__ import annotations

import json
import shutil

import pytest

from support import REPO, SHARED, run_cli

TASKS = SHARED / "research-data" / "harbor" / "tasks"
needs_tasks = pytest.mark.skipif(not TASKS.is_dir(), reason=f"{TASKS} absent (shared research data)")


@needs_tasks
def test_the_shared_tasks_each_fixture_on_a_line_of_its_named_check():
    done = run_cli("packs", "check-harbor", str(TASKS), cwd=REPO, check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    for fixture, check in (("static-allow-internet", "allow-internet"), ("static-pip-pinning", "pip-pinning"),
                           ("static-instruction-timeout-mismatch", "instruction-timeout"),
                           ("validate-nop", "validate-nop")):
        assert any(line.startswith(f"tb3tpl-fail-{fixture}: ") and f" {check}: " in line for line in lines), fixture
    pin = next(line for line in lines if " pip-pinning: " in line)
    assert pin.startswith("tb3tpl-fail-static-pip-pinning: 1 pip-pinning: requests installed without an exact version")
    assert pin.endswith('[environment/Dockerfile:4 "RUN pip install requests"]')
    assert lines[-1].startswith("21 task(s), ")


@needs_tasks
def test_fail_at_and_json(tmp_path):
    clean = TASKS / "mathmodel-mcm-2023-b-maasai-mara"
    done = run_cli("packs", "check-harbor", str(clean), cwd=REPO)
    assert done.stdout.strip() == "1 task(s), 0 finding(s); 0 task(s) at severity >= 1 or unreadable"
    fixture = TASKS / "tb3tpl-fail-static-pip-pinning"
    assert run_cli("packs", "check-harbor", str(fixture), "--fail-at", "3", cwd=REPO).returncode == 0
    done = run_cli("packs", "check-harbor", str(fixture), "--format", "json", "--check", "pip-pinning", cwd=REPO,
                   check=False)
    assert done.returncode == 1
    data = json.loads(done.stdout)
    [task] = data["tasks"]
    assert data["failing"] == ["tb3tpl-fail-static-pip-pinning"] and task["error"] is None
    assert task["findings"] == [{"check": "pip-pinning", "severity": 1, "reason": task["findings"][0]["reason"],
                                 "evidence": [{"file": "environment/Dockerfile", "line": 4,
                                               "text": "RUN pip install requests"}]}]


@needs_tasks
def test_an_unreadable_task_is_a_line_and_the_rest_are_checked(tmp_path):
    shutil.copytree(TASKS / "mathmodel-mcm-2023-b-maasai-mara", tmp_path / "good")
    shutil.copytree(TASKS / "tb3tpl-fail-static-separate-verifier", tmp_path / "bad")
    toml = tmp_path / "bad" / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]\n", '[verifier]\nenvironment_mode = "shared"\n')
                    + "\n[verifier.environment]\ncpus = 1\n")
    done = run_cli("packs", "check-harbor", str(tmp_path), cwd=REPO, check=False)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].startswith(f"bad: unreadable: {toml}: verifier")
    assert done.stdout.splitlines()[-1] == "2 task(s), 0 finding(s), 1 unreadable; 1 task(s) at severity >= 1 or unreadable"


def test_bad_arguments_are_user_errors(tmp_path):
    done = run_cli("packs", "check-harbor", str(tmp_path), cwd=REPO, check=False)
    assert done.returncode == 1 and "no Harbor task directory" in done.stderr
    (tmp_path / "task.toml").write_text("")
    done = run_cli("packs", "check-harbor", str(tmp_path), "--check", "pinning", cwd=REPO, check=False)
    assert done.returncode == 1 and "unknown check pinning" in done.stderr and "pip-pinning" in done.stderr
