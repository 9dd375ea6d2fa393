"""Every mutation class changes only its site, and the gold patch (its reverse) restores the file byte for byte.

Pins: a mutation tool that re-prints the whole module (black-style quotes, re-wrapped lines) makes a defect
patch that touches every line, so the gold patch is the whole file and the task is trivial to spot.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalharness.sources.inject import mutations

# Odd formatting on purpose: comments, tabs in a string, a trailing backslash, two blank lines,
# single and double quotes, no newline at the very end of the file.
SOURCE = '''"""A module with   odd formatting."""
import os  # a comment


def clamp(value, low=0, high=10,  strict=False):
    """Keep value between low and high."""
    if value < low:   # below
        return low
    elif value >= high:
        return high
    else:
        log("in range", value)
    return value


class Box:
    def __init__(self, items=None, *, size=3):
        self.items = list(items or [])
        self.size = size

    def put(self, item):
        if len(self.items) + 1 > self.size and not self.full_ok:
            raise ValueError('full:\\t%d' % self.size)
        self.items.append(item)
        return self.items[0]

    def take(self, key):
        try:
            return self.items.pop(key)
        except IndexError:
            raise KeyError(key)


def pick(seq, n):
    return seq[n] if n <= len(seq) - 1 else None


@decorated(1)
def spaced(a,
           b):
    while a and b:
        a -= 1
    return divmod(a, b)


if __name__ == "__main__":
    clamp(1, 2)'''


def git_apply(tmp_path: Path, text: str, patch: str, path: str = "pkg/mod.py") -> bytes:
    tree = tmp_path / "tree"
    (tree / path).parent.mkdir(parents=True, exist_ok=True)
    (tree / path).write_bytes(text.encode())
    (tmp_path / "p.diff").write_bytes(patch.encode())
    subprocess.run(["git", "apply", "--whitespace=nowarn", str(tmp_path / "p.diff")], cwd=tree, check=True,
                   capture_output=True)
    return (tree / path).read_bytes()


def test_every_class_has_sites_in_the_sample():
    found = {s.mutation for s in mutations.sites(SOURCE, "pkg/mod.py")}
    assert found == set(mutations.MUTATIONS)


@pytest.mark.parametrize("name", sorted(mutations.MUTATIONS))
def test_each_site_changes_only_its_lines_and_the_reverse_restores_the_bytes(name, tmp_path):
    sites = mutations.sites(SOURCE, "pkg/mod.py", [name])
    assert sites, name
    for site in sites:
        mutated = mutations.apply(SOURCE, site)
        assert mutated != SOURCE
        compile(mutated, "mod.py", "exec")  # still Python
        defect = mutations.diff(site.path, SOURCE, mutated)
        gold = mutations.diff(site.path, mutated, SOURCE)
        changed = [ln for ln in defect.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert 1 <= len(changed) <= 12, (site, defect)  # one statement's lines, never the module re-printed
        # every line outside the hunk is byte-identical: the defect applied with git gives the mutated text...
        assert git_apply(tmp_path / f"d{site.ordinal}", SOURCE, defect) == mutated.encode()
        # ...and the gold patch on the mutated file gives back the original, to the byte
        assert git_apply(tmp_path / f"g{site.ordinal}", mutated, gold) == SOURCE.encode()
        assert defect.startswith("diff --git a/pkg/mod.py b/pkg/mod.py\n")
        # applying the same site again gives the same bytes (sites are stable)
        assert mutations.apply(SOURCE, site) == mutated


def _mutants(name: str) -> dict[str, str]:
    return {f"{s.before} -> {s.after}": mutations.apply(SOURCE, s) for s in mutations.sites(SOURCE, "m.py", [name])}


def test_what_each_class_does():
    assert "if value > low:   # below" in _mutants("flipped_comparison")["< low -> > low"]
    assert "if value <= low:   # below" in _mutants("wrong_boundary")["< low -> <= low"]
    assert "    elif value > high:" in _mutants("wrong_boundary")[">= high -> > high"]
    off = _mutants("off_by_one")
    assert "if len(self.items) > self.size" in off["len(self.items) + 1 -> len(self.items)"]
    assert "return self.items[1]" in off["0 -> 1"]
    assert not any("low=1" in m for m in off.values())  # defaults belong to changed_default
    assert "def clamp(value, low=0, high=10,  strict=True):" in _mutants("changed_default")["strict=False -> strict=True"]
    assert "def __init__(self, items=None, *, size=4):" in _mutants("changed_default")["size=3 -> size=4"]
    swapped = _mutants("swapped_arguments")
    assert "return divmod(b, a)" in swapped["divmod(a, b) -> divmod(b, a)"]
    assert 'log(value, "in range")' in swapped['log("in range", value) -> log(value, "in range")']
    removed = _mutants("removed_call")
    put = next(m for k, m in removed.items() if "append" in k)
    assert "self.items.append(item)" not in put and "        return self.items[0]" in put
    assert "    else:\n        pass\n    return value" in next(m for k, m in removed.items() if k.startswith("log"))
    wrong = _mutants("wrong_exception_type")
    assert "raise TypeError('full:\\t%d' % self.size)" in wrong["raise ValueError('full:\\t%d' % self.size) -> raise "
                                                                "TypeError('full:\\t%d' % self.size)"]
    assert "except KeyError:" in next(m for k, m in wrong.items() if k.startswith("except"))
    negated = _mutants("negated_condition")
    assert "if not (len(self.items) + 1 > self.size and not self.full_ok):" in next(
        m for k, m in negated.items() if "full_ok" in k)
    assert "    while not (a and b):" in next(m for k, m in negated.items() if k.startswith("while"))
    assert "return seq[n] if not n <= len(seq) - 1 else None" in next(m for k, m in negated.items() if "seq" in k)
    dropped = _mutants("dropped_branch")
    assert "    if value < low:   # below\n        return low\n    return value" in next(
        m for k, m in dropped.items() if "low" in k.split("->")[0][:30])
    early = _mutants("early_return")
    assert "        self.items.append(item)\n        return\n        return self.items[0]" in next(
        m for m in early.values() if "append(item)\n        return\n" in m)


def test_decorators_annotations_and_main_guard_are_left_alone():
    for site in mutations.sites(SOURCE, "m.py"):
        assert site.line < SOURCE.splitlines().index('@decorated(1)') + 1 or site.line > SOURCE.splitlines().index(
            '@decorated(1)') + 1
        assert site.line < SOURCE.splitlines().index('if __name__ == "__main__":') + 1
    assert not any(s.line == 5 and s.mutation == "off_by_one" for s in mutations.sites(SOURCE, "m.py"))


def test_sites_know_their_function_and_module():
    sites = mutations.sites(SOURCE, "src/pkg/mod.py")
    assert {s.function for s in sites} >= {"clamp", "Box.put", "Box.take", "pick", "spaced"}
    put = next(s for s in sites if s.function == "Box.put")
    assert put.function_name == "put" and put.module == "pkg.mod"
    assert mutations.sites(SOURCE, "pkg/__init__.py")[0].module == "pkg"


def test_library_files_leave_out_tests_docs_and_build_scripts():
    files = {p: b"x = 1\n" for p in ["pkg/a.py", "pkg/tests/test_a.py", "tests/test_b.py", "test_c.py", "conftest.py",
                                      "setup.py", "docs/conf.py", "src/pkg/b.py", "pkg/c_test.py", "README.md"]}
    assert [p for p, _ in mutations.iter_library_files(files)] == ["pkg/a.py", "src/pkg/b.py"]


def test_hunk_code_ignores_where_and_how_the_line_is_indented():
    a = mutations.diff("a.py", "def f(x):\n    return x < 1\n", "def f(x):\n    return x > 1\n")
    b = mutations.diff("b.py", "class C:\n    def g(self, x):\n        return x  <  1\n",
                       "class C:\n    def g(self, x):\n        return x  >  1\n")
    assert mutations.hunk_code(a) == mutations.hunk_code(b) == "-returnx<1\n+returnx>1"
