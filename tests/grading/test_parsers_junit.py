"""JUnit node ids must equal pytest's own node ids, or FAIL_TO_PASS lookups silently miss.

The bug this pins: the first parser rebuilt ids as ``file::name`` from the ``file`` attribute,
which is wrong for a test inherited from a base class in another file (``file`` names the
base's file) and for collection errors. Every check runs real pytest on files written to
``tmp_path``; ``pytest --collect-only -q`` on the same files is the oracle for the ids.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalharness.grading.parsers import TestRun, TestStatus, parse, parse_junit

MODULE = '''
import pytest

@pytest.fixture
def bad_setup():
    raise RuntimeError("setup boom")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown boom")

def test_pass(): pass
def test_fail(): assert 0
def test_setup_error(bad_setup): pass
def test_teardown_error(bad_teardown): pass
def test_fail_then_teardown_error(bad_teardown): assert 0

@pytest.mark.skip(reason="not today")
def test_skip(): pass

@pytest.mark.xfail(reason="known bug")
def test_xfail(): assert 0

@pytest.mark.xfail(reason="loose")
def test_xpass(): pass

@pytest.mark.xfail(reason="tight", strict=True)
def test_xpass_strict(): pass

@pytest.mark.parametrize("x", ["a.b", "c/d", "e[f]", "g::h", "sp ace", "1.5", "x - y", "\\u00e9"])
def test_param(x): pass

class TestOuter:
    def test_in_class(self): pass

    class TestInner:
        def test_nested(self): pass

        @pytest.mark.parametrize("v", [1.5, "x.y/z"])
        def test_nested_param(self, v): assert v != 1.5
'''

EXPECTED = {  # by the test's design above; the ids themselves come from --collect-only
    "test_pass": TestStatus.PASSED,
    "test_fail": TestStatus.FAILED,
    "test_setup_error": TestStatus.ERROR,
    "test_teardown_error": TestStatus.ERROR,
    "test_fail_then_teardown_error": TestStatus.ERROR,
    "test_skip": TestStatus.SKIPPED,
    "test_xfail": TestStatus.XFAIL,
    "test_xpass": TestStatus.PASSED,
    "test_xpass_strict": TestStatus.FAILED,
    "TestOuter::TestInner::test_nested_param[1.5]": TestStatus.FAILED,
}


def write_project(root: Path) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    files = {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/test_mod.py": MODULE,
        "pkg/base.py": "class BaseSuite:\n    def test_inherited(self): pass\n"
                       "    def test_inherited_fail(self): assert 0\n",
        # only inherited tests: no sibling reveals the module, the fallback must
        "pkg/test_child.py": "from pkg.base import BaseSuite\n\nclass TestChild(BaseSuite):\n    pass\n",
        # inherited next to a local test
        "pkg/test_mixed.py": "from pkg.base import BaseSuite\n\n"
                             "class TestMixed(BaseSuite):\n    def test_own(self): pass\n",
        "pkg/test_unittest_style.py": "import unittest\n\nclass Cases(unittest.TestCase):\n"
                                      "    def test_u(self): self.assertEqual(1, 1)\n",
        "plain_dir/test_plain.py": "def test_no_package(): pass\n",
        "pkg/test_doctests.py": 'def f():\n    """\n    >>> 1 + 1\n    2\n    """\n',
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def run_pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=root, capture_output=True, text=True, timeout=120)


def collected_ids(root: Path, *args: str) -> set[str]:
    out = run_pytest(root, "--collect-only", "-q", *args).stdout
    return {line for line in out.split("\n\n")[0].splitlines() if line.strip()}


def junit_run(root: Path, *args: str) -> tuple[TestRun, subprocess.CompletedProcess[str]]:
    xml = root / "junit.xml"
    proc = run_pytest(root, "-rA", "-o", "junit_family=xunit1", f"--junitxml={xml}", *args)
    return TestRun(log=proc.stdout, exit_code=proc.returncode, junit_xml=xml.read_text()), proc


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("junit_project")
    write_project(root)
    return root


@pytest.fixture(scope="module")
def junit_results(project: Path) -> dict[str, TestStatus]:
    run, _ = junit_run(project, "--doctest-modules")
    return parse_junit(run)


def test_node_ids_equal_collect_only(project: Path, junit_results: dict[str, TestStatus]) -> None:
    oracle = collected_ids(project, "--doctest-modules")
    assert len(oracle) == 29  # 21 in test_mod, 2 + 3 inherited, unittest, plain, doctest
    assert set(junit_results) == oracle


def test_statuses_of_designed_outcomes(junit_results: dict[str, TestStatus]) -> None:
    prefix = "pkg/sub/test_mod.py::"
    for name, status in EXPECTED.items():
        assert junit_results[prefix + name] is status, name
    assert junit_results["pkg/test_child.py::TestChild::test_inherited"] is TestStatus.PASSED
    assert junit_results["pkg/test_child.py::TestChild::test_inherited_fail"] is TestStatus.FAILED
    assert junit_results["pkg/test_mixed.py::TestMixed::test_inherited_fail"] is TestStatus.FAILED


def test_parametrized_ids_with_dots_brackets_slashes(junit_results: dict[str, TestStatus]) -> None:
    for node in ("test_param[a.b]", "test_param[c/d]", "test_param[e[f]]", "test_param[g::h]",
                 "test_param[sp ace]", "test_param[x - y]",
                 "TestOuter::TestInner::test_nested_param[x.y/z]"):
        assert junit_results["pkg/sub/test_mod.py::" + node] is TestStatus.PASSED


def test_teardown_error_reported_twice_keeps_worst(project: Path) -> None:
    run, _ = junit_run(project, "pkg/sub/test_mod.py::test_fail_then_teardown_error")
    cases = ET.fromstring(run.junit_xml).iter("testcase")
    assert [c.get("name") for c in cases] == ["test_fail_then_teardown_error"] * 2
    assert parse_junit(run) == {"pkg/sub/test_mod.py::test_fail_then_teardown_error": TestStatus.ERROR}


def test_testsuite_root_parses_like_testsuites_root(project: Path) -> None:
    run, _ = junit_run(project, "pkg/sub/test_mod.py")
    root = ET.fromstring(run.junit_xml)
    assert root.tag == "testsuites"  # what current pytest writes; old pytest wrote <testsuite>
    bare = TestRun(log="", exit_code=1, junit_xml=ET.tostring(root.find("testsuite"), "unicode"))
    assert parse_junit(bare) == parse_junit(run)
    assert len(parse_junit(run)) == len(collected_ids(project, "pkg/sub/test_mod.py"))


def test_collection_error_is_an_error_for_the_file(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_broken.py").write_text("import no_such_module_xyz\n\ndef test_x(): pass\n")
    run, proc = junit_run(tmp_path)
    assert proc.returncode == 2  # pytest: interrupted by a collection error
    assert parse_junit(run) == {"tests/test_broken.py": TestStatus.ERROR}
    assert parse("pytest", run) == {"tests/test_broken.py": TestStatus.ERROR}


@pytest.mark.parametrize("text", ["", "<testsuites><testsuite>", "not xml at all"])
def test_malformed_xml_raises_clear_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="JUnit XML is not well-formed"):
        parse_junit(TestRun(log="", exit_code=1, junit_xml=text))


def test_truncated_real_xml_raises(project: Path) -> None:
    run, _ = junit_run(project, "pkg/sub/test_mod.py")
    half = run.junit_xml[: len(run.junit_xml) // 2]
    with pytest.raises(ValueError, match="not well-formed"):
        parse_junit(TestRun(log="", exit_code=1, junit_xml=half))


def test_wrong_root_raises_and_missing_file_is_empty() -> None:
    with pytest.raises(ValueError, match="expected <testsuites> or <testsuite>"):
        parse_junit(TestRun(log="", exit_code=0, junit_xml="<html><body/></html>"))
    assert parse_junit(TestRun(log="", exit_code=1, junit_xml=None)) == {}


def test_unknown_parser_name_lists_known() -> None:
    with pytest.raises(ValueError, match="unknown log parser 'nose'; known: django, jest_json, junit, mocha_json, pytest, sympy, tap, tap_json"):
        parse("nose", TestRun(log="", exit_code=0))


def test_xunit2_without_file_attribute_falls_back_to_classname(project: Path) -> None:
    xml = project / "junit2.xml"
    run_pytest(project, "-o", "junit_family=xunit2", f"--junitxml={xml}", "pkg/sub/test_mod.py",
               "pkg/test_child.py")
    results = parse_junit(TestRun(log="", exit_code=1, junit_xml=xml.read_text()))
    oracle = collected_ids(project, "pkg/sub/test_mod.py", "pkg/test_child.py")
    assert set(results) == oracle
