"""The leak check catches statements that give the fix away, and passes statements a reporter could write.

Pins: mining 4 tasks from a private repository by hand gave statements copied from commit messages
("Fix off-by-one in _window_bounds, utils.py line 88"): the agent is told where and what to change,
and the score measures reading, not fixing. Every rule is tested both ways: a planted leak is
caught, the nearest clean wording passes.
"""

from __future__ import annotations

import json

import pytest

from evalharness.sources.leak import MIN_CHARS, MIN_TOKENS, added_code, check_statement, names_tests_use
from support import SHARED

LITE = SHARED / "research-data" / "swebench-lite" / "swe-bench-lite.json"

GOLD = '''\
diff --git a/shapes/geometry.py b/shapes/geometry.py
index 1111111..2222222 100644
--- a/shapes/geometry.py
+++ b/shapes/geometry.py
@@ -40,9 +40,15 @@ class Box:
     def area(self):
         return self.width * self.height

     def clip(self, other):
         """Return the part of this box inside ``other``.

         Both boxes must be axis-aligned.
+        Empty boxes have zero width.
         """
-        left = max(self.left, other.left)
+        left = max(self.left, other.left, 0)
+        right = _clamp_edge(min(self.right, other.right), left)
+        # the width can never be negative
+        return Box(left, right - left, self.height)
+
+
+def _clamp_edge(value, floor):
+    return value if value >= floor else floor
+
+
+MAX_EDGE_LENGTH = 10_000
'''

TESTS = '''\
diff --git a/tests/test_geometry.py b/tests/test_geometry.py
--- a/tests/test_geometry.py
+++ b/tests/test_geometry.py
@@ -1,3 +1,8 @@
 from shapes.geometry import Box
+
+
+def test_clip_of_disjoint_boxes_is_empty():
+    box = Box(0, 5, 5).clip(Box(10, 5, 5))
+    assert box.width == 0
'''

REPO = ["shapes/__init__.py", "shapes/geometry.py", "shapes/render.py", "tests/test_geometry.py",
        "setup.py", "pyproject.toml", "README.md", "docs/usage.rst"]
CLEAN = ("Clipping a box against a box it does not overlap gives a box of negative width: "
         "`Box(0, 5, 5).clip(Box(10, 5, 5)).width` is -5. I expected an empty box (width 0).")


def leaks(statement: str, allowed=("Box", "clip", "width"), **kw) -> list:
    return check_statement(statement, gold_patch=GOLD, repo_files=REPO, allowed=allowed, test_patch=TESTS, **kw)


def kinds(statement: str, **kw) -> set[str]:
    return {leak.kind for leak in leaks(statement, **kw)}


def test_a_realistic_clean_statement_passes():
    assert leaks(CLEAN) == []


# --- gold_code ---------------------------------------------------------------------------------

def test_code_the_gold_patch_adds_is_caught_whatever_its_spacing():
    found = leaks(CLEAN + "\nFix: right = _clamp_edge( min(self.right,other.right),left )")
    code = [leak for leak in found if leak.kind == "gold_code"]
    assert [leak.text for leak in code] == ["right = _clamp_edge( min(self.right,other.right),left )"]


def test_quotes_are_unified_so_a_requoted_string_is_the_same_code():
    gold = '+++ b/m.py\n@@ -1 +1 @@\n-    pass\n+    raise ValueError("width must not be negative")\n'
    said = "It should raise ValueError('width must not be negative') instead."
    assert [leak.kind for leak in check_statement(said, gold_patch=gold)] == ["gold_code"]


def test_short_common_code_does_not_trigger():
    gold = '+++ b/m.py\n@@ -1 +1,3 @@\n-    pass\n+    if n is None:\n+        return x\n'
    for said in ("it should just `return x`", "when `if n is None:` holds", "return x if n is None"):
        assert check_statement(said, gold_patch=gold) == [], said
    assert MIN_TOKENS == 5 and MIN_CHARS == 20   # the documented thresholds (docs/backlog.md)


def test_code_the_base_already_has_may_be_quoted():
    said = "The method does `left = max(self.left, other.left)` and never looks at the right edge."
    assert "gold_code" not in kinds(said)
    assert "gold_code" in kinds("The method should do `left = max(self.left, other.left, 0)`.")


