"""The verdict of a guarded pytest run: pure, from the plugin's records to an outcome.

The code under test runs in the test process and can reach anything there, so nothing the
process says is taken on its word. A run is ``tampered`` when its own records contradict each
other or the grader: a line without the grader's nonce, a report whose outcome is not what the
test raised, pytest's report-making functions replaced, a hook implementation from a file the
patch wrote, canaries reported wrong or missing, an exit code that is not the session's, or a
process that exited 0 before its session ended. Only then come the required tests: a
FAIL_TO_PASS test passes only by passing; a PASS_TO_PASS test by passing, or by an expected
failure where the task says it was one at base (``metadata.xfail_at_base``).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field

from evalharness.grading.canary import Canaries, check_canaries
from evalharness.grading.mirror import MirrorPlan, disagreeing_pairs, disagreements
from evalharness.grading.parsers import TestStatus, match_test_ids
from evalharness.types import Flag, Outcome, TaskSpec

_SKIP_RAISED = {"Skipped", "Exit"}
_XFAIL_RAISED = {"XFailed"}


@dataclass
class Verdict:
    outcome: Outcome
    reason: str
    tests: dict[str, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    evidence: list[str] = field(default_factory=list)
    all_tests: dict[str, str] = field(default_factory=dict)
    """Status of every test the run reported (canaries left out): what discovery of a task's lists reads."""
    recheck: list[tuple[str, str]] = field(default_factory=list)
    """Only mirrors disagreed: (original, mirror) pairs to run alone (``mirror.recheck_alone``) before deciding."""
    session_status: dict[str, str] = field(default_factory=dict)


STOPPED = 86
"""The launcher's exit status when its audit hook stopped the run (``data/eh_pytest.py``)."""
_ONCE = ("start", "collected", "end", "exit")
"""Record types a run writes once."""


def parse_records(raw: bytes, nonce: str) -> tuple[list[dict], list[str]]:
    """The plugin's lines, and problems: lines that are not JSON or lack the nonce."""
    records, problems = [], []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: a line nested deeper than the parser goes
            problems.append(f"results line {number} is not the grader's JSON")
            continue
        if not isinstance(record, dict) or record.get("n") != nonce:
            problems.append(f"results line {number} was not written by the grader's plugin (wrong or no nonce)")
            continue
        records.append(record)
    return records, problems


def decide_guarded(task: TaskSpec, raw: bytes, nonce: str, *, exit_code: int, canaries: Canaries | None,
                   patched_files: set[str], workdir: str, patch_applied: bool, mirrors: MirrorPlan | None = None
                   ) -> Verdict:
    """The verdict of a guarded run. Records are attacker-shaped data: whatever cannot be read as the
    grader's own records is ``tampered``, never an error of the grader's."""
    try:
        return _decide_guarded(task, raw, nonce, exit_code=exit_code, canaries=canaries,
                               patched_files=patched_files, workdir=workdir, patch_applied=patch_applied,
                               mirrors=mirrors)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as e:
        return _tampered([f"the results channel holds records the grader's plugin does not write "
                          f"({type(e).__name__}: {str(e)[:200]})"], {})


