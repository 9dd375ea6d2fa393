"""evalharness's guarded pytest launcher, run by the grader inside the grading sandbox.

Usage (by the grader only): python -s eh_pytest.py < settings 3> results
The settings line (JSON: nonce, workdir, pytest arguments, the argv shown) comes on standard input, opened by
root from a folder the test process cannot read, and is never put in argv, the environment or a
file the tests can see. Results go, one JSON line each, to file descriptor 3, also opened by
root. Every line carries the nonce. The plugin records, for each test phase, what the test
raised (read before any other hook can change it) beside the report pytest made of it, the
pytest internals that make reports as they were at start-up, and the hook implementations that
were registered; the grader (evalharness.grading.verdict) decides from that, outside this process.

Kept to the Python 3.6 syntax subset: task images run many Python versions.
"""
import json
import os
import sys


def _main():
    settings = json.loads(sys.stdin.readline())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    out = os.fdopen(3, "w", buffering=1)
    try:
        import fcntl
        fcntl.fcntl(3, fcntl.F_SETFD, fcntl.fcntl(3, fcntl.F_GETFD) | fcntl.FD_CLOEXEC)
    except (ImportError, OSError):
        pass
    nonce = settings["nonce"]

    def emit(record):
        record["n"] = nonce
        out.write(json.dumps(record, default=str) + "\n")
        out.flush()

    import pytest
    import _pytest.reports
    import _pytest.runner

    before = [(spec, _identity(obj)) for spec, obj in _watched()]
    workdir = settings["workdir"]

    def changed():
        return sorted(_name(spec) for spec, identity in before if not _is(_current(spec), identity))

    class Recorder(object):
        def __init__(self):
            self.first_change = None

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_makereport(self, item, call):
            excinfo = call.excinfo  # before any other hook runs
            if excinfo is None and call.when == "call":
                # a unittest.TestCase test: pytest's unittest plugin keeps what the test raised on the
                # item and hands it to the call in its own makereport hook, which runs after this one
                pending = getattr(item, "_excinfo", None)
                if isinstance(pending, list) and pending:
                    excinfo = pending[0]
            raised = excinfo.typename if excinfo is not None else None
            message = ""
            if excinfo is not None:
                try:
                    message = str(excinfo.value)[:2000]
                except Exception:  # noqa: BLE001 - an exception whose str() fails is still an exception
                    message = "<unprintable>"
            outcome = yield
            report = outcome.get_result()
            markers = sorted(set(m.name for m in item.iter_markers()
                                 if m.name in ("skip", "skipif", "xfail")))
            emit({"t": "made", "id": report.nodeid, "when": report.when, "outcome": report.outcome,
                  "raised": raised, "raised_msg": message, "markers": markers,
                  "wasxfail": getattr(report, "wasxfail", None)})

        @pytest.hookimpl(trylast=True)
        def pytest_runtest_logreport(self, report):
            longrepr = ""
            skip_from = None
            if report.longrepr is not None:
                if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
                    skip_from = str(report.longrepr[0])
                    longrepr = str(report.longrepr[2])
                else:
                    try:
                        longrepr = str(report.longrepr)
                    except Exception:  # noqa: BLE001
                        longrepr = "<unprintable>"
            emit({"t": "report", "id": report.nodeid, "when": report.when, "outcome": report.outcome,
                  "wasxfail": getattr(report, "wasxfail", None), "longrepr": longrepr[-2000:],
                  "skip_from": skip_from})
            if self.first_change is None and not _unchanged(before):
                moved = changed()
                if moved:
                    self.first_change = moved
                    emit({"t": "integrity", "changed": moved, "at": report.nodeid})

        @pytest.hookimpl(trylast=True)
        def pytest_collectreport(self, report):
            if report.failed:
                emit({"t": "collect_error", "id": report.nodeid, "longrepr": str(report.longrepr)[-2000:]})

        @pytest.hookimpl(trylast=True)
        def pytest_exception_interact(self, node, call, report):
            # what a collection error raised (its type, not its text): pytest.exit from the code under test
            if type(report).__name__ == "CollectReport" and call.excinfo is not None:
                kind = call.excinfo.type
                emit({"t": "collect_exc", "id": report.nodeid, "type": kind.__module__ + "." + kind.__name__})

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
            emit({"t": "collected", "count": len(session.items)})

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(self, session, exitstatus):
            emit({"t": "hooks", "impls": _hook_files(session.config)})
            emit({"t": "integrity", "changed": changed(), "at": "sessionfinish"})
            emit({"t": "end", "exitstatus": int(exitstatus), "testsfailed": session.testsfailed,
                  "collected": session.testscollected})

    emit({"t": "start", "pytest": pytest.__version__, "python": sys.version.split()[0]})
    sys.path.insert(0, workdir)  # what `python -m pytest` run in the work tree does
    os.chdir(workdir)
    # argv as `python -m pytest ARGS` has it, with the grader's decoy --junitxml that pytest is not given
    shown = settings.get("argv", settings["args"])
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + list(shown)
    code = pytest.main(list(settings["args"]), plugins=[Recorder()])
    code = int(code)
    emit({"t": "exit", "code": code})
    out.close()
    # a normal interpreter exit, as `python -m pytest` has: exit handlers the code under test left run
    # now, and one that changes the exit status is caught (the record above holds pytest's own)
    sys.exit(code)


