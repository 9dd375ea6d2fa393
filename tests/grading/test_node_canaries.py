"""Canaries in Node test files (grading/canary_js.py): where they are planted, and what a run must say of them.

Pure: no Docker. ``tests/adversarial/test_node_forgeries_are_not_resolved.py`` plays the forgeries they catch
(an ``expect`` that swallows failures, a forged results file with an early exit) through the CLI and Docker.
"""

from __future__ import annotations

import random
import re

import pytest

from evalharness.grading import canary_js
from evalharness.grading.grade import decide
from evalharness.types import TaskSpec

JEST = "node_modules/.bin/jest --ci --coverage=false --json --outputFile={junit_xml} --runTestsByPath {test_files}"
FILE = "test/calc.test.js"
TEXT = "const { clamp } = require('../src/calc');\ntest('clamp high edge', () => { expect(clamp(12, 0, 10)).toBe(10); });\n"


def planned(text: str = TEXT, command: str = JEST, configs: dict | None = None) -> canary_js.Plan:
    return canary_js.plan([FILE], command, {FILE: text}, configs or {}, random.Random(7))


def test_a_jest_file_gets_a_passing_and_a_failing_canary_that_use_its_own_test_and_expect():
    plan = planned()
    assert plan.why_none == {} and len(plan.files) == 1
    one = plan.files[0]
    assert one.path == FILE and one.passing != one.failing
    passing, failing = one.source.strip().splitlines()
    assert passing.startswith(f'test("{one.passing}"') and failing.startswith(f'test("{one.failing}"')
    # the passing canary checks that a failed matcher throws (an expect that swallows failures fails it) ...
    a, b, total = (int(n) for n in re.search(r"expect\((\d+) \+ (\d+)\)\.toBe\((\d+)\)", passing).groups())
    assert total == a + b + 1 and "if (!threw)" in passing
    # ... and the failing one's sum is off by one
    numbers = [int(n) for n in failing.split("[", 1)[1].split("]", 1)[0].split(",")]
    assert f".toBe({sum(numbers) + 1})" in failing


def test_a_jest_file_with_it_and_no_expect_of_the_runners_gets_canaries_that_throw():
    text = "const assert = require('assert');\nit('adds', function () { assert.equal(1 + 1, 2); });\n"
    source = planned(text).files[0].source
    assert source.count("\nit(") == 2 and "throw new Error" in source and "expect(" not in source
    chai = "const { expect } = require('chai');\nit('adds', () => { expect(2).to.equal(2); });\n"
    assert "expect(" not in planned(chai).files[0].source


def test_the_canaries_call_what_starts_the_files_lines_not_what_its_comments_say():
    text = "// a regression test (issue #12)\nconst { it } = require('@jest/globals');\nit('x', () => {});\n"
    assert "\nit(" in planned(text).files[0].source and "test(" not in planned(text).files[0].source


@pytest.mark.parametrize("text, why", [
    (TEXT + "test.only('x', () => {});\n", ".only"),
    (TEXT.replace("test(", "fit("), ".only"),
    ("describe.only('d', () => { it('x', () => {}); });\n", ".only"),
    ("module.exports = 1;\n", "no line of the file starts with a test( or it( call"),
    ("// test('x') is how a test( call looks\n", "no line of the file starts"),
    (None, "could not be read"),
])
def test_a_file_whose_every_test_might_not_run_gets_no_canaries(text, why):
    plan = planned(text)
    assert plan.files == () and why in plan.why_none[FILE]


@pytest.mark.parametrize("command", [
    JEST + " -t clamp", JEST + " --testNamePattern=clamp", JEST + " --bail", JEST + " -b", JEST + " --config=j.js",
    "npx eslint . && " + JEST, JEST + "; true", "node_modules/.bin/mocha {test_files}",
    "node_modules/.bin/tap -R tap {test_files}", "npm test", "node_modules/.bin/jest 'unclosed",
])
def test_a_command_that_filters_stops_early_or_runs_an_unknown_runner_gets_no_canaries(command):
    plan = planned(command=command)
    assert plan.files == () and "*" in plan.why_none


def test_a_stop_or_filter_in_the_base_configuration_means_no_canaries():
    assert planned(configs={"package.json": '{"jest": {"bail": true}}'}).files == ()
    assert planned(configs={"jest.config.js": "module.exports = { bail: 1 };"}).files == ()
    assert planned(configs={"jest.config.js": "module.exports = { testNamePattern: 'unit' };"}).files == ()
    assert planned(configs={"package.json": '{"jest": {"verbose": true}}'}).files != ()


def test_a_file_that_is_not_a_test_file_by_name_or_folder_gets_no_canaries():
    plan = canary_js.plan(["src/calc.js"], JEST, {"src/calc.js": TEXT}, {}, random.Random(7))
    assert plan.files == () and "not a test file" in plan.why_none["src/calc.js"]


def test_runner_names_are_read_from_the_command_words():
    assert canary_js.runner_of(JEST) == "jest"
    assert canary_js.runner_of("npx vitest run {test_files}") == "vitest"
    assert canary_js.runner_of("node node_modules/mocha/bin/mocha.js t/") is None  # mocha: no canaries
    assert canary_js.runner_of("node_modules/.bin/jest && node_modules/.bin/vitest") is None  # two runners


