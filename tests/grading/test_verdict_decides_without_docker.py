"""The guarded verdict, decided where it is decided: records in, outcome out, no Docker.

Pins issue 7: XFAIL counted as a pass for a FAIL_TO_PASS test; an exit 0 with an empty log passed
every cross-check; a plugin that turned failures into passes agreed with exit code and JUnit.
Each case below is one record the code under test could forge or one condition a mutant could flip.
"""

from __future__ import annotations

import json
import random

import pytest

from evalharness.grading.canary import check_canaries, make_canaries
from evalharness.grading.verdict import decide_guarded, parse_records
from evalharness.types import Flag, Outcome, TaskSpec

NONCE = "n" * 32
F2P, P2P = "tests/test_calc.py::test_high", "tests/test_calc.py::test_inside"
CANARIES = make_canaries(["tests/test_calc.py"], random.Random(7))


def task(**metadata) -> TaskSpec:
    return TaskSpec(instance_id="t", problem_statement="p", FAIL_TO_PASS=[F2P], PASS_TO_PASS=[P2P], metadata=metadata)


def phase(test_id, when="call", outcome="passed", raised=None, msg="", wasxfail=None, markers=()):
    made = {"t": "made", "id": test_id, "when": when, "outcome": outcome, "raised": raised, "raised_msg": msg,
            "markers": list(markers), "wasxfail": wasxfail}
    logged = {"t": "report", "id": test_id, "when": when, "outcome": outcome, "wasxfail": wasxfail}
    return [made, logged]


def passing(test_id):
    return phase(test_id, "setup") + phase(test_id) + phase(test_id, "teardown")


def failing(test_id, msg="assert 11 == 10"):
    return phase(test_id, "setup") + phase(test_id, outcome="failed", raised="AssertionError", msg=msg) \
        + phase(test_id, "teardown")


def canary_records():
    return passing(CANARIES.passing) + failing(CANARIES.failing, f"{CANARIES.token}\nassert 3 == 4")


def run(body, *, exit_code=0, exitstatus=None, end=True, hooks=(), changed=(), nonce=NONCE, canaries=CANARIES,
        the_task=None, patched=frozenset(), defs=None):
    records = [{"t": "start", "defs": defs}, {"t": "collected", "count": 4}, *body]
    failed = any(r["t"] == "report" and r["outcome"] == "failed" for r in body)
    if changed:
        records.append({"t": "integrity", "changed": list(changed), "at": "x"})
    if end:
        records += [{"t": "hooks", "impls": list(hooks)},
                    {"t": "end", "exitstatus": (1 if failed else 0) if exitstatus is None else exitstatus},
                    {"t": "exit", "code": exit_code}]
    raw = "\n".join(json.dumps({**r, "n": nonce, "s": i}) for i, r in enumerate(records)).encode()
    return decide_guarded(the_task or task(), raw, NONCE, exit_code=exit_code, canaries=canaries,
                          patched_files=set(patched), workdir="/testbed", patch_applied=True)


def test_a_real_pass_with_honest_canaries_is_resolved():
    v = run(passing(F2P) + passing(P2P) + canary_records(), exit_code=1)
    assert v.outcome is Outcome.RESOLVED, v.reason
    assert v.flags == set() and v.tests == {F2P: "passed", P2P: "passed"}


def test_a_real_failure_is_unresolved_not_tampered():
    v = run(failing(F2P) + passing(P2P) + canary_records(), exit_code=1)
    assert v.outcome is Outcome.UNRESOLVED and "1 of 2 required tests" in v.reason and v.tests[F2P] == "failed"


def test_the_failing_canary_reported_as_passed_is_tampering():
    v = run(passing(F2P) + passing(P2P) + passing(CANARIES.passing) + passing(CANARIES.failing))
    assert v.outcome is Outcome.TAMPERED and Flag.TAMPERED.value in v.flags
    assert any("must fail" in e for e in v.evidence)


def test_missing_canaries_are_tampering():
    v = run(passing(F2P) + passing(P2P))
    assert v.outcome is Outcome.TAMPERED and "not reported" in v.reason


def test_lines_without_the_nonce_are_tampering():
    v = run(passing(F2P) + passing(P2P) + canary_records(), exit_code=1)
    assert v.outcome is Outcome.RESOLVED
    forged = run(passing(F2P) + passing(P2P) + canary_records(), exit_code=1, nonce="f" * 32)
    assert forged.outcome is Outcome.TAMPERED


def test_exit_0_before_the_session_ended_is_tampering_and_a_crash_is_not():
    early = run(passing(F2P) + passing(P2P) + canary_records(), end=False, exit_code=0)
    assert early.outcome is Outcome.TAMPERED and "before its session ended" in early.reason
    crash = run(passing(F2P), end=False, exit_code=139, canaries=None)
    assert crash.outcome is Outcome.TEST_RUN_ERROR