_WATCHED = (
    ("_pytest.runner", None, "call_and_report"), ("_pytest.runner", None, "runtestprotocol"),
    ("_pytest.runner", None, "call_runtest_hook"), ("_pytest.runner", "CallInfo", "from_call"),
    ("_pytest.runner", None, "pytest_runtest_makereport"),
    ("_pytest.reports", "TestReport", "from_item_and_call"),
    ("_pytest.reports", "BaseReport", "passed"), ("_pytest.reports", "BaseReport", "failed"),
    ("_pytest.skipping", None, "pytest_runtest_makereport"), ("_pytest.python", None, "pytest_pyfunc_call"),
    ("_pytest.main", None, "pytest_runtestloop"), ("_pytest.terminal", "TerminalReporter", "pytest_runtest_logreport"),
    ("pluggy._callers", None, "_multicall"), ("pluggy._hooks", "HookCaller", "__call__"),
    ("pluggy._hooks", "_HookCaller", "__call__"), ("pluggy.callers", None, "_multicall"),
    ("pluggy.hooks", "_HookCaller", "__call__"), ("pytest", None, "main"))
"""The functions that turn a test's outcome into its report: (module, class or None, attribute)."""


def _watched():
    """The watched functions that exist, as they are now: (spec, object) pairs."""
    out = []
    for spec in _WATCHED:
        value = _current(spec)
        if value is not None:
            out.append((spec, value))
    return out


def _current(spec):
    """What ``spec`` names now (None when absent): a class's own attribute, not one it inherits or binds."""
    module_name, owner_name, attr = spec
    module = sys.modules.get(module_name)
    owner = getattr(module, owner_name, None) if owner_name else module
    if owner is None:
        return None
    return owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)


def _name(spec):
    module_name, owner_name, attr = spec
    return "%s.%s%s" % (module_name, owner_name + "." if owner_name else "", attr)


def _identity(obj):
    target = getattr(obj, "__func__", obj)
    if isinstance(target, property):
        target = target.fget
    code = getattr(target, "__code__", None)
    return (id(obj), id(target), id(code) if code is not None else None,
            hash(code.co_code) if code is not None else None)


def _is(obj, identity):
    """Is ``obj`` still what ``identity`` (``_identity``) was taken of?"""
    return _identity(obj) == identity


def _unchanged(before):
    """Every watched function is what it was at start: ``_current`` and ``_is`` for each, inlined, building no
    object. It runs after every test phase; the calls and the containers it would build each time cost about a
    second over a run of 6,000 tests (garbage-collector passes over the whole session among it)."""
    modules = sys.modules
    for (module_name, owner_name, attr), (obj_id, target_id, code_id, code_hash) in before:
        owner = modules.get(module_name)
        if owner_name:
            owner = getattr(owner, owner_name, None)
        if owner is None:
            return False
        obj = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
        target = getattr(obj, "__func__", obj)
        if isinstance(target, property):
            target = target.fget
        if id(obj) != obj_id or id(target) != target_id:
            return False
        code = getattr(target, "__code__", None)
        if code is None:
            if code_id is not None:
                return False
        elif id(code) != code_id or hash(code.co_code) != code_hash:
            return False
    return True


_SENSITIVE = ("pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_report_teststatus",
              "pytest_runtest_protocol", "pytest_runtest_call", "pytest_pyfunc_call", "pytest_runtestloop",
              "pytest_sessionfinish", "pytest_collection_modifyitems", "pytest_terminal_summary",
              "pytest_runtest_setup", "pytest_runtest_teardown", "pytest_unconfigure", "pytest_collectreport",
              "pytest_exception_interact", "pytest_runtest_logfinish")


def _hook_files(config):
    found = []
    for name in _SENSITIVE:
        hook = getattr(config.pluginmanager.hook, name, None)
        if hook is None:
            continue
        for impl in hook.get_hookimpls():
            function = getattr(impl, "function", None)
            code = getattr(function, "__code__", None)
            found.append({"hook": name, "plugin": str(getattr(impl, "plugin_name", "")),
                          "file": code.co_filename if code is not None else "<no code>"})
    return found


if __name__ == "__main__":
    _main()
