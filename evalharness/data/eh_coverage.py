"""evalharness's coverage plugin for pytest: the lines of chosen files each test executes (a diagnostic run).

Loaded with ``-p eh_coverage`` in the task maker's own run of the gold patch (``quality/measure.py``), never in a
graded run. It needs nothing but the standard library, so it runs in any task container without network and
leaves the project's environment as it is. ``EH_COV_CONFIG`` names a JSON file: ``workdir``, ``files`` (paths
relative to it) and ``out`` (where the results go at the end of the session; a run that never ends writes none).

A ``sys.settrace`` function (and ``threading.settrace``) looks at each call once per code file and traces lines
only in the chosen files, so code elsewhere runs at nearly full speed. Lines are recorded under the test being
run (its node id, from its setup to its teardown), or under "" outside any test (collection, imports).
"""

import json
import os
import sys
import threading

import pytest

_config = json.load(open(os.environ["EH_COV_CONFIG"]))
_root = os.path.realpath(_config["workdir"])
_targets = dict((os.path.realpath(os.path.join(_root, p)), p) for p in _config["files"])
_known = {}
_executed = {"": {}}
_current = [_executed[""]]
_outcomes = {}


def _target(filename):
    rel = _known.get(filename, 0)
    if rel == 0:
        try:
            rel = _targets.get(os.path.realpath(os.path.join(_root, filename)))
        except (TypeError, ValueError):
            rel = None
        _known[filename] = rel
    return rel


def _local(frame, event, arg):
    if event == "line":
        rel = _known.get(frame.f_code.co_filename)
        if rel is not None:
            lines = _current[0].get(rel)
            if lines is None:
                lines = _current[0][rel] = set()
            lines.add(frame.f_lineno)
    return _local


def _global(frame, event, arg):
    if event != "call" or _target(frame.f_code.co_filename) is None:
        return None
    return _local


sys.settrace(_global)
threading.settrace(_global)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = _executed.setdefault(item.nodeid, {})
    if sys.gettrace() is None:  # something turned tracing off: on again for this test
        sys.settrace(_global)



def pytest_runtest_logfinish(nodeid, location):
    _current[0] = _executed[""]


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if _outcomes.get(report.nodeid) in (None, "passed"):
            _outcomes[report.nodeid] = report.outcome


def pytest_sessionfinish(session, exitstatus):
    sys.settrace(None)
    threading.settrace(None)
    sources = {}
    for path, rel in _targets.items():
        try:
            with open(path, "rb") as f:
                sources[rel] = f.read(4000000).decode("utf-8", "replace")
        except OSError:
            pass
    result = {"executed": dict((ctx, dict((f, sorted(lines)) for f, lines in files.items() if lines))
                               for ctx, files in _executed.items()),
              "outcomes": _outcomes, "sources": sources, "exitstatus": int(exitstatus),
              "python": sys.version.split()[0]}
    tmp = _config["out"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, _config["out"])
