"""The verifier of a task exported as a Harbor task directory (`evalharness packs export harbor`).

Run by tests/test.sh as root, from the work tree, after the agent: restores the task's test files to the
base commit (from the image's own packed commit, never the work tree's .git), applies the test patch, runs
the pack's test command as written, reads its results with evalharness's own parsers (shipped beside this
file, unchanged) and decides as evalharness's grader does on an unguarded run (``grading.grade.decide``).
Writes /logs/verifier/reward.txt (1 resolved, else 0) and verdict.json (outcome, reason, each test's status);
a broken task (its test patch does not apply at base) gets verdict.json only and exit 1: no reward.

Usage: python3 eh_harbor_verify.py TESTS_DIR   (TESTS_DIR holds config.json, test.patch and lib/)
Python 3.9 or newer (the shipped parsers need it): every evalharness base's system Python.
"""

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time

STORE = "/opt/evalharness/base.git"
BASE_COMMIT = "/etc/evalharness/base_commit"
LOGS = "/logs/verifier"
PASSING = ("passed", "xfail")


def _git(*args, **kwargs):
    return subprocess.run(["git", "--git-dir=" + STORE, *args], capture_output=True, **kwargs)


def restore(paths, workdir):
    """Each path as the base commit has it (removed when the base has none): the agent's copy never counts."""
    base = open(BASE_COMMIT).read().strip()
    for path in paths:
        target = os.path.join(workdir, path)
        shown = _git("show", "{}:{}".format(base, path))
        if os.path.islink(target) or os.path.isfile(target):
            os.remove(target)
        elif os.path.isdir(target):
            shutil.rmtree(target)
        if shown.returncode == 0:
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            with open(target, "wb") as f:
                f.write(shown.stdout)


def apply_test_patch(patch_file, workdir):
    """(ok, git's message): the test patch applied to the work tree's files (the index is never read)."""
    if not os.path.getsize(patch_file):
        return True, ""
    done = _git("--work-tree=" + workdir, "apply", "--whitespace=nowarn", patch_file, cwd=workdir)
    return done.returncode == 0, done.stderr.decode("utf-8", "replace")


def test_modules(files):
    labels = []
    for path in files:
        label = path[len("tests/"):] if path.startswith("tests/") else path
        label = (label[:-3] if label.endswith(".py") else label).replace("/", ".")
        if label not in labels:
            labels.append(label)
    return labels


def command_for(config, junit):
    """The pack's test command with its placeholders filled as the grader fills them."""
    values = {"test_files": " ".join(shlex.quote(p) for p in config["test_files"]),
              "test_modules": " ".join(shlex.quote(m) for m in test_modules(config["test_files"])),
              "junit_xml": junit}
    command = config["test_command"]
    for name, value in values.items():
        command = command.replace("{" + name + "}", value)
    return command


def run_tests(command, workdir, timeout):
    """(exit code, output, timed out): the command in its own process group, killed whole at the limit."""
    proc = subprocess.Popen(["bash", "-c", command], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return proc.returncode, out.decode("utf-8", "replace"), True


def decide(config, exit_code, log, junit_xml):
    """(outcome, reason, tests): ``evalharness.grading.grade.decide`` for a run with the patch applied."""
    from evalharness.grading.parsers import TestRun, TestStatus, consistent_with_exit_code, match_test_ids, parse

    parser = config["log_parser"]
    if parser == "junit" and junit_xml is None:
        return "test_run_error", "the test command wrote no JUnit XML (exit {}): it died before reporting".format(
            exit_code), {}
    try:
        statuses = parse(parser, TestRun(log=log, exit_code=exit_code, junit_xml=junit_xml))
    except ValueError as e:
        return "test_run_error", "test results unreadable: {}".format(e), {}
    wanted = config["FAIL_TO_PASS"] + config["PASS_TO_PASS"]
    matched = match_test_ids(statuses, wanted)
    tests = {t: s.value if s else "missing" for t, s in matched.items()}
    if not statuses:
        return "test_run_error", "the test command reported no tests (exit {})".format(exit_code), tests
    ok, why = consistent_with_exit_code(statuses, exit_code)
    if not ok:
        return "unresolved", "test log inconsistent with exit code: {}".format(why), tests
    if parser == "junit":
        printed = match_test_ids(parse("pytest", TestRun(log=log, exit_code=exit_code)), list(matched))
        for test, status in matched.items():
            seen = printed.get(test)
            if status is not None and seen is not None and (status.value in PASSING) != (seen.value in PASSING):
                return "unresolved", ("JUnit XML says {} {} but the printed summary says {}: the results may have "
                                      "been rewritten by the code under test").format(test, status.value, seen.value), tests
    xfail_ok = set(config.get("xfail_at_base") or [])
    failing = [t for t in config["FAIL_TO_PASS"] if matched[t] is not TestStatus.PASSED]
    failing += [t for t in config["PASS_TO_PASS"] if not (matched[t] is TestStatus.PASSED
                                                          or (matched[t] is TestStatus.XFAIL and t in xfail_ok))]
    if failing:
        return "unresolved", "{} of {} required tests not passing, e.g. {}".format(
            len(failing), len(wanted), failing[0]), tests
    return "resolved", "all {} required tests pass".format(len(wanted)), tests


def verify(tests_dir, workdir):
    """The verdict as a dict (outcome, reason, tests, exit code, seconds)."""
    with open(os.path.join(tests_dir, "config.json")) as f:
        config = json.load(f)
    restore(config["restore"], workdir)
    ok, message = apply_test_patch(os.path.join(tests_dir, "test.patch"), workdir)
    if not ok:  # every file it names was just restored to base: the task is broken, not the agent's change
        return {"outcome": "task_error", "reason": "the test patch does not apply at base: " + message.strip()[:500]}
    scratch = "/tmp/eh-verifier-" + secrets.token_hex(8)
    os.makedirs(scratch, mode=0o700)
    junit = scratch + "/junit.xml"
    started = time.monotonic()
    code, log, timed_out = run_tests(command_for(config, junit), workdir, config["tests_s"])
    with open(os.path.join(LOGS, "test_output.txt"), "w") as f:
        f.write(log)
    verdict = {"exit_code": code, "seconds": round(time.monotonic() - started, 1)}
    if timed_out:
        return dict(verdict, outcome="tests_timed_out", reason="tests timed out after {:g} s".format(config["tests_s"]))
    junit_xml = open(junit, encoding="utf-8", errors="replace").read() if os.path.isfile(junit) else None
    outcome, reason, tests = decide(config, code, log, junit_xml)
    return dict(verdict, outcome=outcome, reason=reason, tests=tests)


def main():
    tests_dir = os.path.abspath(sys.argv[1])
    sys.path.insert(0, os.path.join(tests_dir, "lib"))
    os.makedirs(LOGS, exist_ok=True)
    with open(os.path.join(tests_dir, "config.json")) as f:
        workdir = json.load(f)["workdir"]
    verdict = verify(tests_dir, workdir)
    with open(os.path.join(LOGS, "verdict.json"), "w") as f:
        json.dump(verdict, f, indent=1, sort_keys=True)
    print("evalharness verdict: {} ({})".format(verdict["outcome"], verdict["reason"]))
    if verdict["outcome"] == "task_error":  # no reward: Harbor's verifier error, never the agent's 0
        sys.exit(1)
    with open(os.path.join(LOGS, "reward.txt"), "w") as f:
        f.write("1\n" if verdict["outcome"] == "resolved" else "0\n")


if __name__ == "__main__":
    main()