def _decide_guarded(task: TaskSpec, raw: bytes, nonce: str, *, exit_code: int, canaries: Canaries | None,
                    patched_files: set[str], workdir: str, patch_applied: bool, mirrors: MirrorPlan | None
                    ) -> Verdict:
    records, problems = parse_records(raw, nonce)
    guard = [r for r in records if r.get("t") == "guard"]
    stopped = [f"{r.get('why')} (at {r.get('at')}, event {r.get('event')})" for r in guard
               if r.get("action") == "stopped"]
    notes = [f"{r.get('why')} (at {r.get('at')}, event {r.get('event')})" for r in guard if r.get("action") == "noted"]
    if stopped or exit_code == STOPPED:
        return _tampered((stopped or [f"the grader's guard stopped the test process (exit {STOPPED}); its record "
                                      "did not reach the grader"]) + problems, {})
    by_type: dict[str, list[dict]] = {}
    for r in records:
        by_type.setdefault(r.get("t", ""), []).append(r)
    if not by_type.get("start"):
        if problems:
            return _tampered(problems, {})
        if exit_code == 0:
            return _tampered(["the test process exited 0 before the grader's plugin started"], {})
        return Verdict(Outcome.TEST_RUN_ERROR, f"the test command failed before pytest started (exit {exit_code})")
    problems += sequence_problems(records)
    made, logged = _one_per_phase(by_type, "made", problems), _one_per_phase(by_type, "report", problems)
    problems += _integrity(by_type)
    problems += _ran_problems(made, by_type, workdir, patched_files)
    problems += _runtest_problems(made, patched_files, workdir)
    problems += _exit_while_collecting(by_type)
    problems += _foreign_hooks(by_type, patched_files, workdir)
    problems += _rebound(by_type)
    problems += _inconsistent(made, logged)
    calls = _call_records(made, logged)
    end = by_type.get("end", [])
    exits = by_type.get("exit", [])
    if not end and exit_code == 0:
        problems.append("the test process exited 0 before its session ended (an early exit from the code under test)")
    if exits and exits[-1].get("code") != exit_code:
        problems.append(f"pytest ended with exit status {exits[-1].get('code')} but the process exited {exit_code}")
    if end and end[-1].get("exitstatus") != exit_code:
        problems.append(f"the session ended with exit status {end[-1].get('exitstatus')} but the process exited "
                        f"{exit_code}")
    if end:
        failed = [k for k, r in logged.items() if r.get("outcome") == "failed"]
        if failed and end[-1].get("exitstatus") == 0:
            problems.append(f"{len(failed)} test phases failed but the session's exit status is 0")
    uncollected = ""
    if canaries is not None and end:
        canary_problems = check_canaries(canaries, calls)
        uncollected = _uncollected(canaries, calls, by_type) if canary_problems else ""
        if not uncollected:
            problems += canary_problems
    statuses = {test_id: _status(test_id, made, logged) for test_id in {k[0] for k in made} | {k[0] for k in logged}}
    if canaries is not None:
        for test_id in canaries.ids:
            statuses.pop(test_id, None)
    mirror_note = ""
    pairs: list[tuple[str, str]] = []
    mirror_problems: list[str] = []
    if mirrors is not None:
        if end and by_type["start"][0].get("mirrors"):
            plain = {t: s.value for t, s in statuses.items() if s is not None}
            mirror_problems, pairs = disagreements(plain, mirrors), disagreeing_pairs(plain, mirrors)
        elif end:
            mirror_note = ("the mirror tests could not be made for this task's test files: special-casing by a "
                           "test's name was not checked")
        statuses = {t: s for t, s in statuses.items() if not mirrors.is_mirror_id(t)}
    wanted = task.FAIL_TO_PASS + task.PASS_TO_PASS
    matched = match_test_ids(statuses, wanted)
    tests = {t: s.value if s else "missing" for t, s in matched.items()}
    if problems or mirror_problems:
        verdict = _tampered(problems + mirror_problems, tests)
        if not problems:  # only the mirrors disagree: the grader runs each pair alone before it decides
            verdict.recheck = pairs
            verdict.session_status = {t: s.value for t, s in statuses.items() if s is not None}
        return verdict
    if not end:
        return Verdict(Outcome.TEST_RUN_ERROR, f"the test process died before its session ended (exit {exit_code})",
                       tests)
    every = {t: s.value for t, s in sorted(statuses.items()) if s is not None}
    verdict = _judged(task, wanted, matched, made, tests, by_type, patch_applied)
    verdict.all_tests = every
    if notes:
        verdict.flags.add(Flag.SUSPICIOUS_CODE.value)
        verdict.evidence += notes
    if mirror_note:
        verdict.evidence.append(mirror_note)
    if uncollected and verdict.outcome is Outcome.RESOLVED:
        return _tampered([f"every required test passed, yet the canaries beside them could not be collected "
                          f"({uncollected}): the same conftest chain cannot fail for one and not the other"], tests)
    return verdict


def sequence_problems(records: list[dict]) -> list[str]:
    """The hook numbers its records 0, 1, 2, ...: a number repeated or missing, a record of a kind written
    once seen twice, or a record of the recorder after the launcher's last, is not the grader's run."""
    out = []
    numbers = [r.get("s") for r in records]
    if any(type(n) is not int for n in numbers):
        out.append("a record has no sequence number")
    elif sorted(numbers) != list(range(len(numbers))):
        repeated = len(numbers) - len(set(numbers))
        out.append(f"the records' sequence numbers are not 0..{len(numbers) - 1} ({repeated} repeated): records "
                   "were added or lost")
    for kind in _ONCE:
        count = sum(1 for r in records if r.get("t") == kind)
        if count > 1:
            out.append(f"{count} '{kind}' records where a run writes one")
    exits = [i for i, r in enumerate(records) if r.get("t") == "exit"]
    if exits:
        late = [r for r in records[exits[0] + 1:] if r.get("t") != "guard"]
        if late:
            out.append(f"{len(late)} records written after the test session had ended and pytest had returned "
                       f"(first: {late[0].get('t')} {late[0].get('id', '')})")
    return out


