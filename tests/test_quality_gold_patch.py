"""The quality gate's gold patch checks on real diffs: idna's generated Unicode tables (installed with this
project's own dependencies), humanize's translation catalogues and compiled .mo files, more-itertools'
hand-written tables, SWE-bench Lite's gold patches (pure, no Docker).

Pins: `packs mine` kept a task whose gold patch was 96 KB of generated Unicode tables, unsolvable in a sandbox
without network. A generated table, a lock file or a data dump is rejected by name; a hand-written list of
primes or an `__all__` of 40 names is code and passes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import idna.uts46data
import pytest

from evalharness.quality.gate import Thresholds
from evalharness.quality.goldpatch import check_gold, is_literal_line, parse_diff
from support import SHARED

MINING = SHARED / "research-data" / "mining-repos"
HUMANIZE = MINING / "python-humanize__humanize.git"
MORE = MINING / "more-itertools__more-itertools.git"
LITE = SHARED / "research-data" / "swebench-lite" / "swe-bench-lite.json"
UTS46 = Path(idna.uts46data.__file__)


def failed(patch: str, thresholds: Thresholds = Thresholds()) -> list[str]:
    return [c.name for c in check_gold(patch, thresholds) if not c.passed]


def added_file(path: str, lines: list[str], start: int = 1) -> str:
    """A diff adding ``lines`` to ``path`` from line ``start`` (1: a new file)."""
    head = "new file mode 100644\n--- /dev/null\n" if start == 1 else f"--- a/{path}\n"
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\n{head}+++ b/{path}\n@@ -{start - 1},0 +{start},{len(lines)} @@\n{body}"


def real_diff(repo: Path, sha: str, *paths: str) -> str:
    if not repo.is_dir():
        pytest.skip(f"needs the shared mining repositories ({repo} is absent)")
    return subprocess.run(["git", "-C", str(repo), "diff", "--binary", "--no-renames", f"{sha}^1", sha, "--", *paths],
                          check=True, capture_output=True, text=True).stdout


def test_idnas_generated_unicode_table_is_rejected_whole_or_in_part():
    table = UTS46.read_text().splitlines()
    whole = added_file("idna/uts46data.py", table)
    assert failed(whole) == ["gold_too_large", "gold_generated", "gold_data_dominated"]
    # an update of the table's middle: no marker line in the diff, and 40 KB fit under the cap: its rows decide
    middle = added_file("idna/uts46data.py", table[2000:3000], start=2001)
    assert len(middle) < Thresholds().max_gold_bytes
    reasons = {c.name: c.reason for c in check_gold(middle)}
    assert failed(middle) == ["gold_data_dominated"] and "idna/uts46data.py" in reasons["gold_data_dominated"]
    with_code = middle + added_file("idna/core.py", ["def check(label):", "    return bool(label)"] * 10)
    assert failed(with_code) == ["gold_data_dominated"]


def test_the_size_cap_is_a_threshold_the_flag_changes():
    patch = added_file("pkg/big.py", [f"def f{i}(x):\n    return x + {i}" for i in range(2000)])
    assert "gold_too_large" in failed(patch)
    assert "gold_too_large" not in failed(patch, Thresholds(max_gold_bytes=len(patch.encode())))


@pytest.mark.parametrize("path, kind", [
    ("poetry.lock", "a lock file"), ("web/package-lock.json", "a lock file"),
    ("static/app.min.js", "a minified or source-map file"), ("src/pkg/_vendor/six.py", "a vendored path"),
    ("third_party/lib/x.c", "a vendored path"), ("pkg/locale/fr/LC_MESSAGES/pkg.mo", "a compiled or binary file"),
])
def test_files_no_one_writes_by_hand_are_named(path, kind):
    reason = next(c.reason for c in check_gold(added_file(path, ["x = 1"])) if c.name == "gold_generated")
    assert f"{path}: {kind}" in reason
    assert "gold_generated" not in failed(added_file("src/pkg/vendors.py", ["x = 1"]))


def test_humanizes_translation_catalogues_and_compiled_catalogues_are_rejected():
    latvian = real_diff(HUMANIZE, "92b4117b95", "src/")  # Add Latvian language localization: a .po file
    assert failed(latvian) == ["gold_data_dominated"]
    moved = real_diff(HUMANIZE, "c363cbb61e", "src/", "humanize/")  # .po and binary .mo files moved
    assert "gold_generated" in failed(moved) and "GIT binary patch" in moved
    fix = real_diff(HUMANIZE, "823ad6096e", "src/")  # a hand-written fix of naturalsize()
    assert failed(fix) == []


def test_hand_written_tables_and_export_lists_are_code():
    primes = real_diff(MORE, "f36c88fe03", "more_itertools/")  # factor() cleanups: 46 lines of a list of primes
    assert sum(is_literal_line(line) for f in parse_diff(primes) for line in f.added + f.removed) >= 40
    assert failed(primes) == []
    assert "gold_data_dominated" in failed(primes, Thresholds(table_min_lines=40))


@pytest.mark.parametrize("line, literal", [
    ("    (0x1F600, 'V'),", True), ("'January': 'Janvier',", True), ("    2,", True), ("None,", True),
    ("    return x + 1", False), ("# (1, 2),", False), ("", False), ("    f(1, 2),", False), ("x = 3", False),
])
def test_a_literal_line_is_only_literals_and_punctuation(line, literal):
    assert is_literal_line(line) is literal


def test_lite_gold_patches_pass():
    if not LITE.is_file():
        pytest.skip(f"SWE-bench Lite records not found at {LITE}")
    records = json.loads(LITE.read_text())
    assert [r["instance_id"] for r in records if failed(r["patch"])] == []
