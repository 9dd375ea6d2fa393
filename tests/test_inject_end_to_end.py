"""`packs inject` end to end in real Docker, on a small library built in the test: mutants its tests miss are
reported as survivors, kept tasks validate, and the pack runs with oracle 100% and null 0%; the test helper the
library ships is never mutated, ``while True`` is never negated, and kept tasks carry their gate results.

Pins: an injected pack whose defects no test catches (null would "resolve" them) or whose gold patch is not
the exact reverse of the defect (oracle fails), which only a real run shows; a kept mutation of a test helper.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from support import run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SHAPES = '''"""Shapes."""


def area(width, height):
    if width < 0 or height < 0:
        raise ValueError("negative size")
    return width * height


def perimeter(width, height):
    return 2 * (width + height)


def describe(width, height, unit="cm"):
    """Never tested: mutants here survive."""
    if width == height:
        return "square of %d %s" % (width, unit)
    return "%d by %d %s" % (width, height, unit)
'''
COUNTING = '''"""Counting."""


def clamp(value, low=0, high=10):
    if value < low:
        return low
    if value > high:
        return high
    return value


def first_multiple(n, k):
    m = n
    while True:
        if m % k == 0:
            return m
        m += 1


def chunks(items, size=2):
    out = []
    for start in range(0, len(items), size):
        out.append(items[start:start + size])
    return out
'''
HELPER = '''"""Checks the tests share (shipped with the library, as numpy.testing or click.testing are)."""


def check_pairs(function, pairs):
    for args, want in pairs:
        got = function(*args)
        if got != want:
            raise AssertionError("%r gave %r, not %r" % (args, got, want))
'''
TESTS = '''import pytest

from geom.shapes import area, perimeter
from geom.counting import chunks, clamp, first_multiple
from geom.testing import check_pairs


def test_area():
    assert area(2, 3) == 6


def test_first_multiple():
    check_pairs(first_multiple, [((7, 3), 9), ((9, 3), 9)])


def test_area_rejects_negative():
    with pytest.raises(ValueError):
        area(-1, 2)


def test_perimeter():
    assert perimeter(2, 3) == 10


def test_clamp():
    assert clamp(-5) == 0
    assert clamp(50) == 10
    assert clamp(5) == 5
    assert clamp(10) == 10


def test_chunks():
    assert chunks([1, 2, 3, 4, 5]) == [[1, 2], [3, 4], [5]]
    assert chunks([1, 2, 3], size=3) == [[1, 2, 3]]
'''


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def library(tmp_path_factory, base_image) -> Path:
    repo = tmp_path_factory.mktemp("geomlib") / "geom-src"
    (repo / "geom").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "geom" / "__init__.py").write_text("")
    (repo / "geom" / "shapes.py").write_text(SHAPES)
    (repo / "geom" / "counting.py").write_text(COUNTING)
    (repo / "geom" / "testing.py").write_text(HELPER)
    (repo / "tests" / "test_geom.py").write_text(TESTS)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "geom")
    return repo


def test_inject_keeps_caught_mutants_reports_the_rest_and_the_pack_runs(library, tmp_path):
    out = library.parent / "injected"
    done = run_cli("packs", "inject", "--repo", str(library), "--count", "3", "--out", str(out), "--seed", "3",
                   "--max-tried", "40", "-j", "2", cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[tried 1]" in done.stdout and "kept 3/3" in done.stdout  # progress as it goes
    report = json.loads((out / "injection-report.json").read_text())
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert report["kept"] == len(tasks) == 3
    verdicts = {e["verdict"] for e in report["mutants"]}
    assert "ok" in verdicts and "survived" in verdicts  # describe() is never tested
    assert all(e["function"] == "describe" or e["verdict"] != "survived" or e["mutation"] in (
        "early_return", "changed_default", "removed_call", "swapped_arguments", "dropped_branch", "off_by_one",
        "negated_condition", "flipped_comparison", "wrong_boundary", "wrong_exception_type") for e in report["mutants"])
    assert not any(e["verdict"] in ("ok", "candidate") and e["function"] == "describe" for e in report["mutants"])
    assert sum(v["tried"] for v in report["by_class"].values()) == report["tried"]
    assert report["excluded_modules"] == {"geom/testing.py": "named as a test helper (testing.py)"}
    assert "never mutated: geom/testing.py" in done.stdout and "  rejected: survived" in done.stdout
    assert not any(e["path"] == "geom/testing.py" or e["before"].startswith("while True") for e in report["mutants"])
    assert sum(r["count"] for r in report["rejected_by_reason"].values()) == sum(
        n for v, n in report["by_verdict"].items() if v not in ("ok", "not_needed"))
    for task in tasks:
        meta = task["metadata"]
        assert task["FAIL_TO_PASS"] and set(task["FAIL_TO_PASS"]).isdisjoint(task["PASS_TO_PASS"])
        assert meta["origin"] == "injected" and meta["mutation"] in report["by_class"]
        assert task["defect_patch"] and task["patch"]
        assert set(meta["gate"]) >= {"library_code", "terminates", "not_wholesale", "statement_no_run_values"}
        assert all(check["passed"] for check in meta["gate"].values())
        statement = task["problem_statement"]
        assert not re.search(r"\w\.py\b|\bline \d+", statement), statement
        assert not re.search(r"0x[0-9a-fA-F]{4,}", statement), statement
        name = meta["function"].rsplit(".", 1)[-1]
        if not meta["test_calls_function"]:
            assert not re.search(rf"(?<![A-Za-z0-9]){name}(?![A-Za-z0-9])", statement), statement
        validation = json.loads((out / "validation" / f"{task['instance_id']}.json").read_text())
        assert validation["verdict"] == "ok"
        # the discovery runs are kept with the validation report: every one complete, the lists' sizes as kept
        discovery = validation["discovery"]
        assert discovery["FAIL_TO_PASS"] == len(task["FAIL_TO_PASS"]) and discovery["verdict"] == "ok"
        assert {r["outcome"] for side in ("base", "gold") for r in discovery["runs"][side]} <= {"resolved", "unresolved"}
    assert sorted(p.stem for p in (out / "validation").glob("*.json")) == sorted(t["instance_id"] for t in tasks)

    for harness, rate in (("oracle", 1.0), ("null", 0.0)):
        run = run_cli("run", "-p", str(out), "-H", harness, "--format", "json", "--runs-dir", str(tmp_path / "runs"),
                      cwd=tmp_path, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
        result = json.loads(run.stdout[run.stdout.index("{"):run.stdout.rindex("}") + 1])
        assert result["scores"][0]["n_tasks"] == 3 and result["scores"][0]["resolve_rate"] == rate
