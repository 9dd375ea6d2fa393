"""The patch surface policy, path by path, without Docker: what reaches the graded tree.

Pins issue 7: `addopts = "-p plugin"` added to a root pyproject.toml was recorded but never
reverted; a `*.dist-info` entry point at the root was autoloaded; C-quoted paths escaped a regex
parser, so a conftest.py edit was neither reverted nor flagged; hunks under `.git/` were applied.
"""

from __future__ import annotations

import pytest

from evalharness.grading.policy import blobs_needed, decide_surface, pytest_section
from evalharness.grading.surface import Change
from evalharness.types import Flag

TESTS = {"tests/test_calc.py"}
Z = "0" * 40


def change(path: bytes | str, status="M", old_mode="100644", new_mode="100644", old_id="a" * 40, new_id="b" * 40):
    path = path.encode() if isinstance(path, str) else path
    if status == "A":
        old_mode, old_id = "000000", Z
    if status == "D":
        new_mode, new_id = "000000", Z
    return Change(path, status, old_mode, new_mode, old_id, new_id)


def action(path, **kw):
    decision = decide_surface([change(path, **{k: v for k, v in kw.items() if k != "blobs"})], test_files=TESTS,
                              blobs=kw.get("blobs"))
    return decision.actions[0].action, decision


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/post-checkout", "sub/.git/config", ".GIT/config"])
def test_paths_into_git_reject_the_whole_patch(path):
    what, decision = action(path, status="A")
    assert what == "rejected" and decision.rejected and Flag.PATCH_REJECTED.value in decision.flags


@pytest.mark.parametrize("path,flag", [
    ("tests/test_calc.py", Flag.TOUCHED_TESTS), ("tests/__init__.py", Flag.TOUCHED_TESTS),
    ("conftest.py", Flag.TOUCHED_CONFIG), ("calc/conftest.py", Flag.TOUCHED_CONFIG),
    ("tests/pytest.ini", Flag.TOUCHED_CONFIG), ("pytest.ini", Flag.TOUCHED_CONFIG),
    ("tests/setup.cfg", Flag.TOUCHED_CONFIG), ("tests/tox.ini", Flag.TOUCHED_CONFIG),
    ("sub/pyproject.toml", Flag.TOUCHED_CONFIG),
    ("evil-1.0.dist-info/entry_points.txt", Flag.TOUCHED_CONFIG), ("x.egg-info/entry_points.txt", Flag.TOUCHED_CONFIG),
    ("zz.pth", Flag.TOUCHED_CONFIG), ("calc/sitecustomize.py", Flag.TOUCHED_CONFIG),
    ("usercustomize.py", Flag.TOUCHED_CONFIG), ("json.py", Flag.TOUCHED_CONFIG), ("pytest.py", Flag.TOUCHED_CONFIG),
    ("_pytest/__init__.py", Flag.TOUCHED_CONFIG), ("tests/inspect.py", Flag.TOUCHED_CONFIG),
    ("pluggy/__init__.py", Flag.TOUCHED_CONFIG),
])
def test_what_decides_the_verdict_is_restored_and_flagged(path, flag):
    what, decision = action(path, status="A")
    assert what == "restored" and flag.value in decision.flags and not decision.rejected
    assert decision.reset and decision.reset[0].path == path


@pytest.mark.parametrize("path", ["calc/__init__.py", "calc/json.py", "docs/index.rst", "README.md",
                                  "calc/tests_helpers.py"])
def test_the_fix_itself_is_applied_unflagged(path):
    what, decision = action(path)
    assert what == "applied" and decision.flags == set() and decision.reset == []


def test_an_existing_root_module_named_like_the_stdlib_may_change():
    assert action("types.py", status="M")[0] == "applied"
    assert action("types.py", status="A")[0] == "restored"


def test_non_utf8_and_quoted_names_are_judged_by_their_bytes():
    what, decision = action(b'calc/"conf\xfftest".py', status="A")
    assert what == "applied"
    what, decision = action(b"tests/\xff/conftest.py", status="A")
    assert what == "restored" and decision.actions[0].path.endswith("conftest.py")