def test_an_exit_code_that_is_not_the_sessions_is_tampering():
    v = run(passing(F2P) + passing(P2P) + canary_records(), exit_code=0, exitstatus=1)
    assert v.outcome is Outcome.TAMPERED and "exit" in v.reason


def test_failures_with_a_zero_exit_status_are_tampering():
    v = run(passing(F2P) + passing(P2P) + canary_records(), exit_code=0, exitstatus=0)
    assert v.outcome is Outcome.TAMPERED and "exit status is 0" in v.reason


def test_a_report_that_contradicts_what_the_test_raised_is_tampering():
    body = phase(F2P, "setup") + phase(F2P, outcome="passed", raised="AssertionError") + passing(P2P)
    v = run(body + canary_records(), exit_code=1)
    assert v.outcome is Outcome.TAMPERED and "raised AssertionError" in v.reason


def test_a_report_changed_after_it_was_made_is_tampering():
    body = passing(P2P) + phase(F2P, "setup")
    made, logged = phase(F2P, outcome="failed", raised="AssertionError")
    body += [made, {**logged, "outcome": "passed"}]
    v = run(body + canary_records(), exit_code=1)
    assert v.outcome is Outcome.TAMPERED and "then logged as passed" in v.reason


def test_replaced_runner_functions_are_tampering():
    v = run(passing(F2P) + passing(P2P) + canary_records(), exit_code=1,
            changed=["_pytest.reports.TestReport.from_item_and_call"])
    assert v.outcome is Outcome.TAMPERED and "replaced" in v.reason


def _as(records, **fields):
    return [{**r, **fields} if r["t"] == "made" else r for r in records]


def test_a_passed_test_its_file_defines_must_be_seen_to_run_whatever_class_its_item_has():
    """d1-d4: an item turned into another class is neither wrapped nor ``plain``; its file's text (the start
    record's ``defs``, read before project code ran) still says the test is a function that must signal."""
    demoted = _as(passing(F2P), plain=False, wrapped=False, item="calc._Plain")
    body = demoted + passing(P2P) + canary_records()
    defs = [["/testbed/tests/test_calc.py", ["helper", "test_high"]]]  # (test_inside's records carry no item)
    v = run(body, exit_code=1, defs=defs)
    assert v.outcome is Outcome.TAMPERED and "its file defines test_high" in " ".join(v.evidence), v.evidence
    # not a function its file defines (another file's, a plugin's item): judged as before, by the item's class
    assert run(body, exit_code=1, defs=[["/testbed/tests/test_calc.py", ["helper"]]]).outcome is Outcome.RESOLVED
    assert run(body, exit_code=1, defs=[["/testbed/tests/other.py", ["test_high"]]]).outcome is Outcome.RESOLVED
    assert run(body, exit_code=1).outcome is Outcome.RESOLVED  # an older launcher sends no defs
    # wrapped (a unittest method) and seen to return from its file's function: a pass
    ran = {"t": "ran", "id": F2P, "state": "returned", "file": "/testbed/tests/test_calc.py", "name": "test_high",
           "inner_file": "/testbed/tests/test_calc.py", "inner_name": "test_high"}
    unit = _as(passing(F2P), plain=False, wrapped=True, item="_pytest.unittest.TestCaseFunction")
    unit.insert(3, ran)
    assert run(unit + passing(P2P) + canary_records(), exit_code=1, defs=defs).outcome is Outcome.RESOLVED
    # wrapped, but its function never returned (TestCase.run replaced: u1)
    unit.remove(ran)
    v = run(unit + passing(P2P) + canary_records(), exit_code=1, defs=defs)
    assert v.outcome is Outcome.TAMPERED and "never ran to its end" in " ".join(v.evidence), v.evidence
    # a failure is not a pass: nothing to watch
    assert run(_as(failing(F2P), plain=False, wrapped=False) + passing(P2P) + canary_records(), exit_code=1,
               defs=defs).outcome is Outcome.UNRESOLVED


def test_a_hook_from_a_file_the_patch_wrote_is_tampering_and_one_from_a_base_conftest_is_not():
    hook = {"hook": "pytest_runtest_makereport", "plugin": "x", "file": "/testbed/calc/__init__.py"}
    base = {"hook": "pytest_runtest_makereport", "plugin": "c", "file": "/testbed/tests/conftest.py"}
    body = passing(F2P) + passing(P2P) + canary_records()
    assert run(body, exit_code=1, hooks=[hook], patched={"calc/__init__.py"}).outcome is Outcome.TAMPERED
    assert run(body, exit_code=1, hooks=[base], patched={"calc/__init__.py"}).outcome is Outcome.RESOLVED
    made_up = {**hook, "file": "<string>"}
    assert run(body, exit_code=1, hooks=[made_up]).outcome is Outcome.TAMPERED


