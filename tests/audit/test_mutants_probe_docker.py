"""The mutants probe in real Docker tells a task with too-weak tests from one with strong tests.

A tiny pack (a path source) whose base has two bugs, in ``add`` and in ``mul``; both tasks share the gold
patch that fixes both (two hunks). The weak task lists only ``test_add``: the fix without its ``mul`` hunk
passes every listed test, so the probe flags it. The strong task lists both tests: each dropped hunk is
killed, the mutation score is 1 and nothing is flagged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FILLER = "".join(f"C{i} = {i}\n" for i in range(8))
LIB = "def add(a, b):\n    return a - b\n\n\n" + FILLER + "\n\ndef mul(a, b):\n    return a + b\n"
TESTS = ("from lib import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_mul():\n    assert mul(2, 3) == 6\n")
PACK = """name: mutantpack
version: 1
description: Two tasks with one gold patch; one lists too few tests.
environment:
  base: bookworm
  source: {kind: path, path: src}
  pip: ["pytest==8.3.5"]
  setup: []
tasks: tasks.jsonl
test_command: python -m pytest -rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit_xml} {test_files}
log_parser: junit
timeouts: {agent_s: 120, tests_s: 60, build_s: 600, exec_s: 30}
"""


@pytest.fixture(scope="module")
def mutant_pack(tmp_path_factory, base_image) -> Path:
    from evalharness.audit.mutants import render

    root = tmp_path_factory.mktemp("mutantpack")
    (root / "src" / "tests").mkdir(parents=True)
    (root / "src" / "lib.py").write_text(LIB)
    (root / "src" / "tests" / "test_lib.py").write_text(TESTS)
    (root / "src" / "conftest.py").write_text("")  # puts src/ on sys.path for `from lib import ...`
    (root / "pack.yaml").write_text(PACK)
    fixed = LIB.replace("return a - b", "return a + b").replace("mul(a, b):\n    return a + b",
                                                               "mul(a, b):\n    return a * b")
    gold = render({"lib.py": LIB}, {"lib.py": fixed})
    common = {"repo": "mutantpack", "problem_statement": "add subtracts and mul adds.", "patch": gold,
              "PASS_TO_PASS": []}
    tasks = [{**common, "instance_id": "weak", "FAIL_TO_PASS": ["tests/test_lib.py::test_add"]},
             {**common, "instance_id": "strong",
              "FAIL_TO_PASS": ["tests/test_lib.py::test_add", "tests/test_lib.py::test_mul"]}]
    (root / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return root


def test_the_probe_tells_weak_tests_from_strong(mutant_pack):
    from evalharness.audit.context import AuditContext, DirBaseCode
    from evalharness.audit.probes import PROBES
    from evalharness.audit.probes.mutants import MutantsProbe
    from evalharness.cli._common import grading_validator
    from evalharness.packs import load_pack
    from evalharness.sandbox.docker import remove_labelled

    pack = load_pack(mutant_pack)
    assert isinstance(PROBES["mutants"], MutantsProbe) and PROBES["mutants"].family == "too_weak_tests"
    assert PROBES["mutants"].run(pack.task("weak"), AuditContext(pack)).status == "skipped"  # no validator

    client, run_id, _, _, validator = grading_validator(pack, "test-mutants")
    ctx = AuditContext(pack, base_code=lambda task: DirBaseCode(mutant_pack / "src"), validator=validator,
                       log=lambda message: None)
    try:
        weak = PROBES["mutants"].run(pack.task("weak"), ctx)
        strong = PROBES["mutants"].run(pack.task("strong"), ctx)
    finally:
        remove_labelled(client, run_id)

    assert weak.status == "ok" and weak.flagged and weak.severity == 2, weak
    assert "incomplete fix" in weak.reason and "hunk 2 of 2 left out" in weak.reason
    assert weak.evidence["gold_control"] == "resolved"
    by_kind = {(m["kind"], m["description"].split(": ")[1]): m for m in weak.evidence["mutants"]}
    left_out_mul = by_kind[("dropped_hunk", "hunk 2 of 2 left out (base line 13)")]
    assert left_out_mul["result"] == "survived" and left_out_mul["accepted"]
    assert "-    return a * b" in left_out_mul["change"]
    left_out_add = by_kind[("dropped_hunk", "hunk 1 of 2 left out (base line 1)")]
    assert left_out_add["result"] == "killed" and left_out_add["killed_by"] == ["tests/test_lib.py::test_add"]
    assert weak.evidence["mutation_score"] == 0.5

    assert strong.status == "ok" and not strong.flagged and strong.severity == 0, strong
    assert strong.evidence["mutation_score"] == 1.0
    assert {m["result"] for m in strong.evidence["mutants"]} == {"killed"}