def _one_per_phase(by_type: dict[str, list[dict]], kind: str, problems: list[str]) -> dict:
    """(test id, phase) -> its record; a second record for the same phase is a problem."""
    out: dict = {}
    for r in by_type.get(kind, []):
        key = (r["id"], r["when"])
        if key in out:
            problems.append(f"{key[0]} ({key[1]}) has two '{kind}' records: one test phase, one record")
        out[key] = out.get(key) or r
    return out


def _ran_problems(made: dict, by_type: dict[str, list[dict]], workdir: str, patched_files: set[str]) -> list[str]:
    """A test that pytest reports as passed must have had its own code called and return, when it is of the kind
    the launcher wraps, or when its file's text defines its function (``defs``: read before any project code
    ran), whatever class its item has by then: the wrapper's signals say so, from outside anything the code under
    test can replace."""
    ran: dict[str, list[dict]] = {}
    for r in by_type.get("ran", []):
        ran.setdefault(r["id"], []).append(r)
    defs = _file_defs(by_type["start"][0].get("defs"))
    out = []
    for (test_id, when), r in made.items():
        if when != "call" or r.get("outcome") != "passed":
            continue
        test_file = (workdir or "").rstrip("/") + "/" + test_id.split("::", 1)[0]
        parts = test_id.split("[", 1)[0].split("::")  # params may hold "::" (an IPv6 address)
        function = parts[-1]
        defined = ".".join(parts[1:]) in defs.get(_norm(test_file), ())
        if r.get("plain") is not True and not defined:
            continue
        if not r.get("wrapped"):
            out.append(f"{test_id} passed, but its test function was not a plain function the grader could watch"
                       if r.get("plain") is True else
                       f"{test_id} passed as a {r.get('item') or 'test'} item the grader does not watch, though its "
                       f"file defines {function} as a function: its own code was not seen to run")
            continue
        signals = ran.get(test_id, [])
        states = [s.get("state") for s in signals]
        if "raised" in states:
            raised = next(s.get("raised") for s in signals if s.get("state") == "raised")
            out.append(f"{test_id} raised {raised} inside its test function, yet pytest reported it passed")
        elif "returned" not in states:
            out.append(f"{test_id} was reported passed, but its test function never ran to its end")
        else:
            wrong = [w for w in (_wrong_function(s, test_file, function, patched_files, workdir) for s in signals) if w]
            if wrong:
                out.append(f"{test_id} {wrong[0]}")
    return out[:5]


def _file_defs(raw) -> dict[str, set[str]]:
    """The start record's ``defs`` ([[test file, [test-id parts: ``name``, ``Class.name``]], ...]) by normalised file
    name (none from a launcher that does not send them)."""
    out: dict[str, set[str]] = {}
    for entry in raw or []:
        file, names = entry
        out[_norm(file)] = set(names)
    return out


def _wrong_function(signal: dict, test_file: str, function: str, patched_files: set[str], workdir: str) -> str:
    """What is wrong with the function a test-ran signal names ('' when nothing): it must be the test file's
    function of that name, or a decorator's wrapper from code the patch did not write (a ``.py`` file in the work
    tree or an installed package, not a file made at run time) around it (``__wrapped__``)."""
    file, name = _norm(signal.get("file", "")), signal.get("name", "")
    if signal.get("file_new") is True:  # the launcher saw the file change during the run (or vanish)
        return (f"ran its test function through code from {file}, a file written during the run or none that "
                "exists")
    if signal.get("forged") is True:  # the launcher compiled the file: its code objects are not these
        return (f"ran its test function through code that claims {file} but is not what that file compiles to "
                "(made or compiled at run time under its name)")
    if file == test_file:
        return "" if name == function else f"ran the test function {name}, not {function}"
    inner_file, inner_name = _norm(signal.get("inner_file", "")), signal.get("inner_name", "")
    prefix = workdir.rstrip("/") + "/"
    # a wrapper's code names a Python source file (the launcher compares such code with the file's text; a name like
    # a .pyc beside the standard library's is not compared, and no decorator's code has one)
    source = file.endswith(".py")
    installed = source and ("/site-packages/" in file or "/dist-packages/" in file or "/lib/python" in file)
    ours = source and file.startswith(prefix) and file[len(prefix):] not in patched_files
    if inner_file == test_file and inner_name == function and (installed or ours):
        return ""
    if inner_file == test_file and inner_name == function:
        return f"ran its test function through a wrapper from {file}, code the patch wrote or made at run time"
    return f"ran code from {file}, not from its test file"