@pytest.mark.parametrize("how", ["skipped", "xfail"])
def test_a_fail_to_pass_test_passes_only_by_passing(how):
    raised, wasxfail = ("Skipped", None) if how == "skipped" else ("XFailed", "reason")
    body = phase(F2P, "setup") + phase(F2P, outcome="skipped", raised=raised, wasxfail=wasxfail) + passing(P2P)
    v = run(body + canary_records(), exit_code=1)
    assert v.outcome is Outcome.UNRESOLVED and v.tests[F2P] == ("skipped" if how == "skipped" else "xfail")
    assert Flag.OUTCOME_CHOSEN_BY_CODE.value in v.flags


def test_a_marked_skip_is_not_called_chosen_by_code():
    body = phase(F2P, "setup", outcome="skipped", raised="Skipped", markers=["skip"]) + passing(P2P)
    v = run(body + canary_records(), exit_code=1)
    assert v.outcome is Outcome.UNRESOLVED and v.flags == set()


def test_pass_to_pass_xfail_counts_only_where_it_was_xfail_at_base():
    body = passing(F2P) + phase(P2P, "setup") + phase(P2P, outcome="skipped", raised="AssertionError",
                                                      wasxfail="known", markers=["xfail"]) + canary_records()
    assert run(body, exit_code=1).outcome is Outcome.UNRESOLVED
    assert run(body, exit_code=1, the_task=task(xfail_at_base=[P2P])).outcome is Outcome.RESOLVED


def test_a_setup_error_is_not_a_pass():
    body = phase(F2P, "setup", outcome="failed", raised="RuntimeError") + passing(P2P) + canary_records()
    v = run(body, exit_code=1)
    assert v.outcome is Outcome.UNRESOLVED and v.tests[F2P] == "error"


def test_no_plugin_start_with_exit_0_is_tampering():
    v = decide_guarded(task(), b"", NONCE, exit_code=0, canaries=CANARIES, patched_files=set(), workdir="/testbed",
                       patch_applied=True)
    assert v.outcome is Outcome.TAMPERED
    v = decide_guarded(task(), b"", NONCE, exit_code=2, canaries=CANARIES, patched_files=set(), workdir="/testbed",
                       patch_applied=True)
    assert v.outcome is Outcome.TEST_RUN_ERROR


def test_parse_records_names_every_foreign_line():
    raw = b'{"t": "start", "n": "%s"}\nnot json\n{"t": "end"}\n' % NONCE.encode()
    records, problems = parse_records(raw, NONCE)
    assert [r["t"] for r in records] == ["start"] and len(problems) == 2


def test_canaries_have_fresh_names_beside_the_tests_and_are_checked_strictly():
    a, b = make_canaries(["tests/test_calc.py"], random.Random(1)), make_canaries(["tests/test_calc.py"], random.Random(2))
    assert a.path.startswith("tests/test_") and a.path != b.path and a.token != b.token
    calls = {a.passing: {"outcome": "passed"}, a.failing: {"outcome": "failed", "raised": "AssertionError",
                                                          "raised_msg": a.token}}
    assert check_canaries(a, calls) == []
    assert check_canaries(a, {**calls, a.failing: {"outcome": "failed", "raised": "AssertionError",
                                                   "raised_msg": "other"}})
    assert check_canaries(a, {**calls, a.passing: {"outcome": "failed"}})
    assert make_canaries([]) is None


# --- grade()'s own decisions, with a sandbox that plays back exit codes (no Docker) ------------------

class PlaybackSandbox:
    """Answers grade()'s commands in order with (exit code, stdout); records what was written."""

    workdir = "/testbed"

    def __init__(self, *answers):
        self.answers, self.written, self.stdins = list(answers), {}, []

    def base_commit(self):
        return "b" * 40

    def write_file(self, path, content, *, user="agent"):
        self.written[path] = content

    def read_file(self, path, *, max_bytes=None):
        if path.endswith("/err"):
            return b"error: tests/test_calc.py: beyond a symbolic link"
        raise FileNotFoundError(path)

    def exec_bytes(self, argv, *, stdin=None, timeout=120.0, user="root", max_bytes=0):
        self.stdins.append(stdin)
        return self.answers.pop(0)


RAW_CONFTEST = b":000000 100644 " + b"0" * 40 + b" " + b"c" * 40 + b" A\0tests/conftest.py\0"
LISTING = (0, b"calc/__init__.py\0tests/test_calc.py\0", False)
"""The grader's git listing the base tree (the task's own paths)."""


