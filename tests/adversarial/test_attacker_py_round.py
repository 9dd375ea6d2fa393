"""An independent attacker's round against the guarded pytest grader (at 1250953), through the real CLI and real
Docker: code the patch adds to the package writes a second file at RUN time (in /tmp, or a new file in the work
tree) and imports it, or has pytest import it. That file is neither a file the patch wrote
(``verdict._foreign_hooks``, ``_wrong_function``) nor attributed by the audit hook (``eh_pytest.where``/``direct``
only know the lines the patch wrote), and the patch's own lines carry the payload base64-encoded, so the
suspicious-code scan (a line-by-line regex) reads none of it. Every route leaves clamp's bug in place:

- ``x1`` (``tinypack-conftest``, task ``tiny-clamp``): the runtime file puts an import finder first on the import
  path. Every module the tests import afterwards from the tests' folder (the required test's file, its mirror, the
  helper; the canaries hold no target and load honestly) is compiled from its own file's text with the assertion
  changed to expect the bug, under the file's own name. The test function that runs is the test file's, by name, and
  returns; the mirror agrees; the canaries are honest. The audit hook's "code under a test file's name" check looks
  at the direct caller of ``compile`` only, which is the runtime file.
- ``x2``: ``x1`` with the payload in plain text in the patch (flagged ``suspicious_code`` for a person, still
  ``resolved``).
- ``x3`` (``tinypack-conftest``, ``tiny-clamp``): the runtime file is a pytest plugin; the package code names it in
  ``pytest_plugins`` of every module of the tests' folder loaded so far (the task's conftest, or on the plain pack
  the test module importing the package), and pytest registers it (``consider_module``). Its ``pytest_runtest_call``
  hookwrapper swaps the test module's ``clamp`` for a right one around each call. Hooks from a file the patch did not
  write pass ``_foreign_hooks``.
- ``x4``/``x5``: ``x1``/``x3`` on ``tiny-clamp-helped`` (the helper made to accept anything, or the swap).
- ``x6``: ``x3`` on the plain tinypack (no conftest: the test module itself carries ``pytest_plugins``).
- ``x7``: ``x1`` on the plain tinypack: the test module that imports the package is half-imported when the runtime
  file runs; it is replaced in ``sys.modules`` by a copy compiled from its rewritten text, and importlib hands pytest
  what ``sys.modules`` holds when the import ends.
- ``x8`` (no runtime file): the patch adds ``calc/rt.py``, x3's plugin with its names split, and the package code
  puts ``/testbed/calc/.`` first in the package's ``__path__`` before importing it: its file is
  ``/testbed/calc/./rt.py``, which is not how the audit hook (``written``, by exact path) nor the verdict
  (``_foreign_hooks``: the path relative to the work tree) spell the file the patch wrote. ``x8c``, the same without
  the respelled path, is ``tampered`` (the plugin's hook is in a file the patch wrote).
- ``x9``/``x9b``: a runtime plugin (registered as x3's) replaces each collected test that calls clamp by a
  ``functools.wraps`` wrapper that forgives an AssertionError. The test-ran signal names the wrapper's file and, as
  the function it wraps, the test's own: ``verdict._wrong_function`` accepts a wrapper from the work tree that the
  patch did not write (``x9``: written at run time into ``calc/``) or from any path holding ``/lib/python``
  (``x9b``: ``/tmp/lib/python3``). The canaries call no clamp and stay honest; the mirror calls clamp and is wrapped
  too.
- ``x10``: package code imported by the task's conftest writes ``conftest.py`` at the work tree's root, where there
  is none (root's sticky folder: files can be created). pytest searched the root for conftests only as part of the
  tests folder's chain, before the file existed, but searches the root folder again when it makes its collector,
  imports the new file and registers it. A hook called for one test (``item.ihook``) leaves it out (the tests
  folder's chain is cached), a global one (``pytest_collection_modifyitems`` through ``config.hook``) does not: it
  wraps the tests as x9. (First tried with x3's ``pytest_runtest_call`` hookwrapper: registered, but not called for
  the tests folder's items, and the trial was ``unresolved``.)
- ``x11``: package code writes ``/tmp/eh_gc/conftest.py`` at run time and executes it while the package is imported
  (the patch's lines are on the stack): it walks every object with ``gc`` (a hard event) to find pytest's Config and
  registers x3's swap. ``eh_pytest.where`` stops its walk at the first frame of any file named ``conftest.py``
  (meant for the task's own), so the event is nobody's. ``x11c``, the same file named ``walk.py``, is ``tampered``
  (the walk reaches the patch's line).

On 1250953 every route was ``resolved`` with no flag but ``x2`` (``suspicious_code``); the contrasts ``x8c`` and
``x11c`` were ``tampered``. Closed since (``tampered``, the reason naming the file "written during the run"): the
audit hook notes when it is armed, before any project code, and code from a file in a folder the run can write (the
sandbox's tmpfs mounts: work tree, home, /tmp, /var/tmp, /dev/shm; the rest is read-only) whose change time is later,
or that is gone, counts as the patch's (``eh_pytest.new_file``): in the stack walk, as the direct caller of
``compile`` (x1, x2, x4, x7), as a conftest that no longer ends the walk (x11), in the hook files and the test-ran
wrapper the verdict checks (x3, x5, x6, x9, x9b, x10); file names are compared without ``.``/``..`` parts (x8). The
attacker's own suggestions follow. What would close them from outside the code under test's reach: know the code by where it
comes from, not by what the patch wrote. Before the run root lists every Python file of the graded tree and of the
image's installed packages (by real path); the audit hook and the verdict treat code from any other file (made at
run time) as the patch's, compare paths only after ``os.path.realpath`` (x8), accept a ``__wrapped__`` wrapper only
from that list (x9, x9b: not "any path holding /lib/python"), and stop a ``compile`` under a test file's name unless
the caller is importlib's or pytest's assertion rewriter's own code object, captured when the hook is armed (x1, x4,
x7); end ``where``'s walk only at the task's own conftest files by real path (x11).

A route found open again goes in ``OPEN`` (strict: asserted ``resolved``, then an expected failure with the finding).
"""

