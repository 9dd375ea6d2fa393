"""Mutants of a gold patch, made without Docker: each kind, what is dropped and why, the cap, and the
probe's pure decisions (killed or survived, flagged or not)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalharness.audit import mutants as gen
from evalharness.audit.mutants import PatchUnsupported, generate, render
from evalharness.audit.probes.mutants import decide, judge
from evalharness.types import TaskSpec

FILLER = "".join(f"c{i} = {i}\n" for i in range(12))  # keeps hunks apart
BASE = ("def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    return x\n\n\n" + FILLER
        + "def scale(x):\n    return x * 2\n")
GOLD = ("def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n\n\n"
        + FILLER + "def scale(x):\n    return x * 3\n")


def diff(base: dict, gold: dict) -> str:
    return render(base, gold)


def apply(tmp_path: Path, base: dict, patch: str) -> dict:
    """``patch`` applied by git to the files of ``base`` (what the grader does), and the result."""
    tree = tmp_path / "tree"
    subprocess.run(["rm", "-rf", str(tree)], check=True)
    for path, text in base.items():
        if text is not None:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(text)
    tree.mkdir(exist_ok=True)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=patch.encode(), check=True, capture_output=True)
    return {p: (tree / p).read_text() if (tree / p).exists() else None for p in base}


def kinds(mutants) -> list[str]:
    return [m.kind for m in mutants]


def test_each_hunk_dropped_alone_and_the_mutant_applies_to_the_base(tmp_path):
    base = {"lib.py": BASE}
    made, _ = generate(diff(base, {"lib.py": GOLD}), base, cap=50)
    dropped = [m for m in made if m.kind == "dropped_hunk"]
    assert len(dropped) == 2
    results = [apply(tmp_path, base, m.patch)["lib.py"] for m in dropped]
    assert GOLD.replace("x * 3", "x * 2") in results  # the scale fix left out
    assert BASE.replace("x * 2", "x * 3") in results  # the clamp fix left out


def test_one_hunk_gives_no_dropped_hunk():
    base = {"lib.py": BASE}
    made, _ = generate(diff(base, {"lib.py": BASE.replace("x * 2", "x * 3")}), base, cap=50)
    assert "dropped_hunk" not in kinds(made)


def test_partial_file_only_when_two_files_and_duplicates_dropped(tmp_path):
    base = {"a.py": "A = 1\n", "b.py": "B = 1\n"}
    gold = {"a.py": "A = 2\n", "b.py": "B = 2\n"}
    made, dropped = generate(diff(base, gold), base, cap=50)
    # one hunk per file: leaving out a's hunk is keeping only b's part, so each pair is one mutant
    structural = [m for m in made if m.family != "ast"]
    assert sorted(kinds(structural)) == ["dropped_hunk", "dropped_hunk"]
    assert dropped["duplicate"] == 2
    assert sorted(tuple(apply(tmp_path, base, m.patch).values()) for m in structural) == [("A = 1\n", "B = 2\n"),
                                                                                   ("A = 2\n", "B = 1\n")]
    one, _ = generate(diff({"a.py": "A = 1\n"}, {"a.py": "A = 2\n"}), {"a.py": "A = 1\n"}, cap=50)
    assert "partial_file" not in kinds(one)


def test_partial_file_of_a_file_with_two_hunks(tmp_path):
    base = {"lib.py": BASE, "b.py": "B = 1\n"}
    made, _ = generate(diff(base, {"lib.py": GOLD, "b.py": "B = 2\n"}), base, cap=50)
    partial = [m for m in made if m.kind == "partial_file"]
    # only lib.py's part is leaving out b.py's one hunk (a dropped hunk already), so only b.py's part is new
    assert [apply(tmp_path, base, m.patch) for m in partial] == [{"lib.py": BASE, "b.py": "B = 2\n"}]


def test_a_change_inside_a_hunk_reverted():
    base_text = "def f(x):\n    a = x + 1\n    b = x + 2\n    c = x + 3\n    return a, b, c\n"
    gold_text = "def f(x):\n    a = x + 10\n    b = x + 2\n    c = x + 30\n    return a, b, c\n"
    base = {"f.py": base_text}
    made, _ = generate(diff(base, {"f.py": gold_text}), base, cap=50)
    reverted = [m for m in made if m.kind == "reverted_block"]
    assert len(reverted) == 2
    assert any("-    c = x + 30\n+    c = x + 3\n" in m.change for m in reverted)


def test_ast_mutations_only_on_added_lines():
    base = {"lib.py": BASE}
    made, _ = generate(diff(base, {"lib.py": GOLD}), base, cap=50)
    ast = [m for m in made if m.family == "ast"]
    assert "ast:flipped_comparison" in kinds(ast)
    flipped = [m.change for m in ast if m.kind == "ast:flipped_comparison"]
    assert any("+    if x < hi:" in c for c in flipped)
    assert not any("if x > lo" in c for c in flipped)  # `if x < lo` is a context line, never mutated
    assert all(m.description.startswith("lib.py:") for m in ast)


def test_mutations_in_a_method_keep_every_other_byte(tmp_path):
    base = {"m.py": 'class K:\n    def f(self, x):\n        """Doc.\n\n  odd indent in a string\n        """\n'
                    "        return x\n\n    def g(self, y):\n        return y\n"}
    gold = {"m.py": base["m.py"].replace("        return y\n", "        if y > 0:\n            return y\n"
                                                            "        return 0\n")}
    made, _ = generate(diff(base, gold), base, cap=50)
    assert made
    for m in made:
        result = apply(tmp_path, base, m.patch)["m.py"]
        assert result.startswith(base["m.py"].split("    def g")[0])  # f, with its odd docstring, untouched


def test_candidates_that_cannot_matter_are_dropped():
    base_text = "def f(x):\n    # old note\n    return x\n\n\n" + FILLER + "def g():\n    return 1\n"
    gold_text = "def f(x):\n    # new note\n    return x\n\n\n" + FILLER + "def g():\n    return 2\n"
    base = {"f.py": base_text, "docs/changes.rst": "v1\n"}
    made, dropped = generate(diff(base, {"f.py": gold_text, "docs/changes.rst": "v1\nfixed g\n"}), base, cap=50)
    # leaving out the comment hunk or the doc file changes nothing that runs
    assert dropped["cannot_matter"] >= 2
    assert all("new note" in m.change or "docs/" not in m.change for m in made)
    assert not any(m.kind == "partial_file" and "fixed g" in m.patch and "return 2" in m.patch for m in made)


def test_docstring_only_difference_cannot_matter():
    base = {"d.py": 'def f():\n    """Old."""\n    x = 0\n    return 1\n'}
    gold = {"d.py": 'def f():\n    """New."""\n    x = 0\n    return 2\n'}
    made, dropped = generate(diff(base, gold), base, cap=50)
    assert dropped["cannot_matter"] == 1  # the docstring put back: the gold in all that runs
    assert [m.description for m in made if m.kind == "reverted_block"] == ["d.py: change 2 of 2 in hunk 1 "
                                                                          "reverted (base line 1)"]


def test_syntactically_invalid_candidates_are_skipped():
    items = "".join(f"    {i},\n" for i in range(10))
    base = {"f.py": "X = (\n" + items + ")\n"}
    made, dropped = generate(diff(base, {"f.py": "X = [\n" + items + "]\n"}), base, cap=50)
    assert dropped["invalid_syntax"] == 2  # `[` closed by `)`, `(` closed by `]`
    assert "dropped_hunk" not in kinds(made)


def test_a_mutation_that_gives_back_the_base_is_dropped():
    base = {"c.py": "def less(a, b):\n    return a > b\n"}
    gold = {"c.py": "def less(a, b):\n    return a < b\n"}
    made, dropped = generate(diff(base, gold), base, cap=50)
    assert dropped["same_as_base"] == 1  # flipping `<` back to `>`
    assert all("a > b" not in m.change.split("\n+", 1)[-1] or m.kind != "ast:flipped_comparison" for m in made)


def test_new_file_dropped_means_not_created(tmp_path):
    base = {"lib.py": BASE, "new.py": None}
    gold = {"lib.py": GOLD, "new.py": "NEW = 1\n"}
    made, _ = generate(diff(base, gold), base, cap=50)
    results = [apply(tmp_path, base, m.patch) for m in made if m.kind == "dropped_hunk"]
    assert {"lib.py": GOLD, "new.py": None} in results


def test_cap_is_kept_deterministic_and_spread_across_kinds():
    body = "".join(f"    if x > {i}:\n        x = x - {i}\n" for i in range(1, 12))
    base = {"big.py": BASE}
    gold = {"big.py": GOLD.replace("    return x * 3\n", body + "    return x * 3\n")}
    patch = diff(base, gold)
    all_made, _ = generate(patch, base, cap=500)
    capped, dropped = generate(patch, base, cap=4, seed=7)
    assert len(all_made) > 4 and len(capped) == 4
    assert dropped["over_cap"] == len(all_made) - 4
    assert capped == generate(patch, base, cap=4, seed=7)[0]
    assert {m.family for m in capped} >= {"dropped_hunk", "ast"}
    assert len({m.kind for m in capped if m.family == "ast"}) >= 2  # classes in turn, not one class's sites
    assert [m.kind for m in generate(patch, base, cap=4, seed=8)[0]] != [] and \
        any(generate(patch, base, cap=4, seed=s)[0] != capped for s in range(8, 12))


def test_patches_this_module_cannot_take_apart():
    with pytest.raises(PatchUnsupported, match="binary"):
        gen.parse_patch("diff --git a/x.png b/x.png\nGIT binary patch\nliteral 4\n")
    base = {"lib.py": BASE}
    with pytest.raises(PatchUnsupported, match="does not match the base"):
        generate(diff(base, {"lib.py": GOLD}), {"lib.py": BASE.replace("return lo", "return LO")})


# --- the probe's decisions (pure) -----------------------------------------------------------------

TASK = TaskSpec(instance_id="t", repo="r", base_commit="", patch="", problem_statement="Fix it.",
                FAIL_TO_PASS=["test_a", "test_b"], PASS_TO_PASS=["test_c"])


def test_judge_kills_on_any_fail_to_pass_failure():
    assert judge(TASK, "unresolved", {"test_a": "passed", "test_b": "failed", "test_c": "passed"}) \
        ["killed_by"] == ["test_b"]
    survived = judge(TASK, "unresolved", {"test_a": "passed", "test_b": "passed", "test_c": "failed"})
    assert survived["result"] == "survived" and not survived["accepted"]  # PASS_TO_PASS caught it
    assert judge(TASK, "resolved", {"test_a": "passed", "test_b": "xfail", "test_c": "passed"})["accepted"]
    assert judge(TASK, "unresolved", {"test_a": "passed"})["result"] == "killed"  # a missing test did not pass
    assert judge(TASK, "patch_apply_failed", {})["result"] == "not_applied"
    assert judge(TASK, "tests_timed_out", {"test_a": "passed", "test_b": "passed"})["result"] == "killed"


def graded(kind: str, result: str, accepted: bool = False) -> dict:
    return {"kind": kind, "description": kind, "result": result, "accepted": accepted}


def test_decide_flags_an_accepted_partial_fix():
    flagged, severity, reason, score = decide([graded("reverted_block", "survived", True),
                                               *[graded("ast:off_by_one", "killed")] * 5])
    assert (flagged, severity, score) == (True, 2, 5 / 6)
    assert "incomplete fix" in reason


def test_decide_one_accepted_ast_mutant_is_a_candidate_two_and_a_fifth_are_serious():
    none = [graded("ast:off_by_one", "killed")] * 4
    assert decide(none)[:2] == (False, 0)
    one = [graded("ast:off_by_one", "survived", True), *[graded("ast:off_by_one", "killed")] * 3]
    assert decide(one)[:2] == (True, 1)  # one accepted variant may be an equivalent mutant
    two = [*[graded("ast:off_by_one", "survived", True)] * 2, *[graded("ast:off_by_one", "killed")] * 6]
    assert decide(two)[:2] == (True, 2)
    few = [*[graded("ast:off_by_one", "survived", True)] * 2, *[graded("ast:off_by_one", "killed")] * 9]
    assert decide(few)[:2] == (True, 1)  # 2 of 11 is under a fifth


def test_decide_surviving_but_rejected_mutants_do_not_flag():
    rows = [graded("dropped_hunk", "survived", False), graded("ast:off_by_one", "killed"),
            graded("dropped_hunk", "not_applied")]
    flagged, severity, _, score = decide(rows)
    assert (flagged, severity, score) == (False, 0, 0.5)  # not-applied left out of the score


def test_a_gold_hunk_off_its_stated_line_applies_where_its_lines_are(tmp_path):
    base = {"lib.py": BASE}
    patch = diff(base, {"lib.py": GOLD})
    shifted = {"lib.py": "# a line the patch does not know\n" * 3 + BASE}  # every hunk is 3 lines off
    made, _ = generate(patch, shifted, cap=50)
    results = [apply(tmp_path, shifted, m.patch)["lib.py"] for m in made if m.kind == "dropped_hunk"]
    assert "# a line the patch does not know\n" * 3 + GOLD.replace("x * 3", "x * 2") in results
    flipped = [m.description for m in made if m.kind == "ast:flipped_comparison"]
    assert flipped and all(d.startswith("lib.py:7:") for d in flipped)  # `if x > hi`, where it really is


def test_tokens_the_gold_patch_kept_and_commutative_swaps_are_not_mutated():
    base = {"p.py": "def port(tls):\n    return 21 if tls else 80\n\n\ndef top(a, b):\n    return a\n"}
    gold = {"p.py": "def port(tls):\n    return 21 if tls else 443\n\n\ndef top(a, b):\n    return min(a, b)\n"}
    made, _ = generate(diff(base, gold), base, cap=50)
    off = [m.description for m in made if m.kind == "ast:off_by_one"]
    assert off and all("443" in d for d in off)  # 21 was there before the fix: not the fix's code
    assert "ast:swapped_arguments" not in kinds(made)  # min(b, a) is min(a, b)
    assert "ast:dropped_argument" in kinds(made)  # min(a) is a real (if odd) mutant
