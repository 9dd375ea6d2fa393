"""The coverage gate decides without Docker (quality/coverage.py, quality/measure.parse_run), and its pytest plugin
(data/eh_coverage.py) records real lines per test when pytest runs it here, on a project made in tmp_path.

Each decision is checked both ways: the same data with the one condition flipped gives the other answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from evalharness.quality.coverage import (IMPORT, CoverageData, changed_lines, decide, executable_changes,
                                          statement_lines)
from evalharness.quality.gate import DEFAULT
from evalharness.quality.measure import parse_run, pytest_argv

DATA = Path(__file__).resolve().parents[1] / "evalharness" / "data"

GOLD = """diff --git a/pkg/core.py b/pkg/core.py
index 1111111..2222222 100644
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -1,7 +1,7 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
     return a * b
 
diff --git a/README.md b/README.md
index 1111111..2222222 100644
--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-old
+new
"""


def data(executed: dict, *, complete: bool = True, outcomes: dict | None = None) -> CoverageData:
    sources = {"pkg/core.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"}
    executed = {ctx: {f: set(v) for f, v in files.items()} for ctx, files in executed.items()}
    return CoverageData(executed, sources, outcomes or {}, complete, "" if complete else "timed out after 900 s")


def check(result, name: str) -> bool:
    return next(c for c in result.checks if c.name == name).passed


# --- the changed lines --------------------------------------------------------------------------------------------

def test_changed_lines_are_the_gold_sides_added_lines_of_py_files_only():
    assert changed_lines(GOLD) == {"pkg/core.py": {2}}


def test_a_block_that_only_removes_lines_counts_the_lines_around_the_removal():
    patch = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,4 @@\n def f(x):\n-    x = x[:-1]\n"
             "     y = x * 2\n     return y\n \n")
    assert changed_lines(patch) == {"m.py": {1, 2}}


def test_a_deleted_file_has_no_gold_side_and_a_new_file_all_its_lines():
    patch = ("diff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n"
             "-A = 1\n-B = 2\n"
             "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n"
             "+def g():\n+    return 1\n")
    assert changed_lines(patch) == {"new.py": {1, 2}}


def test_statements_map_continuation_lines_and_leave_out_docstrings_blanks_and_comments():
    source = ('def f(a,\n      b):\n    """Doc\n    string."""\n    # a comment\n\n    return g(a,\n'
              '             b)\n')
    lines = statement_lines(source)
    assert lines[7] == 7 and lines[8] == 7  # a call's continuation -> the statement's first line
    assert lines[1] == 1 and lines[2] == 1  # the def's header
    assert 3 not in lines and 4 not in lines and 5 not in lines and 6 not in lines
    assert statement_lines("def (:\n") is None
    assert executable_changes({"m.py": {3, 7, 8}}, {"m.py": source}) == {"m.py": {7: 7, 8: 7}}


# --- the decisions ------------------------------------------------------------------------------------------------

def test_fail_to_pass_tests_that_execute_the_changed_line_pass_and_ones_that_do_not_are_rejected():
    covering = data({"t::test_add": {"pkg/core.py": [2]}, "t::test_mul": {"pkg/core.py": [6]}})
    result = decide(GOLD, covering, ["t::test_add"], ["t::test_mul"])
    assert result.passed and result.details["covered"] == 1 and result.details["covered_fraction"] == 1.0
    assert result.details["f2p_covering"] == {"t::test_add": {"pkg/core.py": [2]}}

    missing = data({"t::test_add": {"pkg/core.py": [6]}, "t::test_mul": {"pkg/core.py": [6]}})
    result = decide(GOLD, missing, ["t::test_add"], ["t::test_mul"])
    assert result.verdict == "f2p_misses_change" and "0 of the 1 executable" in result.checks[0].reason
    assert check(result, "no_p2p_guard")


def test_a_continuation_line_counts_when_its_statement_runs():
    patch = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def f(a):\n     return g(a,\n"
             "-             1)\n+             2)\n")
    source = "def f(a):\n    return g(a,\n             2)\n"
    run = CoverageData({"t::a": {"m.py": {2}}, "t::b": {"m.py": {2}}}, {"m.py": source})
    assert decide(patch, run, ["t::a"], ["t::b"]).passed
    run.executed["t::a"] = {"m.py": {1}}
    assert decide(patch, run, ["t::a"], ["t::b"]).verdict == "f2p_misses_change"


def test_a_changed_module_constant_counts_only_for_a_test_that_runs_code_of_that_module():
    patch = "diff --git a/pkg/__init__.py b/pkg/__init__.py\n--- a/pkg/__init__.py\n+++ b/pkg/__init__.py\n" \
            "@@ -1,4 +1,4 @@\n-LIMIT = 10\n+LIMIT = 20\n \n \n def check(x):\n"
    source = "LIMIT = 20\n\n\ndef check(x):\n    return x < LIMIT\n"
    uses = CoverageData({IMPORT: {"pkg/__init__.py": {1, 4}}, "t::test_check": {"pkg/__init__.py": {5}},
                         "t::other": {"pkg/__init__.py": {5}}}, {"pkg/__init__.py": source})
    assert decide(patch, uses, ["t::test_check"], ["t::other"]).passed
    # the same constant read by a test that runs no code of the module (a test of the version string)
    reads = CoverageData({IMPORT: {"pkg/__init__.py": {1, 4}}, "t::test_check": {},
                          "t::other": {"pkg/__init__.py": {5}}}, {"pkg/__init__.py": source})
    assert decide(patch, reads, ["t::test_check"], ["t::other"]).verdict == "f2p_misses_change"


def test_a_pass_to_pass_test_guards_a_module_only_by_running_its_code_in_its_own_test():
    guarded = data({"t::test_add": {"pkg/core.py": [2]}, "t::test_mul": {"pkg/core.py": [6]}})
    assert check(decide(GOLD, guarded, ["t::test_add"], ["t::test_mul"]), "no_p2p_guard")
    at_import = data({IMPORT: {"pkg/core.py": [1, 5]}, "t::test_add": {"pkg/core.py": [2]}, "t::test_mul": {}})
    result = decide(GOLD, at_import, ["t::test_add"], ["t::test_mul"])
    assert result.verdict == "no_p2p_guard" and "none of the 1 PASS_TO_PASS" in result.checks[1].reason
    result = decide(GOLD, guarded, ["t::test_add"], [])
    assert result.verdict == "no_p2p_guard" and "no PASS_TO_PASS test" in result.checks[1].reason


def test_a_run_that_is_no_evidence_measures_nothing():
    result = decide(GOLD, data({"t::test_add": {"pkg/core.py": [2]}}, complete=False), ["t::test_add"], ["t::x"])
    assert result.verdict == "coverage_unmeasured" and "timed out" in result.checks[0].reason
    absent = data({"t::other": {"pkg/core.py": [2]}})
    result = decide(GOLD, absent, ["t::test_add"], ["t::other"])
    assert result.verdict == "coverage_unmeasured" and "none of the 1 FAIL_TO_PASS" in result.checks[0].reason
    elsewhere = data({"t::test_add": {}, "t::other": {}})  # the changed file never ran, not even at import
    result = decide(GOLD, elsewhere, ["t::test_add"], ["t::other"])
    assert result.verdict == "coverage_unmeasured" and "another copy" in result.checks[0].reason
    elsewhere.executed[IMPORT] = {"pkg/core.py": {1, 5}}
    assert decide(GOLD, elsewhere, ["t::test_add"], ["t::other"]).verdict == "f2p_misses_change"


def test_nothing_to_measure_passes_and_says_why():
    docs_only = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n"
    result = decide(docs_only, data({}), ["t::a"], [])
    assert result.passed and all("not measured" in c.reason for c in result.checks)
    comment = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-# old\n+# new\n X = 1\n"
    result = decide(comment, CoverageData({"t::a": {}}, {"m.py": "# new\nX = 1\n"}), ["t::a"], [])
    assert result.passed and "no executable line" in result.details["reason"]


def test_the_threshold_is_read_from_the_gates_thresholds():
    run = data({"t::test_add": {"pkg/core.py": [2]}, "t::test_mul": {"pkg/core.py": [6]}})
    assert decide(GOLD, run, ["t::test_add"], ["t::test_mul"], DEFAULT).passed
    strict = replace(DEFAULT, f2p_min_covered_lines=2)
    assert decide(GOLD, run, ["t::test_add"], ["t::test_mul"], strict).verdict == "f2p_misses_change"


# --- the run's report ---------------------------------------------------------------------------------------------

def test_the_diagnostic_runs_report_is_evidence_only_when_pytest_finished_its_session():
    result = json.dumps({"executed": {"t::a": {"m.py": [1]}}, "outcomes": {"t::a": "passed"}, "sources": {},
                         "exitstatus": 1, "python": "3.11.2"}).encode()
    done = parse_run(b"EHCOV ran 1 4\n...", result, 900)
    assert done.complete and done.executed == {"t::a": {"m.py": {1}}} and "3.11.2" in done.reason
    assert not parse_run(b"EHCOV ran 124 900\n", None, 900).complete
    assert "timed out" in parse_run(b"EHCOV ran 124 900\n", result, 900).reason
    assert parse_run(b"EHCOV ran 124 3\n", result, 900).complete  # a test's own exit 124 is no timeout
    assert "without finishing" in parse_run(b"EHCOV ran 1 4\nboom", None, 900).reason
    assert "does not apply" in parse_run(b"EHCOV apply gold\nerror: patch failed", None, 900).reason
    interrupted = json.dumps({"executed": {}, "exitstatus": 2}).encode()
    assert not parse_run(b"EHCOV ran 2 1\n", interrupted, 900).complete


def test_the_diagnostic_run_takes_the_packs_pytest_arguments_and_files():
    argv = pytest_argv("python -m pytest -rA -p no:cacheprovider --junitxml={junit_xml} {test_files}", ["t/a.py"])
    assert argv[:2] == ["-p", "eh_coverage"] and argv[-1] == "t/a.py" and "--junitxml" not in " ".join(argv)
    assert pytest_argv("python tests/runtests.py {test_modules}", ["t/a.py"]) is None


# --- the plugin, for real -----------------------------------------------------------------------------------------

def test_the_plugin_records_each_tests_lines_in_the_chosen_files_only(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("LIMIT = 20\n\n\ndef check(x):\n    if x < LIMIT:\n"
                                                  "        return True\n    return False\n")
    (tmp_path / "other.py").write_text("def other():\n    return 1\n")
    (tmp_path / "test_a.py").write_text("import pkg\nfrom other import other\n\n\ndef test_small():\n"
                                        "    assert pkg.check(3)\n\n\ndef test_limit():\n    assert pkg.LIMIT == 20\n"
                                        "    assert other() == 1\n")
    config = {"workdir": str(tmp_path), "files": ["pkg/__init__.py"], "out": str(tmp_path / "out.json")}
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = {**os.environ, "EH_COV_CONFIG": str(tmp_path / "config.json"), "PYTHONPATH": str(DATA),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "eh_coverage", "-p", "no:cacheprovider", "-q",
                           "test_a.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    run = CoverageData.from_json({**json.loads((tmp_path / "out.json").read_text()), "complete": True})
    assert run.executed["test_a.py::test_small"] == {"pkg/__init__.py": {5, 6}}
    assert run.executed.get("test_a.py::test_limit", {}) == {}  # other.py is not traced, pkg's code not run
    assert run.executed[IMPORT]["pkg/__init__.py"] == {1, 4}
    assert run.outcomes == {"test_a.py::test_small": "passed", "test_a.py::test_limit": "passed"}
    patch = ("diff --git a/pkg/__init__.py b/pkg/__init__.py\n--- a/pkg/__init__.py\n+++ b/pkg/__init__.py\n"
             "@@ -1,1 +1,1 @@\n-LIMIT = 10\n+LIMIT = 20\n")
    assert decide(patch, run, ["test_a.py::test_small"], ["test_a.py::test_small"]).passed
    assert decide(patch, run, ["test_a.py::test_limit"], ["test_a.py::test_small"]).verdict == "f2p_misses_change"


def test_a_file_whose_changes_are_not_executable_needs_no_guard():
    doc = ("diff --git a/pkg/doc.py b/pkg/doc.py\n--- a/pkg/doc.py\n+++ b/pkg/doc.py\n@@ -1,2 +1,2 @@\n"
           "-\"\"\"Old words.\"\"\"\n+\"\"\"New words.\"\"\"\n X = 1\n")
    run = data({"t::test_add": {"pkg/core.py": [2]}, "t::test_mul": {"pkg/core.py": [6]}})
    run.sources["pkg/doc.py"] = '"""New words."""\nX = 1\n'
    result = decide(GOLD + doc, run, ["t::test_add"], ["t::test_mul"])
    assert result.passed and list(result.details["changed_lines"]) == ["pkg/core.py"]
    run.executed["t::test_mul"] = {}
    assert decide(GOLD + doc, run, ["t::test_add"], ["t::test_mul"]).verdict == "no_p2p_guard"
