"""Mirror tests (issue 23): the plan, the comparison of a run's statuses, and data/eh_mirror.py on real files."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from evalharness.grading.mirror import MirrorPlan, disagreements, plan_mirrors, unmirrorable_args

EH_MIRROR = Path(__file__).resolve().parents[2] / "evalharness" / "data" / "eh_mirror.py"
WORD_NAME = re.compile(r"test(_[a-z]+){4}_[0-9]{2}")


def _plan(ids: list[str], seed: int = 7) -> MirrorPlan:
    return plan_mirrors(ids, random.Random(seed))


def test_a_plain_function_gets_a_copy_beside_it_and_a_new_name():
    plan = _plan(["tests/unit/test_a.py::test_parse"])
    (m,) = plan.mirrors
    copy, _, name = m.mirror.partition("::")
    assert copy.startswith("tests/unit/") and WORD_NAME.fullmatch(Path(copy).stem) and copy != "tests/unit/test_a.py"
    assert WORD_NAME.fullmatch(name) and name != "test_parse"
    assert (m.source, m.copy, m.classes, m.name, m.new_name) == ("tests/unit/test_a.py", copy, (), "test_parse", name)
    assert plan.mapping == {"tests/unit/test_a.py::test_parse": m.mirror}
    assert plan.copies == (("tests/unit/test_a.py", copy),) and plan.copy_paths == [copy]
    assert plan.pytest_args == [m.mirror] and plan.selection == {copy: [name]}
    assert plan.skipped == ()
    assert plan.spec() == {"copies": [{"source": "tests/unit/test_a.py", "copy": copy,
                                       "renames": [{"classes": [], "name": "test_parse", "new": name}]}]}


def test_a_file_at_the_root_gets_its_copy_at_the_root():
    (m,) = _plan(["test_root.py::test_x"]).mirrors
    assert "/" not in m.copy and m.copy.endswith(".py")


def test_methods_keep_their_class_and_tests_of_one_file_share_a_copy():
    ids = ["t/test_b.py::TestCase::test_one", "t/test_b.py::TestCase::test_two", "t/test_b.py::test_free",
           "t/test_b.py::Outer::Inner::test_deep", "t/test_c.py::test_other"]
    plan = _plan(ids)
    assert [m.original for m in plan.mirrors] == ids
    one, two, free, deep, other = plan.mirrors
    assert one.copy == two.copy == free.copy == deep.copy != other.copy
    assert len(plan.copies) == 2 and [s for s, _ in plan.copies] == ["t/test_b.py", "t/test_c.py"]
    assert one.mirror == f"{one.copy}::TestCase::{one.new_name}" and one.classes == ("TestCase",)
    assert deep.mirror == f"{one.copy}::Outer::Inner::{deep.new_name}" and deep.classes == ("Outer", "Inner")
    assert len({m.new_name for m in plan.mirrors}) == 5
    renames = plan.spec()["copies"][0]["renames"]
    assert {"classes": ["Outer", "Inner"], "name": "test_deep", "new": deep.new_name} in renames and len(renames) == 4
    assert plan.selection[one.copy] == [f"TestCase::{one.new_name}", f"TestCase::{two.new_name}", free.new_name,
                                        f"Outer::Inner::{deep.new_name}"]


def test_params_stay_on_the_mirror_id_and_the_arguments_run_every_parametrization():
    ids = ["tests/test_p.py::test_p[1-2]", "tests/test_p.py::test_p[a::b]", "tests/test_p.py::C::test_q[x"]
    plan = _plan(ids)
    p1, p2, q = plan.mirrors
    assert p1.new_name == p2.new_name and p1.params == "[1-2]" and p2.params == "[a::b]" and q.params == "[x"
    assert p1.mirror == f"{p1.copy}::{p1.new_name}[1-2]" and p2.mirror == f"{p1.copy}::{p1.new_name}[a::b]"
    assert q.mirror == f"{q.copy}::C::{q.new_name}[x" and q.classes == ("C",)
    assert plan.pytest_args == [f"{p1.copy}::{p1.new_name}", f"{p1.copy}::C::{q.new_name}"]
    assert len(plan.spec()["copies"][0]["renames"]) == 2


def test_old_pytest_instance_segment_is_kept_in_ids_but_is_no_class():
    (m,) = _plan(["t/test_o.py::TestX::()::test_y"]).mirrors
    assert m.classes == ("TestX",) and m.mirror == f"{m.copy}::TestX::()::{m.new_name}"


@pytest.mark.parametrize("test_id", [
    "test_x (tests.test_a.TestA)",          # unittest / Django spelling
    "tests/test_a.py",                       # a whole file
    "docs/usage.rst::usage.rst",             # a doctest text file
    "src/pkg/mod.py::pkg.mod.func",          # a doctest in a module
    "/abs/test_a.py::test_x",
    "../up/test_a.py::test_x",
    "tests/test_a.py::TestA::",
    "tests/test_a.py::check_x",              # not collected under the default-like name the copy gets
    "tests/test_a.py::class::test_x",
])
def test_ids_that_are_no_test_in_a_py_file_are_skipped_with_a_reason(test_id):
    plan = _plan([test_id, "tests/test_ok.py::test_ok"])
    assert [m.original for m in plan.mirrors] == ["tests/test_ok.py::test_ok"]
    assert [s for s, _ in plan.skipped] == [test_id] and all(why for _, why in plan.skipped)


def test_the_random_parts_come_from_the_rng():
    ids = ["t/test_a.py::test_x", "t/test_a.py::T::test_y"]
    assert _plan(ids, 1) == _plan(ids, 1) and _plan(ids, 1) != _plan(ids, 2)
    assert plan_mirrors(ids).mirrors[0].new_name != plan_mirrors(ids).mirrors[0].new_name  # SystemRandom default


def test_is_mirror_id_tells_copies_from_originals():
    plan = _plan(["t/test_a.py::test_x"])
    m = plan.mirrors[0]
    assert plan.is_mirror_id(m.mirror) and plan.is_mirror_id(f"{m.copy}::test_other[1]")
    assert not plan.is_mirror_id("t/test_a.py::test_x") and not plan.is_mirror_id(m.copy)


# --- disagreements ---------------------------------------------------------------------------

def _statuses(plan: MirrorPlan, originals: dict[str, str], mirrors: dict[str, str]) -> dict[str, str]:
    """Statuses of the originals as given, and of each mirror (by the original's id) as given."""
    out = dict(originals)
    for m in plan.mirrors:
        for original, status in mirrors.items():
            if original == m.original_base or original.startswith(m.original_base + "["):
                out[m.mirror_base + original[len(m.original_base):]] = status
    return out


def test_agreeing_runs_have_no_disagreement():
    plan = _plan(["t/test_a.py::test_x", "t/test_a.py::T::test_y"])
    both = {"t/test_a.py::test_x": "passed", "t/test_a.py::T::test_y": "failed"}
    assert disagreements(_statuses(plan, both, both), plan) == []


@pytest.mark.parametrize("original, mirror", [("passed", "failed"), ("failed", "passed"), ("passed", "error"),
                                               ("skipped", "passed"), ("passed", "xfail")])
def test_one_passing_and_the_other_not_is_a_disagreement_naming_both(original, mirror):
    plan = _plan(["t/test_a.py::T::test_y"])
    (m,) = plan.mirrors
    statuses = _statuses(plan, {m.original: original}, {m.original: mirror})
    (problem,) = disagreements(statuses, plan)
    assert m.original in problem and m.mirror in problem and original in problem and mirror in problem


def test_statuses_may_be_test_status_values():
    from evalharness.grading.parsers import TestStatus

    plan = _plan(["t/test_a.py::test_x"])
    (m,) = plan.mirrors
    assert disagreements({m.original: TestStatus.PASSED, m.mirror: TestStatus.PASSED}, plan) == []
    assert len(disagreements({m.original: TestStatus.PASSED, m.mirror: TestStatus.FAILED}, plan)) == 1


def test_both_failing_or_both_non_passing_agree():
    plan = _plan(["t/test_a.py::test_x"])
    (m,) = plan.mirrors
    assert disagreements({m.original: "failed", m.mirror: "error"}, plan) == []


def test_a_missing_mirror_of_a_reported_original_is_a_problem():
    plan = _plan(["t/test_a.py::test_x", "t/test_a.py::test_gone"])
    x, gone = plan.mirrors
    (problem,) = disagreements({x.original: "failed"}, plan)  # test_gone: original not reported either
    assert x.mirror in problem and x.original in problem and "not reported" in problem


def test_an_unreported_original_is_left_to_the_required_tests():
    plan = _plan(["t/test_a.py::test_x"])
    (m,) = plan.mirrors
    assert disagreements({m.mirror: "passed"}, plan) == []


def test_a_listed_function_compares_each_of_its_parametrizations():
    plan = _plan(["t/test_a.py::test_p"])
    (m,) = plan.mirrors
    originals = {"t/test_a.py::test_p[1]": "passed", "t/test_a.py::test_p[2]": "passed",
                 "t/test_a.py::test_pq": "failed"}  # another test sharing the prefix is not one of them
    assert disagreements(_statuses(plan, originals, originals), plan) == []
    flipped = _statuses(plan, originals, {**originals, "t/test_a.py::test_p[2]": "failed"})
    (problem,) = disagreements(flipped, plan)
    assert f"{m.mirror_base}[2]" in problem and "t/test_a.py::test_p[2] passed" in problem
    missing = _statuses(plan, originals, {"t/test_a.py::test_p[1]": "passed"})
    (problem,) = disagreements(missing, plan)
    assert f"{m.mirror_base}[2]" in problem and "not reported" in problem


def test_a_listed_parametrization_compares_only_itself():
    plan = _plan(["t/test_a.py::test_p[1]", "t/test_a.py::test_p[a"])  # SWE-bench's cut spelling of [a b]
    originals = {"t/test_a.py::test_p[1]": "passed", "t/test_a.py::test_p[2]": "passed",
                 "t/test_a.py::test_p[a b]": "passed"}
    mirrors = {"t/test_a.py::test_p[1]": "passed", "t/test_a.py::test_p[2]": "failed",
               "t/test_a.py::test_p[a b]": "failed"}
    (problem,) = disagreements(_statuses(plan, originals, mirrors), plan)  # [2] is not listed
    assert "t/test_a.py::test_p[a b] passed" in problem and f"{plan.mirrors[0].mirror_base}[a b]" in problem


def test_the_comparison_is_not_a_constant():
    """A disagreements() that returns [] always, or flags agreement, fails here."""
    plan = _plan(["t/test_a.py::test_x"])
    (m,) = plan.mirrors
    assert disagreements({m.original: "passed", m.mirror: "passed"}, plan) == []
    assert disagreements({m.original: "passed", m.mirror: "failed"}, plan) != []
    assert disagreements({m.original: "failed", m.mirror: "passed"}, plan) != []


@pytest.mark.parametrize("args, blocked", [(["-q", "{test_files}"], False), (["-k", "parse"], True),
                                            (["-kparse"], True), (["--keyword=parse"], True),
                                            (["-p", "no:cacheprovider", "-rA"], False)])
def test_a_name_filter_blocks_mirrors(args, blocked):
    assert bool(unmirrorable_args(args)) is blocked


# --- eh_mirror.py on real files ----------------------------------------------------------------

MODULE = '''\
import asyncio
import unittest

import pytest


def helper():
    return "test_plain is not renamed here"


def test_plain():
    assert helper().startswith("test_plain")


class TestThing(unittest.TestCase):
    def test_method(self):
        self.assertEqual(NAMES["method"], "test_method")

    def test_plain(self):  # same name as the function, another scope: not renamed
        pass


class TestPlain:
    @pytest.mark.parametrize("n", [1, 2])
    @pytest.mark.parametrize(
        "m", [3])
    def test_param(self, n, m):
        assert n < m


async def test_async_helper_target():
    return 1


def test_calls_async():
    assert asyncio.new_event_loop().run_until_complete(test_async_helper_target()) == 1


NAMES = {"method": "test_method"}
'''


def _run_eh_mirror(workdir: Path, spec: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-s", "-I", str(EH_MIRROR), str(workdir)], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=60)


def test_eh_mirror_writes_a_copy_whose_renamed_tests_collect(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_mod.py").write_text(MODULE)
    ids = ["tests/test_mod.py::test_plain", "tests/test_mod.py::TestThing::test_method",
           "tests/test_mod.py::TestPlain::test_param[3-1]", "tests/test_mod.py::test_async_helper_target"]
    plan = _plan(ids)
    done = _run_eh_mirror(tmp_path, plan.spec())
    assert done.returncode == 0, done.stderr
    plain, method, param, coroutine = plan.mirrors
    copy = tmp_path / plain.copy
    text = copy.read_text()
    assert (copy.stat().st_mode & 0o777) == 0o644
    assert text.count(f"def {plain.new_name}():") == 1 and f"def {method.new_name}(self):" in text
    assert f"    def {param.new_name}(self, n, m):" in text and f"async def {coroutine.new_name}():" in text
    # calls, strings, another scope's test_plain and the decorators are as they were
    assert 'return "test_plain is not renamed here"' in text
    assert "run_until_complete(test_async_helper_target())" in text and "def test_plain(self):" in text
    assert text.replace(plain.new_name, "test_plain").replace(method.new_name, "test_method").replace(
        param.new_name, "test_param").replace(coroutine.new_name, "test_async_helper_target") == MODULE
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                *plan.pytest_args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                               env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert collected.returncode == 0, collected.stdout + collected.stderr
    listed = {line for line in collected.stdout.splitlines() if "::" in line}
    assert listed == {plain.mirror, method.mirror, f"{param.mirror_base}[3-1]", f"{param.mirror_base}[3-2]",
                      coroutine.mirror}


def _refused(tmp_path: Path, source: str, renames: list[dict], copy: str = "tests/test_0123456789ab.py") -> str:
    done = _run_eh_mirror(tmp_path, {"copies": [{"source": "tests/test_mod.py", "copy": copy, "renames": renames}]})
    assert done.returncode != 0 and done.stderr.startswith("eh_mirror: ")
    assert not (tmp_path / copy).exists() or copy == "tests/test_existing.py"
    return done.stderr


@pytest.mark.parametrize("source, renames, why", [
    ("def test_a():\n    pass\n", [{"classes": [], "name": "test_missing", "new": "test_1"}], "defined 0 times"),
    ("def test_a():\n    pass\n\n\ndef test_a():\n    pass\n", [{"classes": [], "name": "test_a", "new": "test_1"}],
     "defined 2 times"),
    ("class T:\n    pass\n\n\ndef test_a():\n    pass\n", [{"classes": ["T"], "name": "test_a", "new": "test_1"}],
     "defined 0 times"),
    ("class B:\n    def test_a(self):\n        pass\n\n\nclass T(B):\n    pass\n",
     [{"classes": ["T"], "name": "test_a", "new": "test_1"}], "defined 0 times"),  # inherited: not in T's scope
    ("def test_a():\n    pass\n\n\nNAME = test_a.__name__\n", [{"classes": [], "name": "test_a", "new": "test_1"}],
     "read at import time"),  # the copy would not import
    ("class T:\n    def test_a(self):\n        pass\n\n\nT.test_a.slow = True\n",
     [{"classes": ["T"], "name": "test_a", "new": "test_1"}], "read at import time"),
    ("class T:\n    def test_a(self):\n        pass\n    test_b = test_a\n",
     [{"classes": ["T"], "name": "test_a", "new": "test_1"}], "read at import time"),
    ("def test_a(:\n", [{"classes": [], "name": "test_a", "new": "test_1"}], "does not parse"),
    ("def test_a():\n    pass\n", [{"classes": [], "name": "test_a", "new": "x; import os"}], "not a plain name"),
])
def test_eh_mirror_refuses_what_it_cannot_rename_exactly(tmp_path, source, renames, why):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text(source)
    assert why in _refused(tmp_path, source, renames)


def test_eh_mirror_refuses_an_existing_copy_a_path_outside_and_writes_nothing(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "tests" / "test_existing.py").write_text("keep\n")
    renames = [{"classes": [], "name": "test_a", "new": "test_1"}]
    assert "already exists" in _refused(tmp_path, "", renames, copy="tests/test_existing.py")
    assert (tmp_path / "tests" / "test_existing.py").read_text() == "keep\n"
    assert "not in the folder" in _refused(tmp_path, "", renames, copy="test_0123456789ab.py")
    assert "relative path" in _refused(tmp_path, "", renames, copy="tests/../../test_0123456789ab.py")
    # two copies, the second refused: the first is not left behind
    (tmp_path / "tests" / "test_two.py").write_text("def test_b():\n    pass\n")
    spec = {"copies": [{"source": "tests/test_mod.py", "copy": "tests/test_aaaaaaaaaaaa.py", "renames": renames},
                       {"source": "tests/test_two.py", "copy": "tests/test_bbbbbbbbbbbb.py",
                        "renames": [{"classes": [], "name": "test_nope", "new": "test_2"}]}]}
    assert _run_eh_mirror(tmp_path, spec).returncode != 0
    assert sorted(p.name for p in (tmp_path / "tests").iterdir()) == ["test_existing.py", "test_mod.py", "test_two.py"]


def test_eh_mirror_refuses_a_symlinked_folder_out_of_the_work_tree(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_mod.py").write_text("def test_a():\n    pass\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "tests").symlink_to(outside)
    spec = {"copies": [{"source": "tests/test_mod.py", "copy": "tests/test_0123456789ab.py",
                        "renames": [{"classes": [], "name": "test_a", "new": "test_1"}]}]}
    done = _run_eh_mirror(work, spec)
    assert done.returncode != 0 and "outside the work tree" in done.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["test_mod.py"]


def test_eh_mirror_keeps_the_encoding_and_line_endings(tmp_path):
    (tmp_path / "tests").mkdir()
    source = "# -*- coding: latin-1 -*-\r\ndef test_a():\r\n    assert 'caf\xe9'\r\n".encode("latin-1")
    (tmp_path / "tests" / "test_mod.py").write_bytes(source)
    spec = {"copies": [{"source": "tests/test_mod.py", "copy": "tests/test_0123456789ab.py",
                        "renames": [{"classes": [], "name": "test_a", "new": "test_1"}]}]}
    assert _run_eh_mirror(tmp_path, spec).returncode == 0
    assert (tmp_path / "tests" / "test_0123456789ab.py").read_bytes() == source.replace(b"test_a", b"test_1")


def test_eh_mirror_is_python_3_6_syntax():
    import ast

    ast.parse(EH_MIRROR.read_text(), feature_version=(3, 6))


SELECT_PLUGIN = '''\
import importlib.util
import json
import os

import pytest

# the launcher's own selection (data/eh_pytest.py), loaded from its file as the grading sandbox has it
_spec = importlib.util.spec_from_file_location("eh_pytest_launcher", os.environ["EH_LAUNCHER_PATH"])
_launcher = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_launcher)
pytest_collection_modifyitems = pytest.hookimpl(trylast=True)(
    _launcher._mirror_selection(json.loads(os.environ["EH_TEST_SELECTION"])))
'''


def test_copies_as_files_with_a_selection_survive_a_copy_that_does_not_import(tmp_path):
    """The recommended wiring (MirrorPlan.selection): node ids into a module that fails to import end pytest's whole
    session (exit 4, nothing runs); the copies passed as files, deselected by ``selection``, do not."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_mod.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    (tests / "test_broken.py").write_text("import no_such_module_anywhere\n\n\ndef test_c():\n    pass\n")
    (tmp_path / "eh_select.py").write_text(SELECT_PLUGIN)
    plan = _plan(["tests/test_mod.py::test_a", "tests/test_broken.py::test_c"])
    assert _run_eh_mirror(tmp_path, plan.spec()).returncode == 0
    launcher = resources.files("evalharness.data").joinpath("eh_pytest.py")
    env = {"PYTHONPATH": str(tmp_path), "EH_TEST_SELECTION": json.dumps(plan.selection), "PATH": "/usr/bin:/bin",
           "EH_LAUNCHER_PATH": str(launcher),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    base = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--continue-on-collection-errors",
            "tests/test_mod.py", "tests/test_broken.py"]
    by_node = subprocess.run([*base, *plan.pytest_args], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
    assert by_node.returncode == 4 and "passed" not in by_node.stdout
    by_file = subprocess.run([*base, "-p", "eh_select", *plan.copy_paths], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert by_file.returncode == 1, by_file.stdout + by_file.stderr
    a, c = plan.mirrors
    assert f"PASSED {a.mirror}" in by_file.stdout and "PASSED tests/test_mod.py::test_a" in by_file.stdout
    assert "1 deselected" in by_file.stdout and "2 errors" in by_file.stdout  # test_b's copy; both broken modules


def test_a_pair_that_disagrees_again_alone_is_tampering_and_one_that_agrees_is_shared_state():
    from evalharness.grading.mirror import recheck_alone

    pairs = [("t.py::test_a", "t_m.py::test_m")]
    assert recheck_alone("passed", {"t.py::test_a": "passed", "t_m.py::test_m": "failed"}, pairs)[0] == "tampered"
    assert recheck_alone("passed", {"t.py::test_a": "passed", "t_m.py::test_m": "passed"}, pairs)[0] == "agree"
    # agreeing alone by both failing: the original passed only beside other tests
    assert recheck_alone("passed", {"t.py::test_a": "failed", "t_m.py::test_m": "failed"}, pairs)[0] == "failing"
    assert recheck_alone("failed", {"t.py::test_a": "failed", "t_m.py::test_m": "failed"}, pairs)[0] == "agree"
    assert recheck_alone("passed", {"t.py::test_a": "passed"}, pairs)[0] == "tampered"  # a mirror missing alone
