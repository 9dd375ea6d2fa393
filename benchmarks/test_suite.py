"""The test suite's own cost: a run's JUnit XML (pytest --junitxml) turned into a "Test suite" section of
BENCHMARKS.md: the tier, the counts, the wall time, the summed test time per folder and the slowest tests.

    ./scripts/test --junitxml=/tmp/suite.xml          # or .ci/run --junitxml=... on a fresh clone
    .venv/bin/python benchmarks/test_suite.py /tmp/suite.xml --tier default --wall 1426 --commit abc1234

`--wall` is the wall-clock seconds of the whole command (set-up included) when you timed it; pytest's own
figure (its session time, set-up excluded) is read from the XML.
"""

from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._report import write_section  # noqa: E402


@dataclass
class Case:
    name: str
    seconds: float
    outcome: str  # passed, failed, error, skipped


def read_cases(xml: Path) -> tuple[list[Case], float]:
    root = ET.parse(xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    cases, session = [], 0.0
    for suite in suites:
        session = max(session, float(suite.get("time", 0.0)))
        for case in suite.iter("testcase"):
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    outcome = {"failure": "failed"}.get(child.tag, child.tag)
                    if child.tag == "skipped" and child.get("type") == "pytest.xfail":
                        outcome = "xfailed"  # JUnit has no word for an expected failure
            module = (case.get("classname") or "").replace(".", "/")
            cases.append(Case(f"{module}.py::{case.get('name')}", float(case.get("time", 0.0)), outcome))
    return cases, session


def folder_of(case: Case) -> str:
    path = case.name.split("::")[0]
    parts = path.split("/")
    return "/".join(parts[:2]) + "/" if len(parts) > 2 else "tests/ (top level)"


def render(cases: list[Case], session: float, *, tier: str, wall: float | None, commit: str, top: int,
           load: str = "") -> str:
    counts = defaultdict(int)
    for case in cases:
        counts[case.outcome] += 1
    summed = sum(c.seconds for c in cases)
    lines = [f"Commit `{commit}`, tier `{tier}`, {len(cases)} tests: "
             + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".",
             f"pytest session {session / 60:.1f} min"
             + (f", the whole command (set-up included) {wall / 60:.1f} min" if wall else "")
             + f"; test time summed over workers {summed / 60:.1f} min on {os.cpu_count()} cores"
             + (f" ({load})" if load else "") + ".", "",
             "| folder | tests | summed time (s) |", "|---|---:|---:|"]
    by_folder: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_folder[folder_of(case)].append(case)
    for folder, group in sorted(by_folder.items(), key=lambda kv: -sum(c.seconds for c in kv[1])):
        lines.append(f"| `{folder}` | {len(group)} | {sum(c.seconds for c in group):.0f} |")
    lines += ["", f"The {top} slowest tests:", "", "| test | seconds | outcome |", "|---|---:|---|"]
    for case in sorted(cases, key=lambda c: -c.seconds)[:top]:
        lines.append(f"| `{case.name}` | {case.seconds:.1f} | {case.outcome} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xml", type=Path)
    parser.add_argument("--tier", default="default", choices=["default", "all"])
    parser.add_argument("--wall", type=float, default=None, help="wall-clock seconds of the whole command")
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--load", default="", help="the machine's load during the run, as you observed it "
                                                   "(e.g. 'load average 5-12, shared with a benchmark')")
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    args = parser.parse_args()
    cases, session = read_cases(args.xml)
    if not cases:
        raise SystemExit(f"{args.xml}: no test cases in this JUnit XML")
    text = render(cases, session, tier=args.tier, wall=args.wall, commit=args.commit, top=args.top, load=args.load)
    write_section(args.out, f"Test suite: {args.tier} tier", text)
    print(text)


if __name__ == "__main__":
    main()
