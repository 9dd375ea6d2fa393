"""The quality gate on real text, without Docker: what each check would reject, with examples to judge by.

    .venv/bin/python benchmarks/gate_history.py [--examples 5] [--write]

- humanize and more-itertools (../shared/research-data/mining-repos/): every first-parent commit's statement
  as `packs mine` makes it (mine_rules.statement_for, no issue export), checked with the names its tests use;
  the gold patch (library files of the change) of every commit that changes library files. Counts are given
  over all commits and over candidates (commits changing tests and library `.py` files).
- SWE-bench Lite (../shared/research-data/swebench-lite/): every problem statement and gold patch. Lite's
  statements are real issues, so every rejection there is a false rejection: the rate is reported.

With --write, the section "Quality gate on real history" of BENCHMARKS.md is replaced.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402
from evalharness.quality.gate import VERDICTS, run_gate  # noqa: E402
from evalharness.sources import mine_rules as rules  # noqa: E402
from evalharness.sources.leak import names_tests_use  # noqa: E402
from evalharness.sources.mine import History  # noqa: E402

DATA = REPO.parent / "shared" / "research-data"
REPOS = ("python-humanize__humanize.git", "more-itertools__more-itertools.git")
TITLE = "Quality gate on real history"
READING = (
    "Read by hand (the candidates' rejections; the other commits never become tasks): the gold patch, changelog, "
    "CI-note and revert rejections of candidates are all right (translation catalogues and .mo files, `Version "
    "11.0.1` and `Changes for version ...` merges bundling a release, `Replace Flake8 with Ruff`, `Get coverage to "
    "100%`). `bare_title` is the strict one: of its candidate rejections that no other check makes (24 humanize, "
    "154 more-itertools), 4 and 44 are titles of 4-5 words naming code. Most of those add a parameter or a function "
    "whose meaning the title does not give (`Add validator parameter to bucket()`, `Add keep_separator to "
    "split_at`, `Add subfactorial()`), which the tests then pin; about 4 of the 48 could be solved from the title "
    "alone by a careful engineer (`Fix product_index() with iterator input`, `Handle empty interleave_evenly "
    "input`, `Make numeric_range an iterable`, `Let last() use reversed()`): false rejections at the default "
    "`title_min_words` 6 (these counts were taken before `squashed_branch` existed). `--issues` or "
    "`--rewrite-model` give such candidates a statement that passes. `squashed_branch` (added 2026-12-06 after 6 "
    "of the 8 unfair tasks in \"Mined tasks read by hand\" turned out to be squashed branches) rejects 9 humanize "
    "and 25 more-itertools candidates that no other check rejects; its examples (`Simplify` followed by 17 more "
    "messages, `Fix GHA caching` by 11, `fix checks` by 3) are branch logs, not reports. Its known cost: 1 of the "
    "6 squashes of 3 or more messages read by hand was fair (`ea2ea49d78`, the tested ValueError is stated).")


def survey_repo(name: str) -> dict:
    history = History(str(DATA / "mining-repos" / name))
    rejected, candidates = defaultdict(list), defaultdict(list)
    commits = history.commits(history.tip("HEAD"), None, None)
    n_candidates = 0
    for commit in commits:
        if commit.parent is None:
            continue
        split = rules.split_change(commit.paths)
        is_candidate = split.verdict is None
        n_candidates += is_candidate
        made = rules.statement_for(commit.message, is_merge=commit.is_merge, merged_messages=commit.merged_messages)
        statement = made.text
        tests = history.diff(commit.parent, commit.sha, split.test)
        gold = history.diff(commit.parent, commit.sha, split.source) if split.source else None
        gate = run_gate(statement or None, gold, project=name.removesuffix(".git"), names=names_tests_use(tests),
                        squashed=made.messages)
        for check in gate.failed:
            row = {"commit": commit.sha[:10], "statement": statement, "reason": check.reason,
                   "candidate": is_candidate}
            rejected[check.name].append(row)
            if is_candidate:
                candidates[check.name].append(row)
    return {"name": name.removesuffix(".git"), "commits": len(commits), "candidates": n_candidates,
            "rejected": rejected, "rejected_candidates": candidates,
            "candidates_passing": n_candidates - len({r["commit"] for rows in candidates.values() for r in rows})}


def survey_lite() -> dict:
    records = json.loads((DATA / "swebench-lite" / "swe-bench-lite.json").read_text())
    rejected = defaultdict(list)
    failed = set()
    for record in records:
        gate = run_gate(record["problem_statement"], record["patch"], project=record["repo"])
        for check in gate.failed:
            rejected[check.name].append({"commit": record["instance_id"], "statement": record["problem_statement"],
                                         "reason": check.reason})
            failed.add(record["instance_id"])
    return {"name": "SWE-bench Lite", "tasks": len(records), "rejected": rejected, "failed": len(failed)}


def _example(row: dict) -> str:
    first = row["statement"].strip().splitlines()[0] if row["statement"].strip() else ""
    mark = " (candidate)" if row.get("candidate") else ""
    return f"`{row['commit']}`{mark} {json.dumps(first[:70], ensure_ascii=False)}: {row['reason'][:110]}"


def render(repos: list[dict], lite: dict, examples: int) -> str:
    lines = ["`benchmarks/gate_history.py`: the quality gate (`evalharness/quality/`, docs/mining.md \"The quality "
             "gate\") on every first-parent commit of the two full-history repositories (statement as `packs mine` "
             "makes it without an issue export; gold patch = the change's library files) and on SWE-bench Lite. "
             "Pure: git and text only. A commit failing two checks counts under both.", "",
             "| check | " + " | ".join(f"{r['name']} (of {r['commits']} commits / {r['candidates']} candidates)"
                                      for r in repos) + f" | Lite (of {lite['tasks']}) |",
             "|---|" + "---|" * (len(repos) + 1)]
    for check in VERDICTS:
        cells = [f"{len(r['rejected'].get(check, []))} / {len(r['rejected_candidates'].get(check, []))}"
                 for r in repos]
        lines.append(f"| `{check}` | " + " | ".join(cells) + f" | {len(lite['rejected'].get(check, []))} |")
    lines.append("| candidates passing every check | " + " | ".join(
        f"{r['candidates_passing']} of {r['candidates']}" for r in repos) + f" | {lite['tasks'] - lite['failed']} |")
    lines += ["", READING]
    lines += ["", f"SWE-bench Lite false-rejection rate (Lite statements are real issue reports with a reviewed gold "
              f"patch): {lite['failed']} of {lite['tasks']} ({lite['failed'] / lite['tasks']:.1%})."]
    for survey in [*repos, lite]:
        lines += ["", f"Examples, {survey['name']} (first {examples} per check, candidates first, newest first):", ""]
        for check in VERDICTS:
            rows = sorted(survey["rejected"].get(check, []), key=lambda r: not r.get("candidate"))
            if rows:
                lines.append(f"- `{check}` ({len(rows)}): " + "; ".join(_example(r) for r in rows[:examples]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="replace the section of BENCHMARKS.md")
    args = parser.parse_args()
    missing = [p for p in [DATA / "mining-repos" / r for r in REPOS] if not p.is_dir()]
    if missing:
        sys.exit(f"needs the shared research data: {missing[0]} is absent")
    text = render([survey_repo(r) for r in REPOS], survey_lite(), args.examples)
    print(text)
    if args.write:
        write_section(REPO / "BENCHMARKS.md", TITLE, text)


if __name__ == "__main__":
    main()
