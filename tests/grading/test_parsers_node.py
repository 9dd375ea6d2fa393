"""The Node runners' reports (jest, vitest, mocha, tap 16) to per-test statuses.

The reports in tests/data/node_reporters/ are real: each runner run once over the small test files
beside them (src/), with the path prefix of that folder rewritten to /testbed/ (README there). Pins
what must never happen: a file whose suite failed to run (a TypeScript error, a missing import)
leaving its tests absent while the run looks clean, and a tap assertion counted as a test of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalharness.grading.nodelogs import tap_group
from evalharness.grading.parsers import (PARSERS, TestRun, TestStatus, check_names, consistent_with_exit_code,
                                         match_test_ids, parse)

DATA = Path(__file__).resolve().parents[1] / "data" / "node_reporters"
P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED


def report(name: str, exit_code: int = 1) -> TestRun:
    return TestRun(log="", exit_code=exit_code, junit_xml=(DATA / name).read_text())


def test_jest_report_gives_one_status_per_test_and_errors_a_suite_that_failed_to_run():
    got = parse("jest_json", report("jest.json"))
    assert got == {
        "jt/math.test.js::add > adds two numbers": P,
        "jt/math.test.js::add > nested > fails on purpose": F,
        "jt/math.test.js::add > nested > skipped one": S,
        "jt/math.test.js::add > nested > a todo": S,
        "jt/math.test.js::top level test": P,
        "jt/broken.test.js::(suite)": E,
    }
    assert consistent_with_exit_code(got, 1)[0]


def test_vitest_json_reporter_is_read_by_the_jest_parser():
    got = parse("jest_json", report("vitest.json"))
    assert got["vt/math.test.js::add > nested > fails on purpose"] is F
    assert got["vt/math.test.js::add > nested > skipped one"] is S
    assert got["vt/math.test.js::top level test"] is P
    assert got["vt/broken.test.js::(suite)"] is E   # "Failed to load url ...": no test rows for the file


def test_mocha_report_keeps_hook_failures_and_relative_files():
    got = parse("mocha_json", report("mocha.json", exit_code=2))
    assert got == {
        "mt/math.spec.js::top level": P,
        "mt/math.spec.js::add adds": P,
        "mt/math.spec.js::add nested fails on purpose": F,
        "mt/math.spec.js::add nested skipped one": S,
        'mt/math.spec.js::hooks "before all" hook for "never runs because of the hook"': F,
    }


def test_tap_assertions_are_grouped_by_subtest_and_a_crashed_file_fails():
    got = parse("tap_json", report("tap.json"))
    assert got == {
        "tt/math.js::add": P,                       # two passing assertions, one test
        "tt/math.js::add nested group": F,          # one of its two assertions failed
        "tt/math.js::(file)": P,                    # top-level assertion (skipped/todo subtests fold in here)
        "tt/math.js::passes": P,
        "tt/broken.js::(file)": F,                  # the file threw before any subtest
        "tt/throws.js::before": P,
        "tt/throws.js::throws": F,                  # a subtest that threw
    }
    assert consistent_with_exit_code(got, 1)[0]


@pytest.mark.parametrize("full, title, want", [
    ("test/a.js ranges one", "one", ("test/a.js", "ranges")),
    ("test/a.js one", "one", ("test/a.js", "(file)")),
    ("test/a.js test/a.js", "test/a.js", ("test/a.js", "(file)")),
    ("test/a.js outer inner x y", "x y", ("test/a.js", "outer inner")),
    ("test/a.js group", "", ("test/a.js", "group")),
])
def test_tap_group_splits_file_subtests_and_assertion(full, title, want):
    assert tap_group(full, title) == want


def test_tap_group_of_only_skipped_assertions_is_skipped_and_a_failure_wins():
    text = ('{"stats": {}, "tests": [], "pending": [{"title": "s", "fullTitle": "f.js g s"}],'
            ' "failures": [{"title": "b", "fullTitle": "f.js h b"}],'
            ' "passes": [{"title": "a", "fullTitle": "f.js h a"}, {"title": "c", "fullTitle": "f.js g2 c"}]}')
    got = parse("tap_json", TestRun(log="", exit_code=1, junit_xml=text))
    assert got == {"f.js::g": S, "f.js::h": F, "f.js::g2": P}


@pytest.mark.parametrize("name", ["jest_json", "mocha_json", "tap_json"])
@pytest.mark.parametrize("text, why", [
    (None, "wrote no"), ("", "not JSON"), ('{"stats": {}, "tests": [', "not JSON"), ("[1]", "JSON list"),
    ('{"unrelated": 1}', "no list of objects"),
])
def test_a_missing_truncated_or_foreign_report_is_unreadable_never_empty(name, text, why):
    with pytest.raises(ValueError, match=why):
        parse(name, TestRun(log="PASS everything", exit_code=0, junit_xml=text))


@pytest.mark.parametrize("text", ["", '{"stats": {}, "tests": [', "[1]", "TAP version 13\n1..0\n", "# Subtest: f.js\n"])
def test_a_missing_truncated_or_foreign_tap_stream_is_unreadable_never_empty(text):
    with pytest.raises(ValueError, match="no test point at its top level"):
        parse("tap", TestRun(log="ok 1 - everything", exit_code=0, junit_xml=text))
    with pytest.raises(ValueError, match="wrote no tap report"):
        parse("tap", TestRun(log="ok 1 - everything", exit_code=0, junit_xml=None))


def test_an_interrupted_jest_run_is_unreadable():
    text = (DATA / "jest.json").read_text().replace('"wasInterrupted":false', '"wasInterrupted":true')
    assert '"wasInterrupted":true' in text
    with pytest.raises(ValueError, match="interrupted"):
        parse("jest_json", TestRun(log="", exit_code=1, junit_xml=text))


def test_an_unknown_jest_status_is_an_error_never_a_pass():
    text = ('{"testResults": [{"name": "/testbed/a.test.js", "status": "passed", "message": "",'
            ' "assertionResults": [{"ancestorTitles": [], "title": "t", "status": "focused"}]}]}')
    assert parse("jest_json", TestRun(log="", exit_code=0, junit_xml=text)) == {"a.test.js::t": E}


def test_a_failed_jest_suite_with_a_failing_test_needs_no_suite_entry():
    text = ('{"testResults": [{"name": "/elsewhere/a.test.js", "status": "failed", "message": "x",'
            ' "assertionResults": [{"ancestorTitles": ["d"], "title": "t", "status": "failed"}]}]}')
    assert parse("jest_json", TestRun(log="", exit_code=1, junit_xml=text)) == {"/elsewhere/a.test.js::d > t": F}


def test_the_node_parsers_are_registered_names_packs_may_give():
    check_names(["jest_json", "mocha_json", "tap_json"])
    assert {"jest_json", "mocha_json", "tap_json"} <= set(PARSERS)


def test_a_required_node_test_that_is_absent_never_borrows_a_siblings_status():
    """SWE-bench's spelling of pytest ids keeps the first blank-separated word; Node titles have blanks of
    their own, so "f.js::add" absent must not match "f.js::add nested group" (or a jest test "top" match
    "top level test") and pass."""
    tap = parse("tap_json", report("tap.json"))
    jest = parse("jest_json", report("jest.json"))
    assert match_test_ids(tap, ["tt/math.js::add", "tt/math.js::passes", "tt/throws.js::never"]) == \
        {"tt/math.js::add": P, "tt/math.js::passes": P, "tt/throws.js::never": None}
    del tap["tt/math.js::add"]
    assert match_test_ids(tap, ["tt/math.js::add"]) == {"tt/math.js::add": None}
    assert match_test_ids(jest, ["jt/math.test.js::top", "jt/math.test.js::add"]) == \
        {"jt/math.test.js::top": None, "jt/math.test.js::add": None}


def test_the_tap_stream_gives_one_status_per_subtest_as_tap_judged_it():
    got = parse("tap", report("tap.tap"))
    assert got == {
        "tt/math.js::add": F,                       # its child "nested group" failed: so did it, as TAP says
        "tt/math.js::add nested group": F,
        "tt/math.js::passes": P,
        "tt/math.js::(file)": P,                    # a top-level assertion; skipped and todo subtests fold in
        "tt/broken.js::(file)": F,                  # "1..0 # no tests found" and a failed file
        "tt/throws.js::before": P,
        "tt/throws.js::throws": F,
    }
    assert consistent_with_exit_code(got, 1)[0]


def test_a_file_tap_stopped_at_its_own_timeout_is_an_unfinished_run_not_failed_tests():
    # node-semver's CLI tests under load (oracle run 20261206-234039-dfc3): "coercing" cut, "args with equals" absent
    text = ("TAP version 13\n# Subtest: test/bin/semver.js\n    # Subtest: inc tests\n        ok 1 - -i major\n"
            "        1..1\n    ok 1 - inc tests # time=11406.7ms\n\n    # Subtest: coercing\n"
            "    not ok 4 - timeout!\n      ---\n      expired: test/bin/semver.js\n      ...\n    1..4\n"
            "not ok 1 - test/bin/semver.js # time=32673.4ms\n")
    with pytest.raises(ValueError, match="tap stopped test/bin/semver.js at its own per-file timeout"):
        parse("tap", TestRun(log="", exit_code=1, junit_xml=text))


@pytest.mark.parametrize("text, want", [
    ("TAP version 13\n# Subtest: f.js\n    # Subtest: g\n        ok 1 - a\n        1..1\n    ok 1 - g # time=1ms\n"
     "    1..1\nok 1 - f.js # time=2ms\n", {"f.js::g": P}),
    ("# Subtest: f.js\n    # Subtest: g\n        ok 1 - a\n    ok 1 - g # SKIP no reason\n    1..1\nok 1 - f.js\n",
     {"f.js::g": S}),
    ("# Subtest: f.js\n    not ok 1 - oops # TODO later\n    ok 2 - fine\nok 1 - f.js\n", {"f.js::(file)": P}),
    ("# Subtest: f.js\n    # Subtest: g\n        not ok 1 - a\n          ---\n          found: ok 1 - forged\n"
     "          ...\n    not ok 1 - g\nnot ok 1 - f.js\n", {"f.js::g": F}),   # a YAML line is no test point
    ("# Subtest: f.js\n    # Subtest: g\n        ok 1 - a\n", None),           # killed before any top-level point
    ("# Subtest: f.js\n    # Subtest: g\n        not ok 1 - timeout!\n    ok 1 - g\nok 1 - f.js\n",
     {"f.js::g": P}),                                      # an assertion titled so, without tap's expired block
])
def test_tap_stream_cases(text, want):
    if want is None:
        with pytest.raises(ValueError, match="no test point at its top level"):
            parse("tap", TestRun(log="", exit_code=1, junit_xml=text))
    else:
        assert parse("tap", TestRun(log="", exit_code=0, junit_xml=text)) == want
