"""Each Terminal-Bench-3-template fixture task is flagged for the defect its name gives, and no longer once that
defect is mended in a copy; the clean shared tasks carry only the template rules they truly break.

Pins issue 25's acceptance line: "all 11 fixture tasks are flagged by validation or the static checks for their
named defect" (the two validate-* fixtures here by their static hints; their run-time verdict is
``validation_findings``, tested in test_harbor_checks_rules.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalharness.sources.harbor.checks.checks import static_checks
from evalharness.sources.harbor.model import HarborTask
from support import SHARED

TASKS = SHARED / "research-data" / "harbor" / "tasks"
pytestmark = pytest.mark.skipif(not TASKS.is_dir(), reason=f"{TASKS} absent (shared research data)")

SHARED_MODE = "separate-verifier"  # every fixture but trial-network-fetch runs its verifier in shared mode
FIXTURES = {  # fixture -> (its named check, every check that flags it)
    "tb3tpl-fail-static-allow-internet": ("allow-internet", {"allow-internet", SHARED_MODE}),
    "tb3tpl-fail-static-dockerfile-platform": ("dockerfile-platform", {"dockerfile-platform", SHARED_MODE}),
    # gpus = 1 is also a request evalharness's sandbox cannot meet
    "tb3tpl-fail-static-gpu-types": ("gpu-types", {"gpu-types", "gpu-request", SHARED_MODE}),
    "tb3tpl-fail-static-instruction-timeout-mismatch": ("instruction-timeout", {"instruction-timeout", SHARED_MODE}),
    "tb3tpl-fail-static-pip-pinning": ("pip-pinning", {"pip-pinning", SHARED_MODE}),
    "tb3tpl-fail-static-separate-verifier": ("separate-verifier", {SHARED_MODE}),
    "tb3tpl-fail-static-task-fields": ("task-fields", {"task-fields", SHARED_MODE}),
    "tb3tpl-fail-static-test-sh-sanity": ("test-sh-sanity", {"test-sh-sanity", SHARED_MODE}),
    # a true second defect: its verifier image is python:3.13-slim, which has no curl for test.sh's `curl | sh`
    "tb3tpl-fail-static-trial-network-fetch": ("trial-network-fetch", {"trial-network-fetch", "test-sh-sanity"}),
    "tb3tpl-fail-validate-nop": ("validate-nop", {"validate-nop", SHARED_MODE}),
    "tb3tpl-fail-validate-oracle": ("validate-oracle", {"validate-oracle", SHARED_MODE}),
}


def _checks(root: Path) -> set[str]:
    return {f.check for f in static_checks(HarborTask.load(root))}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_each_fixture_is_flagged_for_its_named_defect(name):
    named, every = FIXTURES[name]
    findings = static_checks(HarborTask.load(TASKS / name))
    assert {f.check for f in findings} == every
    mine = [f for f in findings if f.check == named]
    assert all(f.reason and f.evidence and f.evidence[0].file for f in mine)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def _mend_trial_network_fetch(root: Path) -> None:
    (root / "tests" / "Dockerfile").write_text("FROM python:3.13-slim-bookworm\nRUN pip install pytest==8.4.1\n"
                                               "COPY . /tests/\nRUN mkdir -p /app\n")
    (root / "tests" / "test.sh").write_text("#!/bin/bash\nif pytest /tests/test_state.py -rA; then\n"
                                            "  echo 1 > /logs/verifier/reward.txt\nelse\n"
                                            "  echo 0 > /logs/verifier/reward.txt\nfi\n")


MENDS = {  # fixture -> how a copy is mended (the flipped condition)
    "tb3tpl-fail-static-allow-internet": lambda r: _edit(r / "task.toml", "allow_internet = false", "allow_internet = true"),
    "tb3tpl-fail-static-dockerfile-platform": lambda r: _edit(r / "environment" / "Dockerfile", "--platform=linux/amd64 ", ""),
    "tb3tpl-fail-static-gpu-types": lambda r: _edit(r / "task.toml", '"H100_SXM"', '"H100"'),
    "tb3tpl-fail-static-instruction-timeout-mismatch": lambda r: _edit(r / "task.toml", "25200.0", "3600.0"),
    "tb3tpl-fail-static-pip-pinning": lambda r: _edit(r / "environment" / "Dockerfile", "requests", "requests==2.32.3"),
    "tb3tpl-fail-static-separate-verifier": lambda r: (
        _edit(r / "task.toml", "[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n'),
        (r / "tests" / "Dockerfile").write_text("FROM ubuntu:24.04\nCOPY . /tests/\n")),
    "tb3tpl-fail-static-task-fields": lambda r: _edit(r / "task.toml", 'tags = ["test-task"]\n',
        'tags = ["test-task"]\ndifficulty_explanation = "x"\nexpert_time_estimate_hours = 0.25\n'),
    "tb3tpl-fail-static-test-sh-sanity": lambda r: _edit(r / "environment" / "Dockerfile", "WORKDIR /app",
        "RUN apt-get update && apt-get install -y python3-pytest\nWORKDIR /app"),
    "tb3tpl-fail-static-trial-network-fetch": _mend_trial_network_fetch,
    "tb3tpl-fail-validate-nop": lambda r: _edit(r / "tests" / "test_state.py", "assert True == True",
                                               'assert Path("/app/nop.txt").read_text().strip() == "nop test"'),
    "tb3tpl-fail-validate-oracle": lambda r: _edit(r / "solution" / "solve.sh", '"wrong"', '"correct answer"'),
}


@pytest.mark.parametrize("name", sorted(MENDS))
def test_a_mended_copy_is_no_longer_flagged_for_it(name, tmp_path):
    root = tmp_path / name
    shutil.copytree(TASKS / name, root)
    named, every = FIXTURES[name]
    assert named in _checks(root)
    MENDS[name](root)
    expected = every - {named}
    if name == "tb3tpl-fail-static-trial-network-fetch":
        expected -= {"test-sh-sanity"}  # the mended verifier image also has what test.sh calls
    if name == "tb3tpl-fail-static-separate-verifier":
        expected |= {"trial-network-fetch"}  # once separate, its test.sh's `curl | sh` is the next defect
    assert _checks(root) == expected


def test_clean_tasks_carry_only_the_template_rules_they_break():
    """The cookbook's examples run the verifier in shared mode and carry no reviewer metadata: both are true
    breaches of the template, reported as such. The two complete template tasks pass every check."""
    for name in ("cookbook-simple-task", "cookbook-multi-reward"):
        findings = static_checks(HarborTask.load(TASKS / name))
        assert {(f.check, f.severity) for f in findings} == {("separate-verifier", 1), ("task-fields", 1)}, name
    for name in ("mathmodel-mcm-2023-b-maasai-mara", "mathmodel-mcm-2025-b-juneau-tourism"):
        assert static_checks(HarborTask.load(TASKS / name)) == [], name