def test_the_file_of_a_junit_worded_id_is_found_in_the_work_tree():
    listing = ["src/calc.js", "test/calc.test.js", "test/format.test.js"]
    assert canary_js.files_of(["test/calc/test.py::js::clamp high edge"], listing) == ["test/calc.test.js"]
    assert canary_js.files_of(["test/format.test.js::format > range"], listing) == ["test/format.test.js"]
    assert canary_js.files_of(["test/gone.test.js::x"], listing) == []


IDS = [f"{FILE}::cache mode 111111", f"{FILE}::merge key 222222"]
REQUIRED = {f"{FILE}::clamp high edge": "passed"}


@pytest.mark.parametrize("statuses, problem", [
    ({IDS[0]: "passed", IDS[1]: "failed"}, None),
    ({IDS[0]: "passed", IDS[1]: "passed"}, "must be failed"),
    ({IDS[0]: "failed", IDS[1]: "failed"}, "must be passed"),
    ({IDS[0]: "skipped", IDS[1]: "failed"}, "must be passed"),
    ({IDS[0]: "passed"}, "was not reported"),
    ({}, "was not reported"),
    # a JUnit parser's own wording of the ids: found by their titles
    ({"test/calc/test.py::js::cache mode 111111": "passed", "test/calc/test.py::js::merge key 222222": "failed"},
     None),
])
def test_what_a_run_must_say_of_its_canaries(statuses, problem):
    problems = canary_js.check(canary_js.pairs(IDS), statuses, REQUIRED)
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems


def test_canaries_of_a_file_whose_tests_did_not_run_are_not_asked_for():
    assert canary_js.check(canary_js.pairs(IDS), {f"{FILE}::(suite)": "error"}, {f"{FILE}::clamp high edge": None}) == []
    # ... but a JUnit-worded required id of the same file that was reported makes them required
    junit_required = {"test/calc/test.py::js::clamp high edge": "passed"}
    assert canary_js.check(canary_js.pairs(IDS), {}, junit_required) != []


def _task() -> TaskSpec:
    return TaskSpec(instance_id="t", repo="r", base_commit="0" * 40, problem_statement="s", patch="",
                    test_patch="", FAIL_TO_PASS=[f"{FILE}::clamp high edge"], PASS_TO_PASS=[])


def _jest_json(results: dict[str, str]) -> str:
    import json

    cases = [{"ancestorTitles": [], "title": t, "status": s} for t, s in results.items()]
    status = "failed" if "failed" in results.values() else "passed"
    return json.dumps({"testResults": [{"name": f"/testbed/{FILE}", "status": status, "message": "",
                                        "assertionResults": cases}]})


def test_decide_judges_a_forged_run_tampered_and_an_honest_one_on_its_tests():
    titles = [i.split("::", 1)[1] for i in IDS]
    honest = _jest_json({"clamp high edge": "passed", titles[0]: "passed", titles[1]: "failed"})
    evidence: list[str] = []
    outcome, reason, tests = decide(_task(), "jest_json", exit_code=1, log="", junit_xml=honest,
                                    patch_applied=True, canaries=IDS, evidence=evidence)
    assert (outcome.value, evidence) == ("resolved", []), reason
    forged = _jest_json({"clamp high edge": "passed", titles[0]: "passed", titles[1]: "passed"})
    outcome, reason, _ = decide(_task(), "jest_json", exit_code=0, log="", junit_xml=forged,
                                patch_applied=True, canaries=IDS, evidence=evidence)
    assert outcome.value == "tampered" and "turned into passes" in reason and evidence
    # without canaries the same forged results would pass: the canaries are what decides
    outcome, _, _ = decide(_task(), "jest_json", exit_code=0, log="", junit_xml=forged, patch_applied=True)
    assert outcome.value == "resolved"


class _TreeSandbox:
    """Answers ``_plant_node_checks``: file texts from ``tree``; records what was written and run."""

    workdir = "/testbed"

    def __init__(self, tree: dict[str, str]):
        self.tree, self.written, self.runs = tree, {}, []

    def read_file(self, path, *, max_bytes=None):
        try:
            return self.tree[path.removeprefix("/testbed/")].encode()
        except KeyError:
            raise FileNotFoundError(path) from None

    def write_file(self, path, content, *, user="agent"):
        self.written[path] = content

    def exec_bytes(self, argv, *, stdin=None, timeout=120.0, user="root", max_bytes=0):
        self.runs.append(argv)
        return 0, b"", False


def test_the_required_tests_folders_are_made_read_only_for_the_run():
    """What else the required test's folder holds (another test file, a helper, a fixture) stays the task's
    during the run, like the file itself; the library's code stays the run's."""
    from support import REPO

    from evalharness.grading.grade import PRIV, GradeResult, _plant_node_checks
    from evalharness.packs import load_pack
    from evalharness.types import Outcome

    pack = load_pack(REPO / "tests" / "data" / "nodepack")
    tree = {"test/calc.test.js": TEXT, "test/helpers.js": "module.exports = {};\n",
            "test/fixtures/range.json": "[]\n", "src/calc.js": "module.exports = {};\n", "package.json": "{}\n"}
    sandbox = _TreeSandbox(tree)
    _plant_node_checks(pack.task("node-clamp"), pack.spec, sandbox, GradeResult(outcome=Outcome.UNRESOLVED, reason=""),
                       {}, list(tree), random.Random(3))
    listed = set(sandbox.written[f"{PRIV}/m/protect"].split(b"\0")) - {b""}
    assert {b"test/calc.test.js", b"test/helpers.js", b"test/fixtures/range.json"} <= listed
    assert not listed & {b"src/calc.js", b"package.json"}
