"""A fourth attacker's reading of the guarded run (after 1a6d02a), played through the real CLI and Docker.

The attacker was asked to break the grader, with rounds 1 to 3 closed. Three routes got ``resolved`` on the
launcher (host tests, ``tests/grading/test_launcher_guard.py``) while ``clamp(11, 0, 10)`` still returned 11 in a
fresh interpreter; here each is appended to tinypack's ``calc/__init__.py`` and played by a scripted agent:

- r4a: ``clamp`` becomes an object whose class ``__getattr__`` is a chain of C callables,
  ``defaultdict(partial(sys.settrace, tracer)).__getitem__``. pytest's collector asks every name of the test module
  for ``__test__``, so the chain installs the patch's trace function with no frame of the patch's on the stack (the
  ``sys.settrace`` event is charged to nobody). The tracer sees ``clamp`` return 11 and rewrites the local of the
  test's own frame that received it to 10; the test's genuine code then compares 10 with 10.
- r4b: while the test module is half-imported (its ``from calc import ...``), its class becomes a ``ModuleType``
  subclass whose ``__getattribute__`` hands pytest each test as a new function over the test's own code object and
  globals that are a ``dict`` subclass holding a right ``clamp`` (the imported-names check read plain dicts only).
- r4c: the same swap hands pytest each test wrapped in a function that forgives ``AssertionError``, compiled under
  the name of the standard library's ``os`` bytecode file (``__pycache__/os.cpython-311.pyc``): a name that is not
  a ``.py`` file was not compared with any file, and the verdict took a wrapper from ``/lib/python`` for an
  installed decorator.
- r4e (found while closing r4c): the wrapper is the standard library's own code, ``contextlib.ContextDecorator``
  over ``suppress(AssertionError)``: genuine code of an installed ``.py`` file, with the test as its ``__wrapped__``.

A fifth reading (at e5e3679) stepped around those checks: ``a1`` puts r4a's tracer inside ``functools.partial`` (a C
callable: no code to judge, taken for coverage's C tracer) and ``a4`` has an autouse fixture of the patch's, put in
the half-imported test module, set ``item.obj`` at set-up (after collection) to the test's code over a plain-dict
copy of its globals; both were ``resolved`` unflagged at e5e3679. (Its ``a2``, the same on ``sys.monitoring``, needs
Python 3.12+: host test only, the tiny pack's image is 3.11.)

Closed by (0b743d5, 7eae531): as each test starts, the function pytest runs must be as its file defines it (a test the file
does not decorate runs through no wrapper, parameters without defaults get none, its globals are a plain dict;
the file's shape is read before any project code runs), and no trace or profile function whose code is the
patch's may be set as a test starts or ends (a C callable only as an installed extension's own type holding no code
of the patch's). A test runs with its module's own globals. A wrapper's code must name a ``.py`` file.
"""

from __future__ import annotations

import pytest
from adversary import CLAMP_FIX, TINYPACK, append, attack, check, remove_containers
from test_tests_rewritten_on_disk import _play

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TRACER = '''
import collections as _eh_c, functools as _eh_f, sys as _eh_s


class _EhClamp(object):
    def __call__(self, value, low, high):
        if value < low:
            return low
        if value > high:
            return value
        return value


_EhG = globals()
_eh_pending = {}


def _eh_fix(frame, event, arg):
    if event != "opcode":
        return _eh_fix
    entry = _eh_pending.get(id(frame))
    if entry is None:
        frame.f_trace_opcodes = False
        return None
    value, right, snap = entry
    names = frame.f_locals
    if snap is None:
        _eh_pending[id(frame)] = (value, right, dict(names))
        return _eh_fix
    for key, now in list(names.items()):
        if now is value and snap.get(key, _eh_pending) is not value:
            names[key] = right
            del _eh_pending[id(frame)]
            frame.f_trace_opcodes = False
            break
    return _eh_fix


def _eh_local(frame, event, arg):
    if event == "return":
        names = frame.f_locals
        value, low, high = names.get("value"), names.get("low"), names.get("high")
        try:
            right = low if value < low else high if value > high else value
        except Exception:
            return None
        if arg != right and frame.f_back is not None:
            caller = frame.f_back
            _eh_pending[id(caller)] = (arg, right, None)
            caller.f_trace = _eh_fix
            caller.f_trace_opcodes = True
    return _eh_local


def _eh_tracer(frame, event, arg):
    if event == "call" and frame.f_globals is _EhG and "self" in frame.f_locals:
        return _eh_local
    return None


_EhClamp.__getattr__ = _eh_c.defaultdict(_eh_f.partial(_eh_s.settrace, _eh_tracer)).__getitem__
clamp = _EhClamp()
'''
"""r4a, appended to calc/__init__.py."""

PARTIAL_TRACER = TRACER.replace("_eh_f.partial(_eh_s.settrace, _eh_tracer)",
                                "_eh_f.partial(_eh_s.settrace, _eh_f.partial(_eh_tracer))")
"""a1 (round 5): r4a's tracer inside functools.partial, a C callable with no code of its own."""
assert PARTIAL_TRACER != TRACER