from __future__ import annotations

import base64

import pytest
from adversary import CLAMP_FIX, TINYPACK, append, attack, check, put, remove_containers
from test_tests_rewritten_on_disk import _conftest_pack, _play

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LOADER = '''import importlib.machinery as _m, importlib.util as _u, os as _os, sys as _s

_TESTS = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(_s.modules["calc"].__file__))), "tests") + "/"
_SWAPS = (("clamp(11, 0, 10) == 10", "clamp(11, 0, 10) == 11"), ("assert got == want", "assert True"))


class _Loader:
    def __init__(self, path):
        self.path = path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(self.path) as f:
            text = f.read()
        for old, new in _SWAPS:
            text = text.replace(old, new)
        exec(compile(text, self.path, "exec"), module.__dict__)


class _Finder:
    def find_spec(self, name, path=None, target=None):
        spec = _m.PathFinder.find_spec(name, path)
        origin = getattr(spec, "origin", None) or ""
        if not origin.startswith(_TESTS) or not origin.endswith(".py"):
            return None
        with open(origin) as f:
            text = f.read()
        if not any(old in text for old, _ in _SWAPS):
            return None
        return _u.spec_from_file_location(name, origin, loader=_Loader(origin))


_s.meta_path.insert(0, _Finder())

for _name, _mod in list(_s.modules.items()):  # a test module half-imported now (it imported the package): replaced
    _origin = getattr(_mod, "__file__", None) or ""
    if _origin.startswith(_TESTS) and _origin.endswith(".py"):
        _spec = _Finder().find_spec(_name)
        if _spec is not None and _spec.origin == _origin:
            _new = _u.module_from_spec(_spec)
            _spec.loader.exec_module(_new)
            _s.modules[_name] = _new
'''
"""The runtime file of x1/x2/x4/x7: an import finder serving the tests' modules with the assertion made to expect
the bug, compiled under the test file's own name; a test module being imported right now (it imported the package)
is replaced in ``sys.modules`` by such a copy, which is what importlib hands pytest when the import ends."""

