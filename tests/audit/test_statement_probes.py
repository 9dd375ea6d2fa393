"""The text probes decide where they decide: every condition of each rule, flipped, flips the answer.

Pins: a statement probe that counted names the tests define themselves (a local variable, a fixture) as
requirements flagged every task; one that took a name the base already has as hidden flagged every
bug fix. Hand-made tasks, no Docker; the base code is a folder (``DirBaseCode``).
"""

from __future__ import annotations

import pytest

from evalharness.audit.context import AuditContext, DirBaseCode
from evalharness.audit.probes import PROBES
from evalharness.audit.probes.statement import LEAK, STRICT_LITERALS, UNDERSPECIFIED, proposed_patch
from evalharness.audit.probes.testtext import read_tests
from evalharness.types import TaskSpec

GOLD = """\
diff --git a/calc/core.py b/calc/core.py
--- a/calc/core.py
+++ b/calc/core.py
@@ -1,4 +1,8 @@ def area(width, height):
 def area(width, height):
-    return width * height
+    if width < 0 or height < 0:
+        raise ValueError("sides must not be negative")
+    return width * height
+
+def perimeter_of(width, height):
+    return 2 * (width + height)
"""

TESTS = """\
diff --git a/tests/test_core.py b/tests/test_core.py
--- a/tests/test_core.py
+++ b/tests/test_core.py
@@ -1,3 +1,14 @@
 from calc.core import area
+from calc.core import perimeter_of
+
+
+def test_negative_side():
+    sides = 3
+    with pytest.raises(ValueError, match="sides must not be negative"):
+        area(-1, sides)
+
+
+def test_perimeter():
+    assert perimeter_of(2, 3) == 10
"""

STATEMENT = "area() accepts negative sides and returns a negative area. It should refuse them."
BASE = {"calc/core.py": "def area(width, height):\n    return width * height\n",
        "tests/test_core.py": "from calc.core import area\n"}
F2P = ["tests/test_core.py::test_negative_side", "tests/test_core.py::test_perimeter"]


def task(statement=STATEMENT, patch=GOLD, test_patch=TESTS, f2p=F2P) -> TaskSpec:
    return TaskSpec(instance_id="t-1", problem_statement=statement, patch=patch, test_patch=test_patch,
                    FAIL_TO_PASS=f2p, base_commit="abc")


def base_dir(tmp_path, extra: dict[str, str] | None = None) -> DirBaseCode:
    for path, text in {**BASE, **(extra or {})}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return DirBaseCode(tmp_path)


def run(probe, t: TaskSpec, base) -> dict:
    finding = probe.run(t, AuditContext(pack=None, base_code=lambda _: base))
    return finding


def texts(finding) -> set[str]:
    return {item["text"] for item in finding.evidence["items"]}


# --- what the tests require -------------------------------------------------------------------

def test_names_the_tests_define_are_not_requirements():
    read = read_tests(TESTS, F2P)
    names = {u.name for u in read.uses}
    assert {"perimeter_of", "area"} <= names
    assert "sides" not in names            # assigned in the test
    assert "test_perimeter" not in names   # the test itself
    assert "ValueError" not in names       # a builtin


def test_only_strings_of_asserting_lines_are_literals_and_they_know_their_test():
    patch = TESTS.replace("@@ -1,3 +1,14 @@", "@@ -1,3 +1,15 @@") + '+    label = "a label, not asserted"\n'
    read = read_tests(patch, ["tests/test_core.py::test_negative_side"])
    literals = {lit.value: lit.where for lit in read.literals}
    assert set(literals) == {"sides must not be negative"}
    assert literals["sides must not be negative"].test == "test_negative_side"
    assert literals["sides must not be negative"].fail_to_pass
    assert literals["sides must not be negative"].line == 7
    assert read.supplied("a label") and not read.supplied("sides must not be negative")


def test_a_string_inside_an_assertion_opened_by_context_lines_is_asserted():
    patch = """\
--- a/tests/test_log.py
+++ b/tests/test_log.py
@@ -10,5 +10,7 @@ def test_format():
     result.stdout.fnmatch_lines(
         [
-            "old format line",
+            "WARNING new format line",
+            "INFO second line",
         ]
     )
+    names = ["not asserted"]
"""
    assert [lit.value for lit in read_tests(patch, []).literals] == ["WARNING new format line", "INFO second line"]
    assert read_tests(patch, []).inputs == ["not asserted"]
    assert read_tests(patch.replace("fnmatch_lines", "extend"), []).literals == []


# --- underspecified ------------------------------------------------------------------------------

