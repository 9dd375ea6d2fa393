"""Python of the code under test that gets to run while the guarded launcher's audit hook runs (an eighth reading,
at 574d4b1, by a helper asked to find every such place): a builtin the hook looked up by name, a code object's
constants hashed while the hook judged its caller, a warnings filter run by a compile the hook made, a name given to
``compile`` as a ``str`` subclass, a tuple subclass as a test's defaults, pytest's rewriter driven with a made-up
path, a codec search, a gc callback. Each proof below writes INSIDE when it finds the hook's frame on its stack
(from where it could take the hook's writer and nonce); all eight did at 574d4b1. Now the hook holds its builtins,
judges its caller by identity, runs with the collector off, and stops Python that is not the launcher's reaching
for a frame while the hook runs.
"""

from __future__ import annotations

from test_launcher_guard import BUGGY, launch, stopped, verdict_of

from evalharness.types import Outcome

PROOF = '''
import sys as _sys
_OUT = {out!r}
def _proof(tag):
    f = _sys._getframe(1)
    chain = []
    while f is not None:
        chain.append(f.f_code.co_name + "@" + str(f.f_code.co_filename).rsplit("/", 1)[-1])
        f = f.f_back
    if any(c.startswith("hook@eh_pytest.py") for c in chain):
        # the hook's record writer, from its own frames
        f, got = _sys._getframe(1), []
        while f is not None:
            if "put" in f.f_locals or "stop" in f.f_locals:
                got.append(f.f_code.co_name)
            f = f.f_back
        with open(_OUT, "a") as fh:
            fh.write(tag + " INSIDE chain=" + " ".join(chain[:8]) + " closure_from=" + ",".join(got) + "\\n")
        return True
    return False
'''


def run(tmp_path, attack, **kw):
    """The attack appended to the buggy library: the verdict is no pass, and no proof found the hook's frame."""
    out = tmp_path / "proof.txt"
    code, records, o, raw = launch(tmp_path, BUGGY + PROOF.format(out=str(out)) + attack, **kw)
    assert verdict_of(code, raw, tmp_path).outcome is not Outcome.RESOLVED
    text = out.read_text() if out.exists() else ""
    assert "INSIDE" not in text, (text, o[-2000:])
    return code, records, o, text, raw


def test_v1_builtin_range(tmp_path):
    attack = '''
import builtins
_rr, _fired = builtins.range, []
def _range(*a):
    if not _fired and a == (256,) and _proof("range"):
        _fired.append(1)
    return _rr(*a)
builtins.range = _range
from calc import extra
'''
    run(tmp_path, attack, extra={"calc/extra.py": "X = 1\n"})


def test_v2_const_hash(tmp_path):
    attack = '''
import types as _t
class _H:
    def __hash__(self):
        _proof("consthash")
        return 0
def _go():
    _sys.audit("evalharness.rec", ())
_c = _go.__code__.replace(co_consts=_go.__code__.co_consts + (_H(),))
_t.FunctionType(_c, globals())()
'''
    run(tmp_path, attack)


def test_v3_warning_filter(tmp_path):
    attack = '''
import warnings
class _Mt:
    def match(self, text):
        _proof("warnmatch")
        return False
from calc import legacy
warnings.filters.insert(0, ("always", _Mt(), Warning, None, 0))
legacy.call(_sys._getframe)
'''
    run(tmp_path, attack, extra={"calc/legacy.py": 'PAT = "\\d+"\n\ndef call(f, *a):\n    return f(*a)\n'},
                                 written={"calc/__init__.py": None})


def test_v4_ast_strsub_filename(tmp_path):
    attack = '''
import ast, functools
class _S(str):
    def __hash__(self):
        _proof("strsub-filename")
        return str.__hash__(self)
_tree = ast.parse("_sys._getframe()")
_code = functools.singledispatch(compile)(_tree, _S("/nowhere/x.py"), "exec")
exec(_code, {"_sys": _sys})
'''
    run(tmp_path, attack)


def test_v5_tuple_subclass_defaults(tmp_path):
    attack = '''
import _pytest.python as _pp, types as _t
class _T(tuple):
    def __bool__(self):
        _proof("defaults-bool")
        return False
_g = _pp.Function._getobj
def _getobj(self):
    f = _g(self)
    if type(f) is _t.FunctionType and f.__name__ == "test_high":
        f = _t.FunctionType(f.__code__, f.__globals__, f.__name__, _T(), f.__closure__)
    return f
_pp.Function._getobj = _getobj
'''
    run(tmp_path, attack)


def test_v6_rewriter_fn_referents(tmp_path):
    attack = '''
import ast, _pytest.assertion.rewrite as _rw
class _K(str):
    def __hash__(self):
        return hash("strpath")
    def __eq__(self, other):
        _proof("rewriter-fn-dict")
        return False
class _S(str):
    pass
class _Fn:
    def __fspath__(self):
        return __file__
    def read_bytes(self):
        return ast.Module(body=[], type_ignores=[])
    def __str__(self):
        return _S("/nowhere/y.py")
_fn = _Fn()
_fn.__dict__[_K("k")] = 1
_rw._rewrite_test(_fn, None)
'''
    run(tmp_path, attack)


def test_v7_codec_lookup(tmp_path):
    attack = '''
import encodings, functools
_norm = encodings.normalize_encoding
def _n(name):
    _proof("codec-lookup")
    return _norm(name)
encodings.normalize_encoding = _n
def _go():
    _sys._getframe()
_path = __file__.rsplit("/", 1)[0] + "/legacy2.py"
_c = functools.singledispatch(type(_go.__code__).replace)(_go.__code__, co_filename=_path, co_name="call", co_firstlineno=3)
exec(_c, {"_sys": _sys})
'''
    run(tmp_path, attack,
                                 extra={"calc/legacy2.py": '# -*- coding: koi8_r -*-\n\ndef call(f, *a):\n    return f(*a)\n'},
                                 written={"calc/__init__.py": None})


def test_v8_gc_callback(tmp_path):
    attack = '''
import gc as _gc
_done = []
def _cb(phase, info):
    if not _done and phase == "start":
        if _proof("gc-callback"):
            _done.append(1)
_gc.callbacks.append(_cb)
_gc.set_threshold(1, 1, 1)
'''
    run(tmp_path, attack)