def test_comments_docstrings_and_imports_of_the_gold_patch_are_not_code():
    assert added_code(GOLD)[0] == "        left = max(self.left, other.left, 0)"
    assert not any("never be negative" in line or "zero width" in line for line in added_code(GOLD))
    gold = "+++ b/m.py\n@@ -1 +1,2 @@\n import os\n+from collections.abc import Iterable\n"
    assert check_statement("from collections.abc import Iterable fails on 3.9", gold_patch=gold) == []


def test_prose_matching_words_of_the_patch_is_not_code():
    gold = "+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+message = format_error(the width of a box is never negative)\n"
    assert check_statement("the width of a box is never negative, I think", gold_patch=gold) == []


def test_added_lines_of_non_code_files_are_not_compared():
    gold = "+++ b/CHANGES.rst\n@@ -1 +1,2 @@\n old\n+- clip() returns an empty box (width == 0) now\n"
    assert check_statement("clip() returns an empty box (width == 0) now?", gold_patch=gold) == []


# --- file_path ---------------------------------------------------------------------------------

@pytest.mark.parametrize("said", [
    "The bug is in shapes/geometry.py.",
    "see geometry.py",
    'File "/home/me/src/shapes/shapes/geometry.py", in clip',
    "https://git.example.org/shapes/blob/main/shapes/geometry.py",
])
def test_a_path_of_the_file_the_gold_patch_changes_is_caught(said):
    assert [(leak.kind, leak.reason) for leak in leaks(said)] == [("file_path", "the gold patch changes this file")]


def test_the_hidden_test_file_is_caught_as_a_path_and_as_a_module():
    assert {leak.reason for leak in leaks("run tests/test_geometry.py")} == {"a hidden test file"}
    assert [leak.kind for leak in leaks("tests.test_geometry fails")] == ["file_path"]


def test_another_code_file_of_the_repository_is_caught():
    assert [leak.reason for leak in leaks("compare with shapes/render.py")] == ["a code file of the repository"]


@pytest.mark.parametrize("said", [
    "pip install -e . runs setup.py, configured in pyproject.toml, as README.md says",
    "my script /home/me/demo.py calls it; numpy/core/fromnumeric.py is not involved",
    "`from shapes.geometry import Box` then `Box(0, 5, 5)`",     # the public import path
    "version 1.2.3 on Python 3.11, e.g. with numpy.ndarray inputs",
])
def test_project_files_outside_paths_and_public_import_paths_pass(said):
    assert leaks(said) == [], leaks(said)


def test_a_private_module_the_gold_patch_changes_is_caught_but_not_when_allowed():
    gold = "+++ b/shapes/_impl.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    assert [leak.kind for leak in check_statement("shapes._impl.clip breaks", gold_patch=gold)] == ["file_path"]
    assert check_statement("shapes._impl.clip breaks", gold_patch=gold, allowed=["shapes._impl"]) == []


def test_an_allowed_path_passes():
    assert leaks("see shapes/geometry.py", allowed=["shapes/geometry.py"]) == []


# --- location ----------------------------------------------------------------------------------

@pytest.mark.parametrize("said", [
    "it goes wrong at line 48", "lines 40-52 look wrong", "see #L48", "around L48",
])
def test_a_line_number_is_caught(said):
    assert [leak.kind for leak in leaks(said)] == ["location"]


def test_a_line_number_of_a_repository_file_is_caught_and_of_the_users_own_file_is_not():
    assert kinds('File "shapes/render.py", line 7, in draw') == {"location", "file_path"}
    assert kinds("shapes/render.py:7") == {"location", "file_path"}
    assert leaks('File "/home/me/demo.py", line 7, in <module>\n  demo.py:7: AssertionError') == []


def test_numbers_that_are_not_line_numbers_pass():
    assert leaks("on Python 3.11 with 16 GB, http://localhost:8080/ and 2 boxes; timeline 5 s; the l1 norm") == []


def test_a_function_the_gold_patch_changes_is_caught_unless_the_test_calls_it():
    assert [leak.text for leak in leaks("`clip` returns negative widths", allowed=["Box"])] == ["clip"]
    assert leaks("`clip` returns negative widths") == []


def test_a_phrase_placing_the_change_is_caught():
    said = "the problem is in function `_edge_of` of module shapes.geometry"
    assert "location" in kinds(said)
    assert "location" in kinds("look at the compute_edges function in module shapes.render")


def test_a_phrase_about_what_the_reporter_wrote_passes():
    assert leaks("It happens in the function I wrote, in the class of boxes, in module resolution.") == []


# --- identifier --------------------------------------------------------------------------------