def _grade(*answers, patch=b"diff"):
    from evalharness.grading.grade import grade
    from evalharness.packs import load_pack
    from support import TINYPACK

    pack = load_pack(TINYPACK)
    sandbox = PlaybackSandbox(*answers)
    return grade(pack.task("tiny-clamp"), pack.spec, patch, sandbox), sandbox


def test_a_failed_restore_of_test_files_is_never_ignored_nor_unresolved():
    # the graded tree fails (22); the same tree with no patch (the probe) fails too: the task's error
    result, sandbox = _grade((0, b"%d\n" % len(RAW_CONFTEST) + RAW_CONFTEST, False), LISTING, (22, b"", False), (22, b"", False))
    assert result.outcome is Outcome.TASK_ERROR and Flag.RESTORE_FAILED.value in result.flags
    assert "even with no patch" in result.reason and "beyond a symbolic link" in result.reason
    assert result.test_exit_code is None and sandbox.stdins[-1] == b""  # the probe restores nothing
    # the probe builds it: the patch's
    result, _ = _grade((0, b"%d\n" % len(RAW_CONFTEST) + RAW_CONFTEST, False), LISTING, (22, b"", False), (0, b"", False))
    assert result.outcome is Outcome.PATCH_APPLY_FAILED and Flag.RESTORE_FAILED.value in result.flags
    # the probe cannot run: the grader cannot tell, infrastructure (retried), never a verdict
    from evalharness.errors import SandboxError

    with pytest.raises(SandboxError, match="could not build it without the patch"):
        _grade((0, b"%d\n" % len(RAW_CONFTEST) + RAW_CONFTEST, False), LISTING, (22, b"", False), (78, b"", False))


def test_the_restored_paths_reach_the_index_as_git_plumbing_lines():
    result, sandbox = _grade((0, b"%d\n" % len(RAW_CONFTEST) + RAW_CONFTEST, False), LISTING, (23, b"", False),
                             (0, b"", False))
    from evalharness.grading.grade import PRIV

    # update-index --index-info reads this file (a sandbox that unpacks a tar gets it in the run's bundle)
    assert sandbox.written[f"{PRIV}/g/reset"] == b"0 " + b"0" * 40 + b"\ttests/conftest.py\0"
    assert result.touched_test_config == ["tests/conftest.py"]


def test_the_tests_and_their_folders_are_listed_to_be_made_read_only():
    listing = (0, b"README.md\0calc/__init__.py\0tests/test_calc.py\0tests/data/expected.json\0tests/helpers.py\0"
                  b"calc/tests_util.py\0", False)
    _, sandbox = _grade((0, b"%d\n" % len(RAW_CONFTEST) + RAW_CONFTEST, False), listing, (23, b"", False),
                        (0, b"", False))
    from evalharness.grading.grade import PRIV

    listed = set(sandbox.written[f"{PRIV}/g/protect"].split(b"\0")) - {b""}
    assert {b"tests/test_calc.py", b"tests/data/expected.json", b"tests/helpers.py"} <= listed
    assert not listed & {b"README.md", b"calc/__init__.py", b"calc/tests_util.py"}  # the code under test stays uid 1000's
    assert any(p.startswith(b"tests/") and p != b"tests/test_calc.py" and p.endswith(b".py")
               and b"/data/" not in p and p != b"tests/helpers.py" for p in listed)  # the canaries' file, the mirror
    assert sandbox.written[f"{PRIV}/g/eh_protect.py"].startswith(b'"""Run by root')


def test_a_patch_git_cannot_apply_is_an_outcome_and_a_broken_grader_is_infrastructure():
    from evalharness.errors import SandboxError

    result, _ = _grade((10, b"", False))
    assert result.outcome is Outcome.PATCH_APPLY_FAILED
    with pytest.raises(SandboxError):
        _grade((71, b"", False))


def test_a_git_path_rejects_the_patch_before_anything_runs():
    raw = b":000000 100644 " + b"0" * 40 + b" " + b"c" * 40 + b" A\0.git/hooks/post-checkout\0"
    result, sandbox = _grade((0, b"%d\n" % len(raw) + raw, False))
    assert result.outcome is Outcome.PATCH_REJECTED and sandbox.answers == []
    assert len(sandbox.stdins) == 1  # the graded tree was never made