ROOT_BASE = b'[project]\nname = "calc"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
ROOT_DEPS = b'[project]\nname = "calc"\ndependencies = ["x"]\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
ROOT_PLUGIN = b'[project]\nname = "calc"\n\n[tool.pytest.ini_options]\naddopts = "-q -p forcepass"\n'


def test_root_pyproject_is_restored_only_when_its_pytest_section_changes():
    blobs = {"a" * 40: ROOT_BASE, "b" * 40: ROOT_DEPS}
    what, decision = action("pyproject.toml", blobs=blobs)
    assert what == "applied" and Flag.TOUCHED_CONFIG.value in decision.flags
    what, decision = action("pyproject.toml", blobs={"a" * 40: ROOT_BASE, "b" * 40: ROOT_PLUGIN})
    assert what == "restored"
    assert action("pyproject.toml", blobs={"a" * 40: ROOT_BASE})[0] == "restored"  # unreadable side: a change
    assert action("pyproject.toml", blobs={"a" * 40: ROOT_BASE, "b" * 40: b"[tool.pytest"})[0] == "restored"


def test_root_setup_cfg_and_tox_ini_sections():
    base = b"[metadata]\nname = calc\n"
    added = b"[metadata]\nname = calc\n\n[tool:pytest]\naddopts = -p forcepass\n"
    assert action("setup.cfg", blobs={"a" * 40: base, "b" * 40: added})[0] == "restored"
    assert action("tox.ini", blobs={"a" * 40: b"[tox]\nenvlist=py3\n", "b" * 40: b"[tox]\nenvlist=py311\n"})[0] \
        == "applied"
    assert action("tox.ini", status="A", blobs={"b" * 40: b"[pytest]\naddopts=-p x\n"})[0] == "restored"
    assert pytest_section("setup.cfg", base) is None
    assert pytest_section("tox.ini", b"[pytest]\naddopts = -x\n") is not None


def test_gitlinks_are_dropped_escaping_symlinks_rejected_and_inner_symlinks_kept():
    assert action("vendored", status="A", new_mode="160000")[0] == "dropped"
    out = {"b" * 40: b"/etc/passwd"}
    what, decision = action("calc/link", status="A", new_mode="120000", blobs=out)
    assert what == "rejected" and "outside the work tree" in decision.rejected
    assert action("calc/link", status="A", new_mode="120000", blobs={"b" * 40: b"../../x"})[0] == "rejected"
    assert action("calc/link", status="A", new_mode="120000", blobs={"b" * 40: b"../README.md"})[0] == "applied"
    assert action("calc/link", status="A", new_mode="120000")[0] == "rejected"  # target unknown: not trusted


def test_blobs_needed_names_symlink_targets_and_both_sides_of_root_config():
    changes = [change("pyproject.toml"), change("calc/link", status="A", new_mode="120000", new_id="c" * 40),
               change("calc/x.py"), change("sub/setup.cfg")]
    assert blobs_needed(changes) == {"a" * 40, "b" * 40, "c" * 40}


@pytest.mark.parametrize("path", ["tests/__pycache__/test_calc.cpython-311-pytest-8.3.5.pyc", "calc/__init__.pyc",
                                  "calc/_speedups.cpython-311-x86_64-linux-gnu.so", "calc/fast.pyd", "lib.so.1",
                                  "calc/__pycache__/notes.txt"])
def test_bytecode_and_binary_modules_the_patch_adds_are_removed_and_flagged(path):
    what, decision = action(path, status="A")
    assert (what, decision.actions[0].flag) == ("restored", Flag.COMPILED_ARTEFACT.value), decision
    assert action(path, status="D")[0] == "applied"  # deleting one is harmless