def test_underspecified_flags_a_new_name_and_message_the_statement_never_gives(tmp_path):
    finding = run(UNDERSPECIFIED, task(), base_dir(tmp_path))
    assert finding.flagged and finding.family == "underspecified"
    assert texts(finding) == {"perimeter_of", "sides must not be negative"}
    assert finding.severity == 2
    assert finding.evidence["base_code"] == "git base commit"
    where = {i["text"]: i["where"] for i in finding.evidence["items"]}
    assert where["sides must not be negative"] == ["tests/test_core.py:7 in test_negative_side (FAIL_TO_PASS)"]


@pytest.mark.parametrize("flip", ["statement", "base", "gold"])
def test_underspecified_a_name_said_at_base_or_not_from_the_gold_is_not_hidden(tmp_path, flip):
    t, extra = task(), {}
    if flip == "statement":
        t = task(statement=STATEMENT + " Add perimeter_of(); the error says: sides must not be negative.")
    elif flip == "base":
        extra = {"calc/more.py": "def perimeter_of(w, h):\n    pass\nMSG = 'sides must not be negative'\n"}
    else:
        t = task(patch=GOLD.replace('+    return 2 * (width + height)', ' # perimeter_of sides must not be negative')
                 .replace('+        raise ValueError("sides must not be negative")', '+        raise ValueError'))
    finding = run(UNDERSPECIFIED, t, base_dir(tmp_path, extra))
    assert not finding.flagged and finding.severity == 0 and texts(finding) == set()


def test_underspecified_severity_follows_the_fail_to_pass_tests(tmp_path):
    outside = run(UNDERSPECIFIED, task(f2p=["tests/test_core.py::test_other"]), base_dir(tmp_path))
    assert outside.flagged and outside.severity == 1
    three = TESTS + "+    assert perimeter_of(1, 1) == 4, 'four sides of unit length'\n"
    three = three.replace("+def perimeter_of", "+def perimeter_of")
    gold = GOLD + "+# four sides of unit length\n"
    assert run(UNDERSPECIFIED, task(test_patch=three, patch=gold), base_dir(tmp_path)).severity == 3


def test_underspecified_without_base_code_decides_from_the_patches_and_says_so():
    finding = run(UNDERSPECIFIED, task(), None)
    assert finding.flagged and finding.evidence["base_code"].startswith("unavailable")
    in_context = task(test_patch=TESTS.replace(" from calc.core import area",
                                               " from calc.core import area, perimeter_of"))
    assert "perimeter_of" not in texts(run(UNDERSPECIFIED, in_context, None))


# --- strict_literals -----------------------------------------------------------------------------

def test_strict_literals_flags_exact_strings_private_and_new_names(tmp_path):
    tests = TESTS + "+    assert area(1, 1)._cached is None\n"
    finding = run(STRICT_LITERALS, task(test_patch=tests), base_dir(tmp_path))
    assert finding.flagged and finding.family == "overly_strict"
    kinds = {i["text"]: i["kind"] for i in finding.evidence["items"]}
    assert kinds == {"sides must not be negative": "exact_string", "_cached": "private_name",
                     "perimeter_of": "new_name"}
    assert finding.severity == 3


@pytest.mark.parametrize("flip", ["statement", "base", "supplied"])
def test_strict_literals_a_string_the_solver_can_read_is_not_strict(tmp_path, flip):
    t, extra = task(patch=GOLD.replace("perimeter_of", "perimeter")), {}
    t = task(patch=t.patch, test_patch=TESTS.replace("perimeter_of", "perimeter"))
    if flip == "statement":
        t = task(statement=STATEMENT + ' Raise ValueError("sides must  not be negative").', patch=t.patch,
                 test_patch=t.test_patch)
    elif flip == "base":
        extra = {"calc/errors.py": "NEGATIVE = 'sides must not be negative'\nperimeter = 1\n"}
    else:
        t = task(patch=t.patch, test_patch=t.test_patch.replace(
            "+    sides = 3", '+    sides = 3\n+    note = "the sides must not be negative here"'))
    finding = run(STRICT_LITERALS, t, base_dir(tmp_path, extra))
    assert "sides must not be negative" not in texts(finding)


def test_strict_literals_a_private_name_at_base_is_not_new(tmp_path):
    tests = TESTS.replace("perimeter_of", "area") + "+    assert area(1, 1)._cached is None\n"
    gold = GOLD.replace("perimeter_of", "perimeter")
    statement = STATEMENT + " The message is: sides must not be negative."
    base = base_dir(tmp_path, {"calc/cache.py": "_cached = None\n"})
    assert not run(STRICT_LITERALS, task(statement=statement, patch=gold, test_patch=tests), base).flagged
    assert run(STRICT_LITERALS, task(statement=statement, patch=gold, test_patch=tests),
               DirBaseCode(tmp_path / "calc" / "missing")).flagged


# --- leak ----------------------------------------------------------------------------------------