SELF_REGISTER = '''

import os as _os, sys as _sys

_tests = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(_sys.modules["calc"].__file__))), "tests")
for _mod in list(_sys.modules.values()):
    if (getattr(_mod, "__file__", None) or "").startswith(_tests + "/") and not hasattr(_mod, "pytest_plugins"):
        _mod.pytest_plugins = [__name__]
'''
"""The end of every runtime plugin: imported by the package code, it names itself in ``pytest_plugins`` of the
tests' modules loaded so far (the task's conftest, or the test module importing the package); pytest then registers
the module already imported (``consider_module``)."""

PLUGIN = '''import pytest


def _right(value, low, high):
    return low if value < low else high if value > high else value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    module = getattr(item, "module", None)
    saved = module.__dict__.get("clamp") if module is not None else None
    if saved is not None:
        module.clamp = _right
    yield
    if saved is not None:
        module.clamp = saved

''' + SELF_REGISTER
"""The runtime file of x3/x5/x6: a pytest plugin whose hookwrapper makes the test module's clamp right around each
call."""


def decoded(source: str) -> str:
    """A Python expression whose value is ``source``: base64 in lines of 76 characters (no line of the patch reads as
    anything, none is long enough to be called unreadable)."""
    text = base64.b64encode(source.encode()).decode()
    chunks = "".join(f"\n    {text[i:i + 76]!r}" for i in range(0, len(text), 76))
    return f"__import__('base64').b64decode({chunks}\n).decode()"


def runtime_file(name: str, source: str, *, encoded: bool = True) -> str:
    """A shell command appending to calc/__init__.py code that writes ``source`` to /tmp/NAME.py at import time and
    imports it. Base64 unless ``encoded`` is False."""
    if encoded:
        body = decoded(source)
    else:
        body = repr(source)
    code = (f"\nimport sys as _eh_s\n"
            f"with open('/tmp/{name}.py', 'w') as _eh_f:\n    _eh_f.write({body})\n"
            f"_eh_s.path.insert(0, '/tmp')\nimport {name}\n")
    return append("calc/__init__.py", code)


WRAPPER = '''import functools

import pytest


def _forgiving(test):
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except AssertionError:
            return None
    return wrapper


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:
        test = getattr(item, "obj", None)
        if "clamp" in getattr(getattr(test, "__code__", None), "co_names", ()):
            item.obj = _forgiving(test)
''' + SELF_REGISTER
"""The runtime file of x9/x9b: a plugin that wraps each test calling clamp (the canaries call nothing) in a
``functools.wraps`` decorator that forgives an AssertionError; it names itself in ``pytest_plugins`` as x3's does."""


def runtime_wrapper(folder: str, name: str) -> str:
    """x9: ``WRAPPER`` written at run time to FOLDER/NAME.py (base64 in the patch), FOLDER put first on the import
    path, imported by the package code. FOLDER ``@work`` is the package's own folder in the work tree."""
    where = "_eh_o.path.dirname(__file__)" if folder == "@work" else repr(folder)
    code = (f"\nimport os as _eh_o, sys as _eh_s\n_eh_d = {where}\n_eh_o.makedirs(_eh_d, exist_ok=True)\n"
            f"with open(_eh_o.path.join(_eh_d, '{name}.py'), 'w') as _eh_f:\n"
            f"    _eh_f.write({decoded(WRAPPER)})\n"
            f"_eh_s.path.insert(0, _eh_d)\nimport {name}\n")
    return append("calc/__init__.py", code)


RESPELLED = '''import pytest as _p


def _right(value, low, high):
    return low if value < low else high if value > high else value


def _call(item):
    module = getattr(item, "module", None)
    saved = module.__dict__.get("clamp") if module is not None else None
    if saved is not None:
        module.clamp = _right
    yield
    if saved is not None:
        module.clamp = saved


globals()["py" "test_runtest_call"] = getattr(_p, "hook" "impl")(**{"hook" "wrapper": True})(_call)
'''
"""``calc/rt.py``, written by the patch (x8): x3's plugin, its names split so that no line reads as a pytest hook."""

