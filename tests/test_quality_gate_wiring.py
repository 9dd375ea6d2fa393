"""The quality gate in every path that makes tasks, without Docker: `packs mine` (a verdict per failed check,
counted in the report, gate results on the task), `packs import swebench` (reported, never dropped) and
`packs add-task` (refused with the reason, kept with --accept-gate).

Pins: mining kept a task titled "make import faster" and one whose gold patch was a data dump, with nothing
in the report to say so; a reader of a kept task could not see what had been checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalharness.quality.gate import VERDICTS, Thresholds
from evalharness.sources import mine as m
from evalharness.sources.swebench import import_swebench
from support import SHARED, run_cli
from test_mine_statements_and_resume import RecordingValidator, git, miner
from test_mine_statements_and_resume import commit_all as commit

LITE = SHARED / "research-data" / "swebench-lite" / "swe-bench-lite.json"
LIB = "def clamp(value, low, high):\n    return max(low, min(value, high - 1))\n"
FIXED = "def clamp(value, low, high):\n    return max(low, min(value, high))\n"
TEST = "from calc import clamp\n\n\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n"
UPPER = TEST + "\n\ndef test_upper():\n    assert clamp(10, 0, 10) == 10\n"
GOOD = ("clamp() never returns the upper bound\n\n"
        "`clamp(10, 0, 10)` gives 9; the interval is closed, so it should be 10.")


@pytest.fixture
def repo(tmp_path) -> Path:
    """root, a data dump with a good statement, a fix with a bare title, then a good candidate (newest)."""
    repo = tmp_path / "calc"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "root", {"calc/__init__.py": LIB, "tests/test_calc.py": TEST})
    rows = "".join(f'    "{i:04x}": "{chr(65 + i % 26)}",\n' for i in range(300))
    commit(repo, GOOD.replace("clamp()", "the table"), {"calc/table.json": "{\n" + rows + "}\n",
                                                        "calc/table.py": "TABLE = 'table.json'\n",
                                                        "tests/test_table.py": "def test_table():\n    pass\n"})
    commit(repo, "Fix clamp", {"calc/__init__.py": FIXED, "tests/test_calc.py": UPPER})
    commit(repo, GOOD, {"calc/__init__.py": FIXED + "\n\n# the closed interval\n",
                        "tests/test_calc.py": UPPER + "\n\ndef test_lower():\n    assert clamp(-1, 0, 10) == 0\n"})
    return repo


def test_mining_rejects_by_check_counts_each_reason_and_a_candidate_carries_its_gate(tmp_path, repo):
    rewrites = []
    validator = RecordingValidator()
    mined = miner(tmp_path, repo, validator=validator,
                  rewriter=lambda text, tests, leaks: rewrites.append(text) or text)
    commits = mined.history.commits("main", None, None)
    lines: list[str] = []
    report = m.mine(mined.pack.root, mined.history, commits, mined, log=lines.append)
    verdicts = [(c["subject"], c["verdict"]) for c in report["candidates"]]
    assert verdicts == [(GOOD.splitlines()[0], "infra_error"), ("Fix clamp", "bare_title"),
                        ("the table never returns the upper bound", "gold_data_dominated"), ("root", "no_parent")]
    assert report["totals"]["by_verdict"] == {"bare_title": 1, "gold_data_dominated": 1, "infra_error": 1,
                                              "no_parent": 1}
    assert rewrites == [GOOD, "Fix clamp"]  # the data dump was rejected before any model saw its statement
    data = next(c for c in report["candidates"] if c["verdict"] == "gold_data_dominated")
    assert "calc/table.json 302" in data["reason"] and data["gate"]["passed"] is False
    bare = next(c for c in report["candidates"] if c["verdict"] == "bare_title")
    assert "2 word(s) (fewer than 6" in bare["reason"]
    summary = "\n".join(m.summary_lines(report))
    assert f"1 bare_title: {VERDICTS['bare_title']}" in summary and "1 gold_data_dominated" in summary

    [task] = validator.tasks  # the candidate that reached discovery carries every check, all passed
    gate = task.metadata["gate"]
    assert gate["passed"] is True and [c["name"] for c in gate["checks"]] == list(VERDICTS)


def test_a_rerun_checks_gate_rejections_again_with_the_new_thresholds(tmp_path, repo):
    strict = miner(tmp_path, repo, validator=RecordingValidator(), thresholds=Thresholds(max_gold_bytes=100))
    commits = strict.history.commits("main", None, None)[:1]
    first = m.mine(strict.pack.root, strict.history, commits, strict, log=lambda line: None)
    assert first["candidates"][0]["verdict"] == "gold_too_large"
    assert "the cap is 100" in first["candidates"][0]["reason"]
    validator = RecordingValidator()
    relaxed = miner(tmp_path, repo, validator=validator)
    again = m.mine(relaxed.pack.root, relaxed.history, commits, relaxed, log=lambda line: None)
    assert again["candidates"][0]["verdict"] == "infra_error" and len(validator.tasks) == 1


def test_swebench_import_reports_gate_failures_and_keeps_every_task(tmp_path):
    if not LITE.is_file():
        pytest.skip(f"SWE-bench Lite records not found at {LITE}")
    records = json.loads(LITE.read_text())[:2]
    records[1] = {**records[1], "problem_statement": "Version 3.1.4"}
    source = tmp_path / "two.json"
    source.write_text(json.dumps(records))
    report = import_swebench(str(source), tmp_path / "pack").to_json()
    assert list(report["gate"]["failed"]) == [records[1]["instance_id"]]
    assert report["gate"]["by_check"] == {"bare_title": 1, "changelog": 1}
    assert len((tmp_path / "pack" / "tasks.jsonl").read_text().splitlines()) == 2
    done = run_cli("packs", "import", "swebench", str(source), "--out", "cli", "--max-gold-bytes", "10", cwd=tmp_path)
    assert "quality gate: 2 task(s) fail a check (imported all the same" in done.stdout
    assert "2 gold_too_large" in done.stdout


def test_add_task_refuses_a_bare_title_unless_accepted_and_records_the_gate(tmp_path, repo):
    fix = git(repo, "log", "--format=%H", "-1", "--grep", "^Fix clamp$")
    base = git(repo, "rev-parse", f"{fix}^")
    run_cli("packs", "new", "--repo", str(repo), "--out", "pack", cwd=tmp_path)
    (tmp_path / "bare.md").write_text("Fix clamp\n")
    args = ("packs", "add-task", "pack", "--base", base, "--statement", "bare.md", "--tests", "tests/test_calc.py",
            "--gold", fix, "--fail-to-pass", "tests/test_calc.py::test_upper")
    refused = run_cli(*args, cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "the quality gate rejects the task (bare_title" in refused.stderr
    assert "quality gate: bare_title: 2 word(s)" in refused.stderr
    assert (tmp_path / "pack" / "tasks.jsonl").read_text() == ""
    run_cli(*args, "--accept-gate", "--id", "accepted", cwd=tmp_path)
    (tmp_path / "good.md").write_text(GOOD)
    run_cli(*args[:6], "good.md", *args[7:], "--id", "good", cwd=tmp_path)
    tasks = {t["instance_id"]: t for t in map(json.loads, (tmp_path / "pack" / "tasks.jsonl").read_text().splitlines())}
    accepted, good = tasks["accepted"]["metadata"]["gate"], tasks["good"]["metadata"]["gate"]
    assert (accepted["passed"], accepted["accepted"]) == (False, True)
    assert [c["name"] for c in accepted["checks"] if not c["passed"]] == ["bare_title"]
    assert (good["passed"], good["accepted"]) == (True, False) and len(good["checks"]) == len(VERDICTS)


def _merge_of(repo: Path, branch: str, messages: list[str], files: list[dict[str, str]]) -> None:
    """A side branch of one commit per message, merged with a message that says nothing (`Merge branch 'x'`)."""
    git(repo, "checkout", "-q", "-b", branch)
    for message, change in zip(messages, files):
        commit(repo, message, change)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", f"Merge branch '{branch}'", branch)


def test_mining_rejects_a_squashed_branch_of_three_messages_and_keeps_two(tmp_path):
    repo = tmp_path / "calc"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "root", {"calc/__init__.py": LIB, "tests/test_calc.py": TEST})
    steps = ["Make clamp() return the upper bound of the closed interval it is given",
             "Fix the failing test of clamp() after the interval change", "Apply review comments to clamp()"]
    _merge_of(repo, "three", steps, [{"calc/__init__.py": FIXED}, {"tests/test_calc.py": UPPER},
                                     {"calc/__init__.py": FIXED + "\n# closed\n"}])
    _merge_of(repo, "two", steps[:2], [{"calc/__init__.py": FIXED + "\n# closed, both ends\n"},
                                       {"tests/test_calc.py": UPPER + "\n# both\n"}])
    validator = RecordingValidator()
    mined = miner(tmp_path, repo, validator=validator)
    report = m.mine(mined.pack.root, mined.history, mined.history.commits("main", None, None), mined,
                    log=lambda line: None)
    by_subject = {c["subject"]: c for c in report["candidates"]}
    three = by_subject["Merge branch 'three'"]
    assert (three["verdict"], three["squashed_messages"]) == ("squashed_branch", 3), three
    assert "made of 3 commit messages" in three["reason"]
    two = by_subject["Merge branch 'two'"]
    assert two["verdict"] != "squashed_branch" and two["squashed_messages"] == 2
    [task] = validator.tasks  # the two-message merge reached discovery with its count recorded
    assert task.metadata["squashed_messages"] == 2 and task.metadata["statement_source"] == "merged commits"