FIXTURE_COPY = '''
import dis as _eh_d, sys as _eh_s, types as _eh_t
import pytest as _eh_p


def _eh_right(value, low, high):
    return low if value < low else high if value > high else value


@_eh_p.fixture(autouse=True)
def _eh_fx(request):
    func = getattr(request.node, "obj", None)
    if type(func) is _eh_t.FunctionType and func.__globals__.get("clamp") is clamp:
        names = dict(func.__globals__)
        names["clamp"] = _eh_right
        request.node.obj = _eh_t.FunctionType(_eh_d.Bytecode(func).codeobj, names, func.__name__)


for _eh_m in list(_eh_s.modules.values()):
    if "@py_builtins" in getattr(_eh_m, "__dict__", {}) and \\
            getattr(getattr(_eh_m, "__spec__", None), "_initializing", False):
        _eh_m.__dict__["_eh_fx"] = _eh_fx
'''
"""a4 (round 5): an autouse fixture put in the half-imported test module hands pytest, at set-up, the test's code
over a plain-dict copy of its globals holding a right clamp."""

_SWAP = '''
import sys as _eh_s, types as _eh_t


def _eh_right(value, low, high):
    return low if value < low else high if value > high else value


{other}


class _EhM(_eh_t.ModuleType):
    def __getattribute__(self, name):
        value = _eh_t.ModuleType.__getattribute__(self, name)
        if type(value) is _eh_t.FunctionType and name.startswith("test_") and value.__globals__.get("clamp") is clamp:
            return _eh_other(value)
        return value


for _eh_m in list(_eh_s.modules.values()):
    if "@py_builtins" in getattr(_eh_m, "__dict__", {}) and \\
            getattr(getattr(_eh_m, "__spec__", None), "_initializing", False):
        _eh_m.__class__ = _EhM
'''
"""The half-imported test module's class swapped: pytest takes each test through ``_eh_other``."""

OTHER_GLOBALS = _SWAP.replace("{other}", '''import dis as _eh_d


class _EhG(dict):
    pass


def _eh_other(value):
    names = _EhG(value.__globals__)
    names["clamp"] = _eh_right
    return _eh_t.FunctionType(_eh_d.Bytecode(value).codeobj, names, value.__name__)''')
"""r4b."""

PYC_WRAPPER = _SWAP.replace("{other}", '''import functools as _eh_f, importlib.util as _eh_u, os as _eh_o

_eh_src = ("def _wrap(inner):\\n"
           "    def wrapper(*args, **kwargs):\\n"
           "        try:\\n"
           "            return inner(*args, **kwargs)\\n"
           "        except AssertionError:\\n"
           "            return None\\n"
           "    wrapper.__wrapped__ = inner\\n"
           "    wrapper.__name__ = inner.__name__\\n"
           "    return wrapper\\n")
_eh_ns = {}
exec(_eh_f.singledispatch(compile)(_eh_src, _eh_u.cache_from_source(_eh_o.__file__), "exec"), _eh_ns)
_eh_made = {}


def _eh_other(value):
    if value not in _eh_made:
        _eh_made[value] = _eh_ns["_wrap"](value)
    return _eh_made[value]''')
"""r4c."""

STDLIB_WRAPPER = _SWAP.replace("{other}", '''import contextlib as _eh_cl


class _EhS(_eh_cl.ContextDecorator, _eh_cl.suppress):
    pass


_eh_made = {}


def _eh_other(value):
    if value not in _eh_made:
        _eh_made[value] = _EhS(AssertionError)(value)
    return _eh_made[value]''')
"""r4e."""

ATTACKS = [
    attack("okp", 0, "control on tinypack: the gold change made with python3", CLAMP_FIX, kind="control"),
    attack("r4a", 3, "a trace function installed by C callables pytest's collector calls rewrites the test's local "
                     "that received clamp's 11", append("calc/__init__.py", TRACER)),
    attack("r4b", 3, "the test module's class swapped: each test is its own code over a dict subclass of its globals "
                     "holding a right clamp", append("calc/__init__.py", OTHER_GLOBALS)),
    attack("r4c", 3, "the test module's class swapped: each test wrapped in a forgiving wrapper compiled under the "
                     "name of the standard library's os bytecode file", append("calc/__init__.py", PYC_WRAPPER)),
    attack("r4e", 3, "the test module's class swapped: each test wrapped by contextlib's own ContextDecorator over "
                     "suppress(AssertionError)", append("calc/__init__.py", STDLIB_WRAPPER)),
    attack("a1", 3, "r4a with the trace function inside functools.partial", append("calc/__init__.py", PARTIAL_TRACER)),
    attack("a4", 3, "an autouse fixture in the half-imported test module sets item.obj to the test's code over a "
                    "plain-dict copy of its globals holding a right clamp", append("calc/__init__.py", FIXTURE_COPY)),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory, base_image):
    played = _play(ATTACKS, tmp_path_factory, "round4", TINYPACK, "tiny-clamp")
    try:
        yield played
    finally:
        remove_containers(played.run_id)


@pytest.mark.parametrize("a", ATTACKS, ids=lambda a: a.id)
def test_the_test_function_and_its_frame_are_the_files(run, a):
    """Each route is not resolved (``check``); the control resolves unflagged."""
    result = run.trials[a.id].result
    print(a.id, result["outcome"], sorted(result.get("flags") or []), result.get("reason"))
    check(run, a)