def _runtest_problems(made: dict, patched_files: set[str], workdir: str) -> list[str]:
    """An item whose ``runtest`` the patch wrote (or that has no file) decides its own outcome."""
    prefix = workdir.rstrip("/") + "/"
    out = []
    for (test_id, when), r in made.items():
        path = _norm(str(r.get("runtest_file", "")))
        if path.startswith("<") or (path.startswith(prefix) and path[len(prefix):] in patched_files) \
                or r.get("new_files"):
            out.append(f"{test_id} is run by {r.get('item')}.runtest from {path}: code the patch wrote, or a file "
                       "written during the run, runs the test")
    return out[:3]


def _uncollected(canaries: Canaries, calls: dict[str, dict], by_type: dict[str, list[dict]]) -> str:
    """The collection error that kept both canaries from running ('' when there is none).

    A directory or conftest that fails to import takes the canaries planted there down with the
    task's own tests: that is a broken test run (its required tests are missing too), not a forgery.
    """
    if canaries.passing in calls or canaries.failing in calls:
        return ""
    for record in by_type.get("collect_error", []):
        node = str(record.get("id", "")).split("::", 1)[0].rstrip("/")
        if node.endswith("conftest.py"):
            node = node.rpartition("/")[0]
        if node in ("", ".") or canaries.path == node or canaries.path.startswith(node + "/"):
            return f"collection error in {record.get('id') or 'the root'}"
    return ""


def _judged(task: TaskSpec, wanted: list[str], matched: dict, made: dict, tests: dict[str, str],
            by_type: dict[str, list[dict]], patch_applied: bool) -> Verdict:
    flags = _chosen_by_code(wanted, matched, made)
    xfail_ok = set(task.metadata.get("xfail_at_base", []) or [])
    failing = [t for t in task.FAIL_TO_PASS if matched[t] is not TestStatus.PASSED]
    failing += [t for t in task.PASS_TO_PASS if not (matched[t] is TestStatus.PASSED
                                                      or (matched[t] is TestStatus.XFAIL and t in xfail_ok))]
    collect_errors = [r["id"] for r in by_type.get("collect_error", [])]
    if failing:
        outcome = Outcome.UNRESOLVED if patch_applied else Outcome.NO_PATCH
        note = f"; collection errors in {', '.join(collect_errors[:3])}" if collect_errors else ""
        status = tests[failing[0]]
        return Verdict(outcome, f"{len(failing)} of {len(wanted)} required tests not passing, e.g. {failing[0]} "
                                f"({status}){note}", tests, flags)
    return Verdict(Outcome.RESOLVED, f"all {len(wanted)} required tests pass", tests, flags)


def _tampered(problems: list[str], tests: dict[str, str]) -> Verdict:
    return Verdict(Outcome.TAMPERED, "tampering: " + problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1
                                                                    else ""), tests, {Flag.TAMPERED.value}, problems)


def _exit_while_collecting(by_type: dict[str, list[dict]]) -> list[str]:
    """pytest.exit raised while a test module was imported: the code under test ending the session on purpose
    (collection errors no longer stop a session, so this is what an early exit at import looks like)."""
    return [f"the code under test called pytest.exit while {r.get('id') or 'the tests'} was collected"
            for r in by_type.get("collect_exc", [])
            if str(r.get("type", "")).startswith("_pytest.") and str(r.get("type", "")).endswith(".Exit")][:3]


def _integrity(by_type: dict[str, list[dict]]) -> list[str]:
    changed = sorted({name for r in by_type.get("integrity", []) for name in r.get("changed", [])})
    if changed:
        return [f"pytest's report-making functions were replaced during the run: {', '.join(changed[:4])}"]
    return []


def _foreign_hooks(by_type: dict[str, list[dict]], patched_files: set[str], workdir: str) -> list[str]:
    """Implementations of any pytest hook whose code lives in a file the patch wrote, in no file at all, or in code
    that claims a file's name but is not what that file compiles to."""
    out = []
    prefix = workdir.rstrip("/") + "/"
    for r in by_type.get("hooks", []):
        impls = r.get("impls") or [{"hook": h.partition(" ")[0], "file": h.partition(" ")[2]}
                                   for h in r.get("files", [])]
        new = {str(h).partition(" ")[2] for h in r.get("new_files") or []}
        for label in (r.get("forged") or [])[:5]:
            hook, _, path = str(label).partition(" ")
            problem = (f"hook {hook} implemented in code that claims {path} but is not what that file compiles to "
                       "(made at run time under its name): the code under test extends the test runner")
            if problem not in out:
                out.append(problem)
        for impl in impls:
            path = impl.get("file", "")
            relative = _norm(path)[len(prefix):] if _norm(path).startswith(prefix) else None
            if any(s.startswith(f"hook {impl.get('hook')} implemented in {path},") for s in out):
                continue
            if path in new:
                out.append(f"hook {impl.get('hook')} implemented in {path}, a file written during the run or none "
                           "that exists: the code under test extends the test runner")
            elif path.startswith("<") or (relative is not None and relative in patched_files):
                out.append(f"hook {impl.get('hook')} implemented in {path}, which the patch wrote: "
                           "the code under test extends the test runner")
    return out[:5]