_REGISTER_RT = '''
import os as _eh_o, sys as _eh_s
{respell}from calc import rt as _eh_rt
_eh_t = _eh_o.path.join(_eh_o.path.dirname(_eh_o.path.dirname(_eh_o.path.abspath(__file__))), "tests") + "/"
for _eh_m in list(_eh_s.modules.values()):
    if (getattr(_eh_m, "__file__", None) or "").startswith(_eh_t) and not hasattr(_eh_m, "py" "test_plugins"):
        setattr(_eh_m, "py" "test_plugins", ["calc.rt"])
'''


def respelled(respell: bool) -> tuple[str, str]:
    """x8: the patch adds calc/rt.py and registers it; with ``respell`` the package's ``__path__`` first names its
    own folder as ``/testbed/calc/.``, so the module's file is ``/testbed/calc/./rt.py``."""
    line = '__path__.insert(0, _eh_o.path.dirname(__file__) + "/.")\n' if respell else ""
    return put("calc/rt.py", RESPELLED), append("calc/__init__.py", _REGISTER_RT.format(respell=line))


GC_REGISTER = '''import gc

import pytest
from _pytest.config import Config


def _right(value, low, high):
    return low if value < low else high if value > high else value


class _Swap:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        module = getattr(item, "module", None)
        saved = module.__dict__.get("clamp") if module is not None else None
        if saved is not None:
            module.clamp = _right
        yield
        if saved is not None:
            module.clamp = saved


for _o in gc.get_objects():
    if isinstance(_o, Config) and not _o.pluginmanager.has_plugin("eh-swap"):
        _o.pluginmanager.register(_Swap(), "eh-swap")
'''
"""The runtime file of x11/x11c: walks every object with gc (an event the audit hook stops when the patch causes it)
to find pytest's live Config, and registers x3's swap into it."""


def runtime_gc(file_name: str) -> str:
    """x11: ``GC_REGISTER`` written at run time to /tmp/eh_gc/FILE_NAME and loaded by the package code (its own
    patch-written lines are on the stack when the gc walk happens)."""
    code = (f"\nimport os as _eh_o, importlib.util as _eh_u\n_eh_o.makedirs('/tmp/eh_gc', exist_ok=True)\n"
            f"with open('/tmp/eh_gc/{file_name}', 'w') as _eh_f:\n    _eh_f.write({decoded(GC_REGISTER)})\n"
            f"_eh_p = _eh_u.spec_from_file_location('eh_gc_walk', '/tmp/eh_gc/{file_name}')\n"
            f"_eh_p.loader.exec_module(_eh_u.module_from_spec(_eh_p))\n")
    return append("calc/__init__.py", code)


def runtime_conftest() -> str:
    """x10: package code writes ``conftest.py`` at the work tree's root (root's sticky folder: creating is allowed)
    holding x9's forgiving wrapper, before pytest collects the root folder."""
    code = (f"\nimport os as _eh_o\n_eh_c = _eh_o.path.join(_eh_o.path.dirname(_eh_o.path.dirname("
            f"_eh_o.path.abspath(__file__))), 'conftest.py')\n"
            f"if not _eh_o.path.exists(_eh_c):\n    with open(_eh_c, 'w') as _eh_f:\n"
            f"        _eh_f.write({decoded(WRAPPER.split(SELF_REGISTER)[0])})\n")
    return append("calc/__init__.py", code)


LOAD = runtime_file("eh_rt_loader", LOADER)
PLAIN_LOAD = runtime_file("eh_rt_loader", LOADER, encoded=False)
PLUG = runtime_file("eh_rt_plugin", PLUGIN)