def test_leak_flags_gold_code_in_the_statement_with_severity_by_share():
    small = run(LEAK, task(statement=STATEMENT + ' Maybe raise ValueError("sides must not be negative")?'), None)
    assert small.flagged and small.family == "solution_leak" and small.severity == 1
    assert small.evidence["gold_code"][0]["text"].startswith("raise ValueError")
    whole = STATEMENT + "\nFix:\n" + "\n".join(line[1:] for line in GOLD.splitlines() if line.startswith("+ "))
    assert run(LEAK, task(statement=whole), None).severity == 3
    assert not run(LEAK, task(), None).flagged


def test_leak_flags_a_proposed_patch_against_the_code_the_gold_changes():
    proposal = STATEMENT + "\nI patched it locally:\n-    return width * height\n+    return abs(width * height)\n"
    finding = run(LEAK, task(statement=proposal), None)
    assert finding.flagged and finding.severity == 2
    assert finding.evidence["proposed_patch"]["removed"] == ["return width * height"]
    elsewhere = proposal.replace("-    return width * height", "-    return other_thing(x)")
    assert proposed_patch(elsewhere, GOLD) == {} and not run(LEAK, task(statement=elsewhere), None).flagged
    bullets = STATEMENT + "\n- return width * height\n"   # a removed line with no added line: not a diff
    assert proposed_patch(bullets, GOLD) == {}


def test_the_three_probes_are_registered_with_rules():
    for name, family, needs in (("underspecified", "underspecified", "base"),
                                ("strict_literals", "overly_strict", "base"), ("leak", "solution_leak", "task")):
        probe = PROBES[name]
        assert probe.family == family and probe.needs == needs and probe.version >= 1
        assert len(probe.rule) > 200 and "Severity" in probe.rule


def test_findings_change_hash_with_base_availability(tmp_path):
    with_base = run(UNDERSPECIFIED, task(), base_dir(tmp_path))
    without = run(UNDERSPECIFIED, task(), None)
    assert with_base.inputs_hash != without.inputs_hash
    assert with_base.inputs_hash == run(UNDERSPECIFIED, task(), base_dir(tmp_path)).inputs_hash


def test_a_glob_or_regex_string_is_said_when_each_piece_between_wildcards_is(tmp_path):
    globbed = TESTS.replace('match="sides must not be negative"', 'match="sides must.*negative"')
    pieces = STATEMENT + " The error should say the sides must not be negative."
    assert "sides must.*negative" not in texts(run(STRICT_LITERALS, task(statement=pieces, test_patch=globbed),
                                                   base_dir(tmp_path)))
    assert "sides must.*negative" in texts(run(STRICT_LITERALS, task(test_patch=globbed), base_dir(tmp_path)))


def test_a_name_the_gold_only_imports_is_not_brought_by_it():
    imports = GOLD.replace("+def perimeter_of(width, height):\n+    return 2 * (width + height)\n",
                           "+from calc.shapes import perimeter_of\n+HALF = perimeter_of(1, 1) / 2\n")
    assert "perimeter_of" not in texts(run(UNDERSPECIFIED, task(patch=imports), None))
    assert "perimeter_of" not in texts(run(STRICT_LITERALS, task(patch=imports), None))
    assert "perimeter_of" in texts(run(UNDERSPECIFIED, task(), None))


def test_a_message_held_in_a_constant_is_asserted_where_the_assertion_uses_it(tmp_path):
    constant = TESTS.replace('match="sides must not be negative"', "match=MESSAGE").replace(
        "+def test_negative_side():", '+MESSAGE = r"^sides must not be negative\\.$"\n+def test_negative_side():')
    gold = GOLD.replace('must not be negative"', 'must not be negative."')
    read = read_tests(constant, F2P)
    (literal,) = read.literals
    assert literal.value == r"^sides must not be negative\.$" and literal.where.test == "test_negative_side"
    finding = run(UNDERSPECIFIED, task(test_patch=constant, patch=gold), base_dir(tmp_path))
    assert texts(finding) == {"perimeter_of", r"^sides must not be negative\.$"} and finding.severity == 2
    unused = constant.replace("match=MESSAGE", 'match="neg"')
    assert read_tests(unused, F2P).literals == [] and read_tests(unused, F2P).supplied("sides must not")


@pytest.mark.parametrize("probe", [UNDERSPECIFIED, STRICT_LITERALS])
def test_a_task_whose_tests_sit_at_base_is_skipped_not_clean(probe):
    """Injected tasks carry no test patch: with no added test line read, the probe has nothing to go on."""
    task = TaskSpec(instance_id="at-base", problem_statement="ranges lose their last page", patch=GOLD,
                    FAIL_TO_PASS=["tests/test_core.py::test_negative_side"])
    found = probe.run(task, AuditContext(pack=None))
    assert found.status == "skipped" and not found.flagged and "adds no test lines" in found.reason
    with_tests = probe.run(task.model_copy(update={"test_patch": TESTS}), AuditContext(pack=None))
    assert with_tests.status == "ok"