def _rebound(by_type: dict[str, list[dict]]) -> list[str]:
    """A name a task's test file imports (``from M import N``) that is not ``M``'s ``N`` once collection ended, or
    that changed between then and a test's start: the test module's own names were rebound, not the library fixed."""
    out = [f"a test module's imported name was rebound while it was imported ({', '.join(r['rebound'][:3])})"
           for r in by_type.get("collected", []) if r.get("rebound")]
    out += [f"{r.get('id')} started with its module's imported {', '.join(str(n) for n in (r.get('names') or [])[:3])}"
            " rebound since collection" for r in by_type.get("rebound", [])]
    return out[:5]


def _norm(path: str) -> str:
    """A file name as the audit hook compares it: no ``.``, ``..`` or empty parts (``calc/./rt.py``)."""
    return posixpath.normpath(path) if path.startswith("/") else path


def _inconsistent(made: dict, logged: dict) -> list[str]:
    """A report whose outcome is not what the test raised, or that changed between making and logging."""
    out = []
    for key, r in made.items():
        test_id, when = key
        raised, outcome, xfail = r.get("raised"), r.get("outcome"), r.get("wasxfail") is not None
        if raised is None:
            ok = outcome == "passed" or (outcome == "failed" and when == "call" and xfail) \
                or (outcome == "skipped" and when == "setup")  # a skip marker decides before the test runs
        elif raised in _SKIP_RAISED:
            ok = outcome == "skipped"
        elif raised in _XFAIL_RAISED:
            ok = outcome == "skipped" and xfail
        else:
            ok = outcome == "failed" or (outcome == "skipped" and xfail)
        if not ok:
            out.append(f"{test_id} ({when}) raised {raised or 'nothing'} but its report says {outcome}")
        seen = logged.get(key)
        if seen is not None and seen.get("outcome") != outcome:
            out.append(f"{test_id} ({when}) was reported {outcome}, then logged as {seen.get('outcome')}")
    missing = [k for k in logged if k not in made]
    if missing:
        out.append(f"{missing[0][0]} ({missing[0][1]}) was logged without being made by pytest's runner")
    return out[:5]


def _call_records(made: dict, logged: dict) -> dict[str, dict]:
    return {test_id: r for (test_id, when), r in made.items() if when == "call"}


def _status(test_id: str, made: dict, logged: dict) -> TestStatus:
    phases = {when: made.get((test_id, when)) or logged.get((test_id, when)) for when in ("setup", "call", "teardown")}
    setup, call, teardown = phases["setup"], phases["call"], phases["teardown"]
    if setup and setup.get("outcome") == "failed":
        return TestStatus.ERROR
    first = call or setup
    if first is None:
        return TestStatus.ERROR
    if first.get("outcome") == "skipped":
        return TestStatus.XFAIL if first.get("wasxfail") is not None else TestStatus.SKIPPED
    if call is None:
        return TestStatus.ERROR
    if call.get("outcome") == "failed":
        return TestStatus.FAILED
    if call.get("wasxfail") is not None:  # XPASS: an expected failure that passed is not a plain pass
        return TestStatus.FAILED
    if teardown and teardown.get("outcome") == "failed":
        return TestStatus.ERROR
    return TestStatus.PASSED


def _chosen_by_code(wanted: list[str], matched: dict, made: dict) -> set[str]:
    """Flag required tests skipped or xfailed without a skip/xfail marker: the code under test chose it."""
    by_id: dict[str, list[dict]] = {}
    for (test_id, _), r in made.items():
        by_id.setdefault(test_id, []).append(r)
    for test in wanted:
        if matched.get(test) not in (TestStatus.SKIPPED, TestStatus.XFAIL):
            continue
        for test_id, records in by_id.items():
            if (test_id == test or test_id.endswith(test) or test.endswith(test_id)) and not any(
                    r.get("markers") for r in records):
                return {Flag.OUTCOME_CHOSEN_BY_CODE.value}
    return set()