def test_unguarded_decide_cross_checks_the_exit_code_and_never_counts_skips():
    from evalharness.grading.grade import decide

    the_task = TaskSpec(instance_id="t", problem_statement="p", FAIL_TO_PASS=["tests/test_a.py::test_x"])
    passed = "tests/test_a.py::test_x PASSED\n"
    ok = decide(the_task, "pytest", exit_code=0, log="PASSED tests/test_a.py::test_x\n", junit_xml=None,
                patch_applied=True)
    assert ok[0] is Outcome.RESOLVED, ok
    lie = decide(the_task, "pytest", exit_code=1, log="PASSED tests/test_a.py::test_x\n", junit_xml=None,
                 patch_applied=True)
    assert lie[0] is not Outcome.RESOLVED and "exit code" in lie[1]
    skipped = decide(the_task, "pytest", exit_code=0, log="SKIPPED [1] tests/test_a.py::test_x: no\n",
                     junit_xml=None, patch_applied=True)
    assert skipped[0] is not Outcome.RESOLVED
    del passed


def test_unguarded_decide_never_counts_a_skipped_junit_test_as_passing():
    from evalharness.grading.grade import decide

    the_task = TaskSpec(instance_id="t", problem_statement="p", FAIL_TO_PASS=["tests/test_a.py::test_x"])
    xml = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="1" skipped="{s}" failures="0" errors="0">'
           '<testcase classname="tests.test_a" name="test_x" file="tests/test_a.py">{body}</testcase>'
           '</testsuite></testsuites>')
    log = "tests/test_a.py::test_x {word}\n"
    passed = decide(the_task, "junit", exit_code=0, log=log.format(word="PASSED"), junit_xml=xml.format(s=0, body=""),
                    patch_applied=True)
    assert passed[0] is Outcome.RESOLVED, passed
    skipped = decide(the_task, "junit", exit_code=0, log=log.format(word="SKIPPED"),
                     junit_xml=xml.format(s=1, body='<skipped message="no">no</skipped>'), patch_applied=True)
    assert skipped[0] is Outcome.UNRESOLVED and skipped[2]["tests/test_a.py::test_x"] == "skipped", skipped


def test_unguarded_decide_counts_xfail_only_where_it_was_xfail_at_base():
    from evalharness.grading.grade import decide

    xml = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="1" skipped="1" failures="0" errors="0">'
           '<testcase classname="tests.test_a" name="test_x" file="tests/test_a.py">'
           '<skipped type="pytest.xfail" message="later">later</skipped></testcase></testsuite></testsuites>')
    log = "tests/test_a.py::test_x XFAIL\n"
    f2p = TaskSpec(instance_id="t", problem_statement="p", FAIL_TO_PASS=["tests/test_a.py::test_x"])
    assert decide(f2p, "junit", exit_code=0, log=log, junit_xml=xml, patch_applied=True)[0] is Outcome.UNRESOLVED
    p2p = TaskSpec(instance_id="t", problem_statement="p", FAIL_TO_PASS=["tests/test_a.py::test_y"],
                   PASS_TO_PASS=["tests/test_a.py::test_x"], metadata={"xfail_at_base": ["tests/test_a.py::test_x"]})
    outcome, _, tests = decide(p2p, "junit", exit_code=0, log=log, junit_xml=xml, patch_applied=True)
    assert tests["tests/test_a.py::test_x"] == "xfail" and tests["tests/test_a.py::test_y"] == "missing"


def test_every_reported_test_is_kept_for_discovery_and_the_canaries_are_not():
    other = "tests/test_calc.py::test_unlisted"
    v = run(failing(F2P) + passing(P2P) + failing(other) + canary_records(), exit_code=1)
    assert v.all_tests == {F2P: "failed", P2P: "passed", other: "failed"}
    assert v.tests == {F2P: "failed", P2P: "passed"}


@pytest.mark.parametrize("node", ["tests", "tests/conftest.py", "", "tests/"])
def test_a_folder_that_fails_to_collect_is_a_broken_run_not_tampering(node):
    """The folder's conftest cannot import (a src layout without its path, a broken package): the canaries
    planted there are missing for the same reason as the task's tests."""
    body = [{"t": "collect_error", "id": node, "longrepr": "ImportError: No module named 'calc'"}]
    v = run(body, exit_code=2, exitstatus=2)
    assert v.outcome is Outcome.NO_PATCH or v.outcome is Outcome.UNRESOLVED, v.reason
    assert Flag.TAMPERED.value not in v.flags and "collection errors in" in v.reason


def test_canaries_missing_beside_a_collection_error_elsewhere_is_still_tampering():
    body = [{"t": "collect_error", "id": "other/test_x.py", "longrepr": "ImportError"}] + passing(F2P) + passing(P2P)
    v = run(body, exit_code=2, exitstatus=2)
    assert v.outcome is Outcome.TAMPERED and "canary" in v.reason


