"""A sixth attacker's reading of the guarded run (at 1a82e27), played through the real CLI and Docker.

Whether a test was watched was decided by its item's class, which the code under test controls:

- d1: ``Function.setup`` (a class attribute: assigning it raises no audit event) replaced by the patch; as each
  test is set up, its item's class becomes an empty ``Function`` subclass and its function a C callable
  (``dict``), so the launcher does not wrap it and pytest calls ``dict()``: a pass. Only the tests that use
  ``clamp`` are demoted, so the canaries fail as they should and each mirror agrees with its original. The verdict
  checked the test-ran signal only of items whose class was exactly pytest's ``Function``.
- d3: the same, the item turned into pytest's ``DoctestItem`` running a one-line doctest that passes.
- u1: ``unittest.TestCase.run`` replaced by a function that runs nothing: every ``TestCase`` test passes (their
  methods were never wrapped).

h1 (a seventh reading, at fdec4e4) ran the patch's Python inside the audit hook through a dict key, and forged
records with the hook's own writer.

Closed by: the launcher sends, in its start record, the names of the functions each test file defines (read
before any project code ran); a passed test whose file defines its function must have been seen to run, whatever
class its item has; ``TestCase`` methods run through the launcher's wrapper too. The hook reads the code under
test's dicts (globals, module dicts, ``sys.modules``, class dicts) only as copies made by C, of exact-string keys, and
stops code named by a ``str`` subclass (h1).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from adversary import CLAMP_FIX, TINYPACK, append, attack, check, remove_containers
from test_tests_rewritten_on_disk import _play

pytestmark = [pytest.mark.docker, pytest.mark.slow]

DEMOTE = '''
import doctest as _eh_d
import _pytest.doctest
import _pytest.python as _eh_p


class _EhPlain(_eh_p.Function):
    pass


_eh_setup = _eh_p.Function.setup


def _eh_demote(self):
    _eh_setup(self)
    if getattr(getattr(self, "obj", None), "__globals__", {{}}).get("clamp") is not clamp:
        return  # the canaries (new files that do not import calc) are spared; the mirrors import it too
    self.__class__ = {kind}
    self._obj = dict
    self.dtest = _eh_d.DocTestParser().get_doctest(">>> 1\\n1\\n", {{}}, "x", None, 0)
    self.runner = _eh_d.DocTestRunner()


_eh_p.Function.setup = _eh_demote
'''

UNIT_TEST = '''import unittest

from calc import clamp


class TestClamp(unittest.TestCase):
    def test_high(self):
        self.assertEqual(clamp(11, 0, 10), 10)

    def test_inside(self):
        self.assertEqual(clamp(5, 0, 10), 5)
'''

COLLIDING_KEY = (Path(__file__).parents[1] / "grading" / "test_launcher_guard.py").read_text() \
    .split("COLLIDING_KEY = \'\'\'", 1)[1].split("\'\'\'", 1)[0]
"""h1 (a seventh reading, at fdec4e4): the host test's route, played whole: a colliding ``str`` subclass key in the
half-imported test module's dict runs its ``__eq__`` inside the audit hook, takes the hook's record writer from its
frames, and writes passes for the tests that call clamp (canaries and mirrors run as they should)."""

ATTACKS = [
    attack("okp6", 0, "control on tinypack: the gold change made with python3", CLAMP_FIX, kind="control"),
    attack("d1", 3, "Function.setup replaced: each item becomes an empty Function subclass calling dict()",
           append("calc/__init__.py", DEMOTE.format(kind="_EhPlain"))),
    attack("d3", 3, "Function.setup replaced: each item becomes a DoctestItem running a doctest that passes",
           append("calc/__init__.py", DEMOTE.format(kind="_pytest.doctest.DoctestItem"))),
    attack("h1", 5, "a str-subclass key colliding with __name__ in the test module's dict runs inside the audit hook "
                    "and writes forged passes with its writer", append("calc/__init__.py", COLLIDING_KEY)),
]
UNIT_ATTACKS = [
    attack("oku6", 0, "control on TestCase tests: the gold change made with python3", CLAMP_FIX, kind="control"),
    attack("u1", 3, "unittest.TestCase.run replaced by a function that runs nothing",
           append("calc/__init__.py", "\nimport unittest\nunittest.TestCase.run = lambda self, result=None: None\n")),
]


def _unit_pack(folder):
    """tinypack with a TestCase-style test file and a task on it (``tiny-clamp-unit``), under another name."""
    pack = folder / "tinypack-unit"
    shutil.copytree(TINYPACK, pack)
    (pack / "src" / "tests" / "test_unit.py").write_text(UNIT_TEST)
    clamp = json.loads((pack / "tasks.jsonl").read_text().splitlines()[0])
    unit = {**clamp, "instance_id": "tiny-clamp-unit", "FAIL_TO_PASS": ["tests/test_unit.py::TestClamp::test_high"],
            "PASS_TO_PASS": ["tests/test_unit.py::TestClamp::test_inside"]}
    (pack / "tasks.jsonl").write_text(json.dumps(unit) + "\n")
    spec = yaml.safe_load((pack / "pack.yaml").read_text())
    spec["name"] = "tinypack-unit"
    (pack / "pack.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return pack


@pytest.fixture(scope="module")
def runs(tmp_path_factory, base_image):
    done = {}
    try:
        done["clamp"] = _play(ATTACKS, tmp_path_factory, "round6", TINYPACK, "tiny-clamp")
        done["unit"] = _play(UNIT_ATTACKS, tmp_path_factory, "round6-unit",
                             _unit_pack(tmp_path_factory.mktemp("unit-pack")), "tiny-clamp-unit")
        yield done
    finally:
        for one in done.values():
            remove_containers(one.run_id)


@pytest.mark.parametrize("a", ATTACKS + UNIT_ATTACKS, ids=lambda a: a.id)
def test_a_test_is_watched_whatever_class_its_item_has(runs, a):
    """Each route is not resolved (``check``); the controls resolve unflagged."""
    run = runs["unit" if a in UNIT_ATTACKS else "clamp"]
    result = run.trials[a.id].result
    print(a.id, result["outcome"], sorted(result.get("flags") or []), result.get("reason"))
    check(run, a)