@pytest.mark.parametrize("breaker", ["\f", "\r", "\v", "\x1c", "\x85", "\u2028", "\u2029"])
def test_a_pytest_section_behind_a_line_break_only_pytest_sees_is_restored(breaker):
    old = b"[tox]\nenvlist = py\n"
    new = f"[tox]\nenvlist = py\n{breaker}[pytest]\naddopts = -p calc.evil\n".encode()
    decision = decide_surface([change("tox.ini", old_id="1" * 40, new_id="2" * 40)], test_files=set(),
                              blobs={"1" * 40: old, "2" * 40: new})
    assert decision.actions[0].action == "restored", decision.actions[0]
    with pytest.raises(ValueError):
        pytest_section("tox.ini", new)


def test_pytests_own_parser_and_pythons_agree_on_an_ordinary_section():
    text = b"[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\naddopts =\n    -ra\n    -q\n"
    assert pytest_section("setup.cfg", text) == '[["addopts", "-ra -q"], ["testpaths", "tests"]]'
    assert pytest_section("setup.cfg", text.replace(b"\n", b"\r\n")) == pytest_section("setup.cfg", text)


@pytest.mark.parametrize("path", ["tests/calc.py", "tests/calc/__init__.py", "tests/helpers.py"])
def test_a_new_module_beside_the_tasks_tests_cannot_shadow_what_they_import(path):
    what, decision = action(path, status="A")
    assert (what, decision.actions[0].flag) == ("restored", Flag.TOUCHED_TESTS.value), decision


@pytest.mark.parametrize("path", ["tests/test_new.py", "calc/helpers.py", "tests/calc_extra/mod.py"])
def test_new_test_modules_and_modules_elsewhere_are_applied(path):
    assert action(path, status="A")[0] == "applied"


@pytest.mark.parametrize("path,status", [
    ("tests/helpers.py", "M"), ("tests/helpers.py", "D"), ("tests/data/expected.json", "M"),
    ("tests/unit/util.py", "M"),
])
def test_what_the_tasks_tests_read_from_their_folder_is_restored(path, status):
    """A helper the tests import, a file they compare with: changing it changes what the tests check."""
    what, decision = action(path, status=status)
    assert (what, decision.actions[0].flag) == ("restored", Flag.TOUCHED_TESTS.value), decision
    assert decision.reset and decision.reset[0].path == path


@pytest.mark.parametrize("tests,path,expected", [
    ({"tests/test_calc.py"}, "calc/helpers.py", "applied"),
    ({"tests/test_calc.py"}, "testsuite/helpers.py", "applied"),
    ({"test_calc.py"}, "helpers.py", "applied"),  # tests at the root: the root is never the tests' folder
    ({"calc/test_calc.py"}, "calc/core.py", "applied"),  # in-source tests: a library folder, not a test folder
    ({"sympy/core/tests/test_basic.py"}, "sympy/testing/pytest.py", "applied"),
    ({"sympy/core/tests/test_basic.py"}, "sympy/core/tests/helpers.py", "restored"),
    # pytest's own repository: its runner files are graded as the task's, but their folder is not a test folder
    ({"testing/test_main.py", "src/_pytest/main.py"}, "src/_pytest/python.py", "applied"),
    ({"testing/test_main.py", "src/_pytest/main.py"}, "testing/conftest_helpers.py", "restored"),
])
def test_only_the_folders_of_the_tasks_tests_are_theirs(tests, path, expected):
    decision = decide_surface([change(path)], test_files=tests)
    assert decision.actions[0].action == expected, decision


def test_a_new_file_in_a_test_folder_keeps_its_own_rules():
    assert action("tests/test_new.py", status="A")[0] == "applied"
    assert action("tests/data/new.json", status="A")[0] == "applied"
    assert action("tests/helpers.py", status="A")[0] == "restored"  # a new module beside the tests shadows


def test_a_node_pack_decides_its_test_folders_itself():
    decision = decide_surface([change("tests/helpers.py")], test_files=TESTS, language="node", base="b" * 40)
    assert decision.actions[0].why != decide_surface([change("tests/helpers.py")], test_files=TESTS).actions[0].why