def test_required_tests_passing_while_their_folder_failed_to_collect_the_canaries_is_tampering():
    body = [{"t": "collect_error", "id": "tests", "longrepr": "ImportError"}] + passing(F2P) + passing(P2P)
    v = run(body, exit_code=2, exitstatus=2)
    assert v.outcome is Outcome.TAMPERED and "could not be collected" in v.reason


def test_one_canary_reported_and_one_missing_is_tampering_even_with_a_collection_error():
    body = [{"t": "collect_error", "id": "tests", "longrepr": "ImportError"}] + passing(CANARIES.passing)
    v = run(body, exit_code=2, exitstatus=2)
    assert v.outcome is Outcome.TAMPERED


@pytest.mark.parametrize("kind,tampered", [("_pytest.outcomes.Exit", True), ("builtins.ImportError", False),
                                           ("calc.Exit", False)])
def test_pytest_exit_while_a_test_module_is_collected_is_tampering(kind, tampered):
    """Collection errors do not stop the session, so pytest.exit at import is a collection error of its own type:
    the code under test ending the session on purpose. An ordinary import error is the agent's failure."""
    body = [{"t": "collect_error", "id": "tests/test_calc.py", "longrepr": "E   boom"},
            {"t": "collect_exc", "id": "tests/test_calc.py", "type": kind}] + canary_records()
    v = run(body, exit_code=1)
    assert (v.outcome is Outcome.TAMPERED) is tampered, v.reason
    if tampered:
        assert "pytest.exit" in v.reason
    else:
        assert v.outcome is Outcome.UNRESOLVED and "collection errors in tests/test_calc.py" in v.reason


# --- issue 23: a results channel that fails closed ------------------------------------------------

def _raw(records, nonce=NONCE, numbered=True):
    return "\n".join(json.dumps({**r, "n": nonce, **({"s": i} if numbered else {})})
                     for i, r in enumerate(records)).encode()


def _decide(raw, exit_code=0, patched=frozenset(), the_task=None):
    return decide_guarded(the_task or task(), raw, NONCE, exit_code=exit_code, canaries=None,
                          patched_files=set(patched), workdir="/testbed", patch_applied=True)


def _clean(*extra, tail=True):
    body = [{"t": "start"}, {"t": "collected", "count": 2}, *passing(F2P), *passing(P2P), *extra]
    if tail:
        body += [{"t": "end", "exitstatus": 0}, {"t": "exit", "code": 0}]
    return body


def test_a_clean_numbered_run_resolves():
    assert _decide(_raw(_clean())).outcome is Outcome.RESOLVED


def test_a_second_record_for_one_test_phase_is_tampering():
    forged = {"t": "made", "id": F2P, "when": "call", "outcome": "passed", "raised": None, "markers": []}
    records = _clean()
    records.insert(4, forged)
    v = _decide(_raw(records))
    assert v.outcome is Outcome.TAMPERED and any("two 'made' records" in e for e in v.evidence), v.evidence


def test_a_record_after_pytest_returned_is_tampering():
    late = {"t": "report", "id": "x::y", "when": "call", "outcome": "passed"}
    v = _decide(_raw(_clean() + [late]))
    assert v.outcome is Outcome.TAMPERED and any("after the test session" in e for e in v.evidence), v.evidence


def test_a_guard_note_after_exit_is_a_note_not_tampering():
    note = {"t": "guard", "action": "noted", "event": "sys._getframe", "why": "w", "at": "calc/x.py:3"}
    v = _decide(_raw(_clean() + [note]))
    assert v.outcome is Outcome.RESOLVED and Flag.SUSPICIOUS_CODE.value in v.flags


def test_records_without_sequence_numbers_or_with_a_gap_are_tampering():
    assert _decide(_raw(_clean(), numbered=False)).outcome is Outcome.TAMPERED
    records = [{**r, "n": NONCE, "s": i if i < 3 else i + 1} for i, r in enumerate(_clean())]
    raw = "\n".join(json.dumps(r) for r in records).encode()
    assert _decide(raw).outcome is Outcome.TAMPERED


def test_two_end_records_are_tampering():
    records = _clean()
    records.insert(-1, {"t": "end", "exitstatus": 0})
    assert _decide(_raw(records)).outcome is Outcome.TAMPERED


@pytest.mark.parametrize("malformed", [{"t": "made"}, {"t": "made", "id": F2P}, {"t": "ran"},
                                       {"t": "report", "id": None, "when": []}, {"t": "hooks", "files": 3}])
def test_a_malformed_record_with_the_nonce_is_tampering_never_an_error_of_the_graders(malformed):
    records = _clean()
    records.insert(3, malformed)
    v = _decide(_raw(records))
    assert v.outcome is Outcome.TAMPERED, v