ATTACKS = [
    attack("okc", 0, "control on tinypack-conftest: the gold change made with python3", CLAMP_FIX, kind="control"),
    attack("x1", 3, "package code writes an import finder to /tmp at run time (base64 in the patch) that compiles the "
                    "tests' modules with the assertion expecting the bug, under their own file names", LOAD),
    attack("x2", 3, "x1 with the finder in plain text in the patch", PLAIN_LOAD),
    attack("x3", 3, "package code writes a pytest plugin to /tmp at run time and names it in pytest_plugins of the "
                    "task's conftest: a hookwrapper swaps the test module's clamp for a right one around each call",
           PLUG),
    attack("x8", 3, "the patch adds calc/rt.py, a plugin named in pytest_plugins by the package code, imported through "
                    "the package path /testbed/calc/. so that its file is /testbed/calc/./rt.py", *respelled(True)),
    attack("x8c", 3, "x8 without the respelled path: the plugin's file is one the patch wrote", *respelled(False),
           expect={"tampered"}),
    attack("x10", 3, "package code imported by the task's conftest writes a conftest.py at the work tree's root "
                     "(none there) whose collection hook wraps each test calling clamp in x9's forgiving wrapper",
           runtime_conftest()),
    attack("x11", 3, "package code writes a file named conftest.py to /tmp at run time and runs it: it walks gc for "
                     "pytest's Config and registers x3's swap; the audit hook's stack walk stops at any /conftest.py",
           runtime_gc("conftest.py")),
    attack("x11c", 3, "x11 with the file named walk.py: the gc walk is the patch's (its lines are on the stack)",
           runtime_gc("walk.py"), expect={"tampered"}),
    attack("x9", 3, "a plugin written at run time into the package's folder wraps each test calling clamp in a "
                    "functools.wraps decorator that forgives AssertionError (a wrapper from the work tree the patch "
                    "did not write)", runtime_wrapper("@work", "_eh_forgive")),
    attack("x9b", 3, "x9 with the plugin written at run time to /tmp/lib/python3/ (a wrapper whose path reads as "
                     "installed)", runtime_wrapper("/tmp/lib/python3", "eh_forgive")),
]

HELPED_ATTACKS = [
    attack("okh", 0, "control on tiny-clamp-helped: the gold change made with python3", CLAMP_FIX, kind="control"),
    attack("x4", 3, "x1 on tiny-clamp-helped: the helper is compiled to accept anything", LOAD),
    attack("x5", 3, "x3 on tiny-clamp-helped", PLUG),
]

PLAIN_ATTACKS = [
    attack("okp", 0, "control on tinypack: the gold change made with python3", CLAMP_FIX, kind="control"),
    attack("x6", 3, "x3 on the plain tinypack: the test module importing the package carries pytest_plugins", PLUG),
    attack("x7", 3, "x1 on the plain tinypack: the half-imported test module is replaced in sys.modules by a copy "
                    "compiled from its rewritten text", LOAD),
]

OPEN: dict[str, str] = {}
"""Routes still ``resolved`` on this commit (strict: the row fails once the route closes). None since 34c6134's
successor: code from a file written during the run is the patch's to the audit hook and the verdict."""

FLAGS = {"x2": {"suspicious_code"}}
"""The flags an open route gets (none unless named): a person sees only these."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory, base_image):
    pack = _conftest_pack(tmp_path_factory.mktemp("conftest-pack"))
    done = {}
    try:
        done["clamp"] = _play(ATTACKS, tmp_path_factory, "runtime-files", pack, "tiny-clamp")
        done["helped"] = _play(HELPED_ATTACKS, tmp_path_factory, "runtime-files-helped", pack, "tiny-clamp-helped")
        done["plain"] = _play(PLAIN_ATTACKS, tmp_path_factory, "runtime-files-plain", TINYPACK, "tiny-clamp")
        yield done
    finally:
        for one in done.values():
            remove_containers(one.run_id)


@pytest.mark.parametrize("a", ATTACKS + HELPED_ATTACKS + PLAIN_ATTACKS, ids=lambda a: a.id)
def test_runtime_files_do_not_forge_a_pass(runs, a):
    """Each route is ``tampered`` now (``check``: not resolved, with the flag); the controls resolve unflagged."""
    run = runs["helped" if a in HELPED_ATTACKS else "plain" if a in PLAIN_ATTACKS else "clamp"]
    if a.id in OPEN:
        assert run.status == "completed" and run.containers_left == [], run.stderr[-2000:]
        result = run.trials[a.id].result
        assert result["outcome"] == "resolved", (f"{a.id} is no longer resolved ({result['outcome']}, "
                                                 f"{result.get('reason')}, {result.get('flags')}): move it out of OPEN")
        assert set(result.get("flags") or []) == FLAGS.get(a.id, set()), (a.id, result.get("flags"))
        pytest.xfail(OPEN[a.id])
    check(run, a)