def test_a_private_helper_only_the_gold_patch_defines_is_caught():
    found = leaks(CLEAN + " Maybe add a _clamp_edge helper?")
    assert [(leak.kind, leak.text) for leak in found] == [("identifier", "_clamp_edge")]
    assert [leak.text for leak in leaks("MAX_EDGE_LENGTH should be enforced")] == ["MAX_EDGE_LENGTH"]


def test_a_new_name_passes_when_allowed_or_when_the_base_already_has_it():
    assert leaks("Maybe add a _clamp_edge helper?", allowed=["_clamp_edge"]) == []
    gold = "+++ b/m.py\n@@ -1,2 +1,2 @@\n-def _helper(x):\n+def _helper(x, y=0):\n     pass\n"
    assert [leak.kind for leak in check_statement("_helper ignores y", gold_patch=gold)] == ["location"]
    assert check_statement("_helper ignores y", gold_patch=gold, allowed=["_helper"]) == []


def test_a_plain_word_counts_as_a_name_only_where_written_as_code():
    gold = "+++ b/m.py\n@@ -1 +1,4 @@\n x = 1\n+\n+def flatten(items):\n+    return list(items)\n"
    assert check_statement("nested lists should flatten into one", gold_patch=gold) == []
    assert [leak.text for leak in check_statement("please add `flatten`", gold_patch=gold)] == ["flatten"]
    assert [leak.text for leak in check_statement("call flatten(x)", gold_patch=gold)] == ["flatten"]


def test_names_tests_use_are_what_the_tests_call_not_what_they_define():
    assert names_tests_use(TESTS) >= {"Box", "clip", "width"}
    assert "test_clip_of_disjoint_boxes_is_empty" not in names_tests_use(TESTS)


def test_leaks_come_in_statement_order_with_their_offsets():
    said = "shapes/geometry.py line 48: add _clamp_edge"
    found = leaks(said)
    assert [leak.kind for leak in found] == ["file_path", "location", "identifier"]
    assert all(said[leak.offset:leak.offset + len(leak.text)] == leak.text for leak in found)


# --- real SWE-bench Lite statements --------------------------------------------------------------

def lite() -> dict[str, dict]:
    if not LITE.is_file():
        pytest.skip(f"SWE-bench Lite records not found at {LITE} (see ../shared/research-data/SOURCES.md)")
    return {record["instance_id"]: record for record in json.loads(LITE.read_text())}


def check_lite(record: dict) -> list:
    return check_statement(record["problem_statement"], gold_patch=record["patch"], test_patch=record["test_patch"],
                           allowed=names_tests_use(record["test_patch"]))


@pytest.mark.parametrize("instance_id", [
    "django__django-14411", "psf__requests-2674", "sympy__sympy-15345", "django__django-11999",
    "pytest-dev__pytest-5495",
])
def test_real_statements_labelled_clean_pass(instance_id):
    """Agentless labels these: no solution, no line, function or file location in the statement."""
    assert check_lite(lite()[instance_id]) == []


@pytest.mark.parametrize("instance_id, text", [
    ("django__django-14534", "return self.data['attrs']"),    # labelled "Exact patch" by Agentless
    ("sympy__sympy-24152", "c_part, nc_part = tp.args_cnc()"),
])
def test_real_statements_carrying_the_patch_are_caught(instance_id, text):
    assert text in [leak.text for leak in check_lite(lite()[instance_id]) if leak.kind == "gold_code"]


def test_a_real_traceback_through_the_file_the_fix_changes_is_caught():
    found = check_lite(lite()["django__django-15202"])
    assert ("file_path", "django/core/validators.py") in [(leak.kind, leak.text) for leak in found]
    assert not any("basic_fuzzer.py" in leak.text for leak in found)   # the reporter's own script


def test_names_tests_use_come_from_context_lines_and_whole_test_files_too():
    """A new parametrized case adds a line naming no function (humanize's natural_list([]) fix); the call is context."""
    patch = ("--- a/tests/test_lists.py\n+++ b/tests/test_lists.py\n@@ -5,4 +5,5 @@\n"
             " @pytest.mark.parametrize('items, out', [\n+    ([], ''),\n     ([1], '1'),\n"
             " def test_lists(items, out):\n     assert humanize.natural_list(items) == out\n")
    assert {"natural_list", "humanize"} <= names_tests_use(patch)
    assert "test_lists" not in names_tests_use(patch)
    whole = "import humanize\n\ndef helper():\n    return humanize.naturalsize(1)\n"
    assert "naturalsize" in names_tests_use("", [whole]) and "helper" not in names_tests_use("", [whole])