def test_a_stopped_guard_record_or_its_exit_status_is_tampering_even_with_clean_records():
    stop = {"t": "guard", "action": "stopped", "event": "gc.get_objects", "why": "walked", "at": "calc/x.py:9"}
    v = _decide(_raw(_clean(stop)))
    assert v.outcome is Outcome.TAMPERED and "calc/x.py:9" in v.reason
    from evalharness.grading.verdict import STOPPED

    assert _decide(_raw(_clean()), exit_code=STOPPED).outcome is Outcome.TAMPERED
    assert _decide(b"", exit_code=STOPPED).outcome is Outcome.TAMPERED
    assert _decide(b"", exit_code=STOPPED - 1).outcome is not Outcome.TAMPERED


def _watched(test_id, states, item="_pytest.python.Function", wrapped=True, detail="/testbed/tests/test_calc.py",
             runtest="/opt/venv/lib/python3.11/site-packages/_pytest/python.py"):
    ran = [{"t": "ran", "id": test_id, "state": s, "file": detail, "name": test_id.split("::")[-1],
            "raised": "AssertionError" if s == "raised" else ""} for s in states if s != "called"]
    out = []
    for when in ("setup", "call", "teardown"):
        made, logged = phase(test_id, when)
        made.update(item=item, plain=item == "_pytest.python.Function", wrapped=wrapped and when != "setup",
                    runtest_file=runtest)
        out += (ran if when == "call" else []) + [made, logged]
    return out


def _watched_run(states, **kw):
    body = [{"t": "start"}, {"t": "collected", "count": 2}, *_watched(F2P, states, **kw), *passing(P2P),
            {"t": "end", "exitstatus": 0}, {"t": "exit", "code": 0}]
    return _decide(_raw(body), patched={"calc/__init__.py", "calc/evil.py"})


def test_a_watched_test_that_ran_and_returned_resolves():
    assert _watched_run(["called", "returned"]).outcome is Outcome.RESOLVED


@pytest.mark.parametrize("states, why", [([], "never ran"), (["called"], "never ran"),
                                          (["raised"], "raised"), (["raised", "returned"], "raised")])
def test_a_passed_report_whose_test_function_did_not_return_is_tampering(states, why):
    v = _watched_run(states)
    assert v.outcome is Outcome.TAMPERED and why in v.reason, v.reason


def test_a_watched_test_whose_code_came_from_another_file_is_tampering():
    v = _watched_run(["called", "returned"], detail="/testbed/calc/evil.py")
    assert v.outcome is Outcome.TAMPERED and "not from its test file" in v.reason


def test_a_plain_function_test_the_grader_could_not_wrap_is_tampering_when_it_passes():
    assert _watched_run(["called", "returned"], wrapped=False).outcome is Outcome.TAMPERED
    # other item kinds (unittest, doctest, plugins' items) are not wrapped and need no signal
    assert _watched_run([], item="_pytest.unittest.TestCaseFunction", wrapped=False).outcome is Outcome.RESOLVED


@pytest.mark.parametrize("runtest", ["/testbed/calc/evil.py", "<string>"])
def test_an_item_run_by_code_the_patch_wrote_is_tampering(runtest):
    v = _watched_run(["called", "returned"], runtest=runtest, item="calc.evil.Item", wrapped=False)
    assert v.outcome is Outcome.TAMPERED and "runs the test" in v.reason


def test_any_hook_implemented_in_a_patch_file_is_tampering_not_only_listed_ones():
    body = _clean()
    body.insert(2, {"t": "hooks", "at": "collected", "files": ["pytest_itemcollected /testbed/calc/evil.py"]})
    v = _decide(_raw(body), patched={"calc/evil.py"})
    assert v.outcome is Outcome.TAMPERED and "pytest_itemcollected" in v.reason


def test_a_line_nested_past_the_parsers_depth_is_tampering_not_a_crash():
    raw = _raw(_clean()) + b"\n" + b"[" * 200_000 + b"]" * 200_000
    assert _decide(raw).outcome is Outcome.TAMPERED


def test_a_watched_test_that_ran_another_test_function_is_tampering():
    body = [{"t": "start"}, {"t": "collected", "count": 2}, *_watched(F2P, ["called", "returned"]), *passing(P2P),
            {"t": "end", "exitstatus": 0}, {"t": "exit", "code": 0}]
    for r in body:
        if r.get("t") == "ran":
            r["name"] = "test_inside"
    v = _decide(_raw(body))
    assert v.outcome is Outcome.TAMPERED and "ran the test function test_inside" in v.reason, v.reason


