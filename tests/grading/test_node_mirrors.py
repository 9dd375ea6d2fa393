"""Mirror tests for Node packs (grading/mirror_js.py): which tests get a mirror, how the copy reads, and when a
mirror that disagrees makes the trial tampered. Pure: no Docker (the CLI route is ``n3c`` in
``tests/adversarial/test_node_forgeries_are_not_resolved.py``)."""

from __future__ import annotations

import random

import pytest

from evalharness.grading import mirror_js
from evalharness.grading.grade import decide
from evalharness.types import TaskSpec

FILE = "test/calc.test.js"
TEXT = ("const { clamp } = require('../src/calc');\n"
        "describe('clamp', () => {\n"
        "  test('high edge', () => { expect(clamp(12, 0, 10)).toBe(10); });\n"
        "  test(\"low edge\", () => { expect(clamp(-1, 0, 10)).toBe(0); });\n"
        "});\n")
IDS = [f"{FILE}::clamp > high edge", f"{FILE}::clamp > low edge"]


def planned(text: str = TEXT, ids: list[str] = IDS, listing: list[str] | None = None) -> mirror_js.Plan:
    return mirror_js.plan(ids, [FILE], {FILE: text}, listing or [FILE], random.Random(3))


def test_each_required_test_gets_a_mirror_with_a_new_title_in_a_copy_beside_its_file():
    plan = planned()
    assert len(plan.copies) == 1 and plan.why_none == {}
    copy = plan.copies[0]
    assert copy.path.startswith("test/") and copy.path.endswith(".test.js") and copy.path != FILE
    assert set(copy.titles) == set(IDS)
    for original, mirror in copy.titles.items():
        new_title = mirror_js.title_of(mirror)
        assert mirror.startswith(f"{copy.path}::clamp > ") and new_title != mirror_js.title_of(original)
        assert new_title in copy.text and mirror_js.title_of(original) not in copy.text
    # everything else in the copy is the file's own text, quotes kept
    assert copy.text.replace(mirror_js.title_of(copy.titles[IDS[0]]), "high edge").replace(
        mirror_js.title_of(copy.titles[IDS[1]]), "low edge") == TEXT
    assert "test(\"" in copy.text and "test('" in copy.text


def test_junit_worded_ids_are_mirrored_by_their_title():
    plan = planned(ids=["test/calc/test.py::js::high edge"])
    assert list(plan.pairs) == ["test/calc/test.py::js::high edge"]


def test_a_copy_never_takes_a_name_the_work_tree_has():
    rng = random.Random(3)
    first = mirror_js.plan(IDS, [FILE], {FILE: TEXT}, [FILE], rng).copies[0].path
    again = mirror_js.plan(IDS, [FILE], {FILE: TEXT}, [FILE, first], random.Random(3)).copies[0].path
    assert again != first


@pytest.mark.parametrize("extra, why", [
    ("expect(x).toMatchSnapshot();\n", "toMatchSnapshot"),
    ("expect(x).toMatchInlineSnapshot();\n", "toMatchInlineSnapshot"),
    ("const here = __filename;\n", "__filename"),
    ("const n = expect.getState().currentTestName;\n", "getState("),
    ("test.only('x', () => {});\n", ".only"),
])
def test_a_file_whose_copy_could_not_agree_honestly_gets_no_mirror(extra, why):
    plan = planned(TEXT + extra)
    assert plan.copies == () and why.rstrip("(") in plan.why_none[FILE]


def test_a_title_that_is_not_one_plain_literal_gets_no_mirror():
    twice = TEXT + "test('high edge', () => {});\n"
    plan = planned(twice)
    assert IDS[0] in plan.why_none and list(plan.pairs) == [IDS[1]]
    templated = TEXT.replace("'high edge'", "`high ${'edge'}`")
    assert IDS[0] in planned(templated).why_none


PAIRS = {IDS[0]: "test/x-y-10.test.js::clamp > cache key 123456"}


@pytest.mark.parametrize("original, mirror, problem", [
    ("passed", "passed", False),
    ("passed", "failed", True),
    ("passed", "skipped", True),
    ("passed", None, True),
    ("failed", "passed", False),   # the original did not pass: no mirror is needed to keep it unresolved
    ("failed", None, False),
    (None, None, False),
])
def test_a_mirror_must_pass_wherever_its_original_passed(original, mirror, problem):
    statuses = {IDS[0]: original} if original else {}
    if mirror:
        statuses[PAIRS[IDS[0]]] = mirror
    problems = mirror_js.check(PAIRS, statuses, {IDS[0]: original})
    assert bool(problems) is problem, problems


def test_a_mirror_reported_under_a_junit_wording_is_found_by_its_title():
    statuses = {"test/x-y-10/test.py::js::cache key 123456": "failed"}
    assert mirror_js.check(PAIRS, statuses, {IDS[0]: "passed"}) != []
    statuses = {"test/x-y-10/test.py::js::cache key 123456": "passed"}
    assert mirror_js.check(PAIRS, statuses, {IDS[0]: "passed"}) == []


def test_decide_judges_a_pass_its_mirror_does_not_share_tampered():
    import json

    def report(cases):
        return json.dumps({"testResults": [
            {"name": f"/testbed/{path}", "status": "failed" if "failed" in dict(c).values() else "passed",
             "message": "", "assertionResults": [{"ancestorTitles": ["clamp"], "title": t, "status": s}
                                                 for t, s in c]} for path, c in cases.items()]})

    task = TaskSpec(instance_id="t", problem_statement="s", FAIL_TO_PASS=[IDS[0]])
    honest = report({FILE: [("high edge", "passed")], "test/x-y-10.test.js": [("cache key 123456", "passed")]})
    forged = report({FILE: [("high edge", "passed")], "test/x-y-10.test.js": [("cache key 123456", "failed")]})
    outcome, _, _ = decide(task, "jest_json", exit_code=0, log="", junit_xml=honest, patch_applied=True,
                           mirrors=PAIRS)
    assert outcome.value == "resolved"
    outcome, reason, _ = decide(task, "jest_json", exit_code=1, log="", junit_xml=forged, patch_applied=True,
                                mirrors=PAIRS)
    assert outcome.value == "tampered" and "mirror" in reason
    outcome, _, _ = decide(task, "jest_json", exit_code=1, log="", junit_xml=forged, patch_applied=True)
    assert outcome.value == "resolved"  # the same results without the mirror pass: the mirror decides