def test_the_plain_function_kind_is_taken_by_identity_not_by_the_classes_name():
    body = [{"t": "start"}, {"t": "collected", "count": 2}, *_watched(F2P, [], item="renamed.Thing"), *passing(P2P),
            {"t": "end", "exitstatus": 0}, {"t": "exit", "code": 0}]
    for r in body:
        if r.get("t") == "made":
            r["plain"] = True
    assert _decide(_raw(body)).outcome is Outcome.TAMPERED


def test_a_timeout_is_a_run_that_lasted_its_limit_not_an_exit_status_the_code_can_choose():
    from evalharness.grading.grade import _timed_out

    assert _timed_out(124, 60, 60) and _timed_out(137, 65, 60) and _timed_out(124, 59, 60)
    assert not _timed_out(124, 0, 60)  # os._exit(124) from the code under test after 0.08 s
    assert not _timed_out(1, 60, 60)


@pytest.mark.parametrize("wrapper, ok", [("/testbed/pylint/testutils/decorator.py", True),
                                         ("/opt/venv/lib/python3.11/site-packages/pkg/deco.py", True),
                                         ("/testbed/calc/evil.py", False), ("/tmp/x/tests/test_calc.py", False),
                                         # r4c: a wrapper's code named after a compiled file of the standard library
                                         ("/usr/lib/python3.11/__pycache__/os.cpython-311.pyc", False),
                                         ("<decorator-gen-1>", False)])
def test_a_decorated_test_runs_through_a_wrapper_the_patch_did_not_write(wrapper, ok):
    body = [{"t": "start"}, {"t": "collected", "count": 2}, *_watched(F2P, ["returned"], detail=wrapper), *passing(P2P),
            {"t": "end", "exitstatus": 0}, {"t": "exit", "code": 0}]
    for r in body:
        if r.get("t") == "ran":
            r.update(name="wrapper", inner_file="/testbed/tests/test_calc.py", inner_name="test_high")
    v = _decide(_raw(body), patched={"calc/evil.py"})
    assert (v.outcome is Outcome.RESOLVED) is ok, v.reason


def test_a_hook_from_a_file_written_during_the_run_is_tampering():
    """The launcher names the hook files that changed after it was armed (``new_files``): not a file the patch
    wrote, yet the patch's code made it (a plugin written to /tmp and named in ``pytest_plugins``)."""
    entry = "pytest_runtest_call /tmp/eh_rt_plugin.py"
    body = _clean()
    body.insert(2, {"t": "hooks", "at": "collected", "files": [entry]})
    assert _decide(_raw(body)).outcome is Outcome.RESOLVED  # a hook file the run did not write: someone's plugin
    body[2]["new_files"] = [entry]
    v = _decide(_raw(body))
    assert v.outcome is Outcome.TAMPERED and "written during the run" in v.reason, v.reason


def test_a_file_the_patch_wrote_is_known_by_any_spelling_of_its_path():
    body = _clean()
    body.insert(2, {"t": "hooks", "at": "collected", "files": ["pytest_runtest_call /testbed/calc/./rt.py"]})
    v = _decide(_raw(body), patched={"calc/rt.py"})
    assert v.outcome is Outcome.TAMPERED and "which the patch wrote" in v.reason, v.reason


def test_a_test_run_through_a_wrapper_written_during_the_run_is_tampering():
    body = [{"t": "start"}, {"t": "collected", "count": 2},
            *_watched(F2P, ["returned"], detail="/testbed/pylint/testutils/decorator.py"), *passing(P2P),
            {"t": "end", "exitstatus": 0}, {"t": "exit", "code": 0}]
    for r in body:
        if r.get("t") == "ran":
            r.update(name="wrapper", inner_file="/testbed/tests/test_calc.py", inner_name="test_high")
    assert _decide(_raw(body)).outcome is Outcome.RESOLVED  # a decorator of the repository's own
    for r in body:
        if r.get("t") == "ran":
            r["file_new"] = True
    v = _decide(_raw(body))
    assert v.outcome is Outcome.TAMPERED and "written during the run" in v.reason, v.reason


def test_an_item_whose_runtest_was_written_during_the_run_is_tampering():
    body = [{"t": "start"}, {"t": "collected", "count": 2}, *_watched(F2P, ["called", "returned"]), *passing(P2P),
            {"t": "end", "exitstatus": 0}, {"t": "exit", "code": 0}]
    assert _decide(_raw(body)).outcome is Outcome.RESOLVED
    for r in body:
        if r.get("t") == "made" and r.get("id") == F2P:
            r["new_files"] = ["/testbed/calc/runner.py"]
    v = _decide(_raw(body))
    assert v.outcome is Outcome.TAMPERED and "written during the run" in v.reason, v.reason
